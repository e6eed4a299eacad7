// Forward pass driver: embedding lookup, per-layer executor calls with cancel checks, LM head.
#include "engine/transformer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>

namespace anelm::engine {

namespace {

// [begin, end) address ranges of this process's file-backed mappings (inode != 0), read once.
std::vector<std::pair<uintptr_t, uintptr_t>> file_mappings() {
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream ls(line);
    std::string range, perms, offset, dev;
    uint64_t inode = 0;
    ls >> range >> perms >> offset >> dev >> inode;
    const size_t dash = range.find('-');
    if (inode == 0 || dash == std::string::npos) continue;
    out.emplace_back(std::stoull(range.substr(0, dash), nullptr, 16), std::stoull(range.substr(dash + 1), nullptr, 16));
  }
  return out;
}

std::vector<TensorView*> matrices(ModelWeights& w) {
  std::vector<TensorView*> v = {&w.tok_embd, &w.lm_head};
  for (LayerWeights& l : w.layers) {
    for (TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) v.push_back(t);
  }
  return v;
}

}  // namespace

ResidentWeights::ResidentWeights(const ModelWeights& src, ThreadPool& pool) : w_(src) {
  if (const char* e = std::getenv("ANELM_MMAP_WEIGHTS"); e && std::strcmp(e, "1") == 0) return;
  const auto maps = file_mappings();
  auto in_file = [&](const void* p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (const auto& [b, e] : maps) {
      if (a >= b && a < e) return true;
    }
    return false;
  };
  // Distinct file-backed tensors (tied embeddings share one), 64-byte aligned in the buffer.
  std::unordered_map<const void*, size_t> offset;
  size_t total = 0;
  for (TensorView* t : matrices(w_)) {
    if (t->empty() || t->nbytes <= 0 || offset.count(t->data) || !in_file(t->data)) continue;
    offset[t->data] = total;
    total += (static_cast<size_t>(t->nbytes) + 63) / 64 * 64;
  }
  if (total == 0) return;
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t bytes = (total + kHuge - 1) / kHuge * kHuge;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;  // keep reading the mapping: slower, still correct
  madvise(p, bytes, MADV_HUGEPAGE);
  buf_ = p;
  buf_bytes_ = bytes;
  const long page = sysconf(_SC_PAGESIZE);
  for (const auto& [data, off] : offset) {
    size_t n = 0;
    for (TensorView* t : matrices(w_)) {
      if (t->data == data) n = static_cast<size_t>(t->nbytes);
    }
    // Both threads copy (page-cache reads and huge-page clears are per-core bound), in 2 MiB pieces.
    const auto* from = static_cast<const uint8_t*>(data);
    uint8_t* to = static_cast<uint8_t*>(buf_) + off;
    constexpr int64_t kPiece = int64_t{2} << 20;
    pool.parallel_for((static_cast<int64_t>(n) + kPiece - 1) / kPiece, [&](int64_t b, int64_t e, int) {
      const size_t lo_b = static_cast<size_t>(b * kPiece);
      const size_t hi_b = std::min(n, static_cast<size_t>(e * kPiece));
#ifdef MADV_POPULATE_READ
      // One syscall maps the source range instead of a fault per 16 pages.
      const auto pa = reinterpret_cast<uintptr_t>(from + lo_b) / 4096 * 4096;
      madvise(reinterpret_cast<void*>(pa), reinterpret_cast<uintptr_t>(from + hi_b) - pa, MADV_POPULATE_READ);
#endif
      std::memcpy(to + lo_b, from + lo_b, hi_b - lo_b);
      // Drop this piece's source pages at once, so peak RSS never holds a whole tensor twice (the
      // 136 M-element embedding would add ~136 MB at Q8_0).
      const uintptr_t plo = (reinterpret_cast<uintptr_t>(from + lo_b) + 4095) / 4096 * 4096;
      const uintptr_t phi = reinterpret_cast<uintptr_t>(from + hi_b) / 4096 * 4096;
      if (phi > plo) madvise(reinterpret_cast<void*>(plo), phi - plo, MADV_DONTNEED);
    }, 1, 4);
    // Give the copied file pages back (content unchanged: they re-fault from the file if the ANE
    // path or a re-load reads them), so RSS holds one copy. Interior whole pages only.
    const auto a = reinterpret_cast<uintptr_t>(data);
    const uintptr_t lo = (a + page - 1) / page * page, hi = (a + n) / page * page;
    // MADV_DONTNEED only drops our PTEs of these read-only file pages (never modified, so nothing
    // is lost); the page cache keeps or reclaims them as it likes.
    if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  }
  for (TensorView* t : matrices(w_)) {
    if (auto it = offset.find(t->data); it != offset.end()) t->data = static_cast<uint8_t*>(buf_) + it->second;
  }
}

ResidentWeights::~ResidentWeights() {
  if (buf_) munmap(buf_, buf_bytes_);
}

Transformer::Transformer(const ModelConfig& cfg, const ModelWeights& weights, ThreadPool& pool,
                         const kernels::KernelTable& kernels, int64_t inline_macs)
    : cfg_(cfg), resident_(weights, pool), w_(resident_.weights()), pool_(pool), k_(kernels), inline_macs_(inline_macs),
      cpu_(cfg, resident_.weights(), pool, kernels, inline_macs),
      layers_(static_cast<size_t>(cfg.n_layers), &cpu_) {}

void Transformer::set_layer_executor(int layer, LayerExecutor* exec) {
  layers_[static_cast<size_t>(layer)] = exec ? exec : &cpu_;
}

// out [n][vocab] = lm_head . rmsnorm(x[t]) for the n rows of x.
void Transformer::logits(Activations& acts, const float* x, int n, float* out) {
  if (head_) {
    head_->logits(x, n, out);
    return;
  }
  const int d = cfg_.d_model;
  const auto* norm = static_cast<const float*>(w_.out_norm.data);
  for (int t = 0; t < n; ++t) k_.rmsnorm(x + t * d, norm, cfg_.rms_eps, d, acts.xb.data() + t * d);
  const LinearOut head[] = {{&w_.lm_head, out}};
  parallel_linear(pool_, k_, acts.xb.data(), n, d, head, acts.xq.data(), inline_macs_);
}

int Transformer::forward(std::span<const int> tokens, int pos, KvCache& kv, Activations& acts,
                         float* all_logits, const std::atomic<bool>* cancel) {
  const int n_total = static_cast<int>(tokens.size());
  const int d = cfg_.d_model;
  auto cancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };
  for (int done = 0; done < n_total;) {
    const int n = n_total - done < acts.max_batch ? n_total - done : acts.max_batch;
    for (int t = 0; t < n; ++t) {
      k_.dequantize_row(w_.tok_embd.data, w_.tok_embd.dtype, tokens[static_cast<size_t>(done + t)], d,
                        acts.x.data() + static_cast<int64_t>(t) * d);
    }
    for (int l = 0; l < cfg_.n_layers; ++l) {
      if (cancelled()) return done;
      const LayerBatch batch{l, n, pos + done, acts.x.data(), &kv, &acts};
      layers_[static_cast<size_t>(l)]->run_layer(batch);
    }
    if (all_logits) {
      logits(acts, acts.x.data(), n, all_logits + static_cast<int64_t>(done) * cfg_.vocab_size);
    }
    done += n;
    if (done == n_total) {
      const float* last = acts.x.data() + static_cast<int64_t>(n - 1) * d;
      if (all_logits) {
        const float* src = all_logits + static_cast<int64_t>(n_total - 1) * cfg_.vocab_size;
        std::copy(src, src + cfg_.vocab_size, acts.logits.begin());
      } else {
        logits(acts, last, 1, acts.logits.data());
      }
    } else if (cancelled()) {
      return done;
    }
  }
  return n_total;
}

}  // namespace anelm::engine
