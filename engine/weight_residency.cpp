// make_resident: file-mapped weight tensors copied once into anonymous huge-page memory.
#include "engine/weight_residency.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
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

// Every tensor, the small ones too: norms and biases sit between the matrices in the file, and a
// read of one maps the page-cache folio around it (2 MiB on this VM's kernel), so leaving them in
// the mapping kept ~92 MB of Qwen2.5-0.5B Q4_K_M's file resident (one folio per norm per layer).
std::vector<TensorView*> tensors(ModelWeights& w) {
  std::vector<TensorView*> v = {&w.tok_embd, &w.out_norm, &w.lm_head, &w.out_norm_b, &w.pos_embd,
                                &w.cls_out,  &w.cls_out_b};
  for (LayerWeights& l : w.layers) {
    for (TensorView* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm, &l.wo,
                          &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down, &l.attn_norm_b, &l.bo, &l.ffn_norm_b,
                          &l.b_up, &l.b_down}) {
      v.push_back(t);
    }
  }
  return v;
}

}  // namespace

ResidentCopy::ResidentCopy(LoadedModel& m) : m_(m) {
  if (const char* e = std::getenv("ANELM_MMAP_WEIGHTS"); e && std::strcmp(e, "1") == 0) {
    done_ = true;
    return;
  }
  const auto maps = file_mappings();
  auto in_file = [&](const void* p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (const auto& [b, e] : maps) {
      if (a >= b && a < e) return true;
    }
    return false;
  };
  // Distinct file-backed tensors (tied embeddings share one), 64-byte aligned in the buffer.
  size_t total = 0;
  for (TensorView* t : tensors(m.weights)) {
    if (t->empty() || t->nbytes <= 0 || !in_file(t->data)) continue;
    if (std::any_of(pieces_.begin(), pieces_.end(), [&](const Piece& p) { return p.from == t->data; })) continue;
    pieces_.push_back({t->data, total, static_cast<size_t>(t->nbytes)});
    total += (static_cast<size_t>(t->nbytes) + 63) / 64 * 64;
  }
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t bytes = (total + kHuge - 1) / kHuge * kHuge;
  void* p = total ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
  if (p == MAP_FAILED) {  // nothing to copy, or keep reading the mapping: slower, still correct
    pieces_.clear();
    done_ = true;
    return;
  }
  madvise(p, bytes, MADV_HUGEPAGE);
  m.owners.emplace_back(p, [bytes](void* q) { munmap(q, bytes); });
  buffer_ = p;
}

void ResidentCopy::copy(ThreadPool* pool) {
  constexpr int64_t kChunk = int64_t{2} << 20;
  for (const Piece& piece : pieces_) {
    const auto* from = static_cast<const uint8_t*>(piece.from);
    uint8_t* to = static_cast<uint8_t*>(buffer_) + piece.offset;
    const size_t n = piece.bytes;
    // In 2 MiB chunks, on every pool thread (page-cache reads and huge-page clears are per-core bound).
    auto chunks = [&](int64_t b, int64_t e, int) {
      const size_t lo_b = static_cast<size_t>(b * kChunk);
      const size_t hi_b = std::min(n, static_cast<size_t>(e * kChunk));
#ifdef MADV_POPULATE_READ
      // One syscall maps the source range instead of a fault per 16 pages.
      const auto pa = reinterpret_cast<uintptr_t>(from + lo_b) / 4096 * 4096;
      madvise(reinterpret_cast<void*>(pa), reinterpret_cast<uintptr_t>(from + hi_b) - pa, MADV_POPULATE_READ);
#endif
      std::memcpy(to + lo_b, from + lo_b, hi_b - lo_b);
      // Drop this chunk's source pages at once, so peak RSS never holds a whole tensor twice (the
      // 136 M-element embedding would add ~136 MB at Q8_0). MADV_DONTNEED only drops our PTEs of these
      // read-only file pages: a forward pass still reading the mapping re-faults them from the file.
      const uintptr_t plo = (reinterpret_cast<uintptr_t>(from + lo_b) + 4095) / 4096 * 4096;
      const uintptr_t phi = reinterpret_cast<uintptr_t>(from + hi_b) / 4096 * 4096;
      if (phi > plo) madvise(reinterpret_cast<void*>(plo), phi - plo, MADV_DONTNEED);
    };
    const int64_t count = (static_cast<int64_t>(n) + kChunk - 1) / kChunk;
    if (pool) {
      pool->parallel_for(count, chunks, 1, 4);
    } else {
      chunks(0, count, 0);
    }
  }
  done_.store(true, std::memory_order_release);
}

void ResidentCopy::adopt() {
  if (!buffer_) return;
  const long page = sysconf(_SC_PAGESIZE);
  for (const Piece& piece : pieces_) {
    for (TensorView* t : tensors(m_.weights)) {
      if (t->data == piece.from) t->data = static_cast<uint8_t*>(buffer_) + piece.offset;
    }
    // Give the file pages that forward passes re-faulted back; interior whole pages only.
    const auto a = reinterpret_cast<uintptr_t>(piece.from);
    const uintptr_t lo = (a + page - 1) / page * page, hi = (a + piece.bytes) / page * page;
    if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  }
  buffer_ = nullptr;
}

void make_resident(LoadedModel& m, ThreadPool& pool) {
  ResidentCopy c(m);
  c.copy(&pool);
  c.adopt();
}

}  // namespace anelm::engine
