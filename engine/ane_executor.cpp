// ANE backend over ane_bridge (the only engine file that includes it): placement within the compile
// budget, program building from engine weights, the per-layer and LM-head executors, and export.
#include "engine/ane_executor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <span>

#include "ane_bridge/mil_blocks.h"
#include "ane_bridge/program.h"
#include "ane_bridge/program_export.h"
#include "ane_bridge/surface_layout.h"
#include "engine/activations.h"
#include "engine/ane_attention.h"
#include "engine/ane_calibrate.h"
#include "engine/ane_compile.h"
#include "engine/error.h"
#include "engine/quantize.h"
#include "engine/thread_pool.h"
#include "engine/transformer.h"

namespace anelm::engine {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// `what` is a C string so the per-token paths build no message unless something failed.
void check(const ane::Status& s, const char* what, const std::string& name = {}) {
  if (!s.ok()) throw Error(ErrorKind::kInternal, what + name + ": " + s.to_string());
}

// ======================================= placement ============================================

// Where every program goes. The same rules serve the backend, the plan and the export.
struct Placement {
  std::vector<std::int64_t> buckets;     // ascending; buckets[0] == 32
  int ane_layers = 0;                    // layers [0, ane_layers) on the ANE
  std::vector<ane::LmHeadChunk> chunks;  // empty: head on the CPU
  int total = 0;                         // cold-start compiles
  std::string cpu_note;                  // what stays on the CPU ("" when nothing)
};

std::vector<std::int64_t> checked_buckets(const std::vector<int>& in) {
  std::vector<std::int64_t> b(in.begin(), in.end());
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  for (std::int64_t s : b)
    if (s <= 0 || s % 32 != 0)
      throw Error(ErrorKind::kInvalidArgument,
                  "ANE seq bucket " + std::to_string(s) + " must be a positive multiple of 32");
  if (b.empty() || b[0] != ane::kDecodeSeqLen)
    throw Error(ErrorKind::kInvalidArgument, "ANE seq buckets must contain 32 (the decode bucket)");
  return b;
}

Placement place_programs(const ModelConfig& cfg, const AneBackendOptions& o, int budget) {
  Placement p;
  p.buckets = checked_buckets(o.seq_buckets);
  if (o.lm_head_on_ane) p.chunks = ane::plan_lm_head_chunks(cfg.vocab_size, o.max_lm_head_rows);
  const int n_layers = cfg.n_layers, head = static_cast<int>(p.chunks.size());
  auto need = [&](int layers, std::size_t nb) { return layers * 2 * static_cast<int>(nb) + head; };
  // Optional (prefill) buckets only while the whole model keeps `budget_reserve` compiles spare.
  while (p.buckets.size() > 1 && need(n_layers, p.buckets.size()) > budget - o.budget_reserve)
    p.buckets.pop_back();
  p.ane_layers = n_layers;
  if (need(n_layers, 1) > budget) {
    const std::string why = "the ANE plan for '" + cfg.name + "' needs " +
                            std::to_string(need(n_layers, 1)) + " compiles (" +
                            std::to_string(n_layers) + " layers x 2 programs + " +
                            std::to_string(head) +
                            " LM-head chunks) but the per-process budget "
                            "is " +
                            std::to_string(budget);
    if (!o.cpu_remainder)
      throw Error(ErrorKind::kResourceExhausted,
                  why +
                      "; HINT: enable cpu_remainder, keep the LM head on the CPU, or fill the "
                      "compile cache in an earlier process (cached programs cost no compile)");
    if (head > 0 && head + 2 > budget) p.chunks.clear();
    const int h = static_cast<int>(p.chunks.size());
    p.ane_layers = std::clamp((budget - h) / 2, 0, n_layers);
    if (p.ane_layers < n_layers)
      p.cpu_note = "layers " + std::to_string(p.ane_layers) + "-" + std::to_string(n_layers - 1);
    if (p.chunks.empty()) p.cpu_note += std::string(p.cpu_note.empty() ? "" : ", ") + "lm head";
    spdlog::warn("{}; running {} on the CPU", why, p.cpu_note);
  } else if (!o.lm_head_on_ane) {
    p.cpu_note = "lm head";
  }
  p.total =
      p.ane_layers * 2 * static_cast<int>(p.buckets.size()) + static_cast<int>(p.chunks.size());
  return p;
}

// ==================================== program building ========================================

// `rows` rows of a [rows][cols] weight from `row0`, any storage type, as f32.
std::vector<float> to_f32(const TensorView& t, std::int64_t row0 = 0, std::int64_t rows = -1) {
  if (t.empty()) return {};
  const std::int64_t cols = t.cols();
  if (rows < 0) rows = t.rows() - row0;
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  const auto* src =
      static_cast<const std::uint8_t*>(t.data) + row0 * dtype_row_bytes(t.dtype, cols);
  row_to_f32(t.dtype, src, out.data(), rows * cols);
  return out;
}

// One layer's weights dequantised once, shared by the programs of every S bucket.
struct LayerF32 {
  std::vector<float> attn_norm, wq, wk, wv, bq, bk, bv, wo, ffn_norm, wg, wu, wd;
  explicit LayerF32(const LayerWeights& L)
      : attn_norm(to_f32(L.attn_norm)),
        wq(to_f32(L.wq)),
        wk(to_f32(L.wk)),
        wv(to_f32(L.wv)),
        bq(to_f32(L.bq)),
        bk(to_f32(L.bk)),
        bv(to_f32(L.bv)),
        wo(to_f32(L.wo)),
        ffn_norm(to_f32(L.ffn_norm)),
        wg(to_f32(L.w_gate)),
        wu(to_f32(L.w_up)),
        wd(to_f32(L.w_down)) {}
};

ane::LayerShapes layer_shapes(const ModelConfig& c) {
  return {c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.d_ff, c.rms_eps};
}

ane::BlockOptions block_opts(const std::string& kind, int index, std::int64_t seq, bool int8,
                             double prescale) {
  ane::BlockOptions o;
  o.rms_prescale = prescale;
  o.seq_len = seq;
  o.format = int8 ? ane::WeightFormat::kInt8 : ane::WeightFormat::kFp16;
  o.name = ane::block_name(kind, index, seq);
  return o;
}

// Program A (ffn == false) or B of `layer` for bucket `seq`.
ane::BlockProgram build_layer_block(const ModelConfig& cfg, const LayerF32& w, int layer, bool ffn,
                                    std::int64_t seq, bool int8, const AnePrescales& ps) {
  ane::BlockProgram b;
  const double p = (ffn ? ps.ffn : ps.attn)[static_cast<std::size_t>(layer)];
  const ane::BlockOptions o = block_opts(ffn ? "ffn" : "attn_in", layer, seq, int8, p);
  if (!ffn) {
    const ane::AttnInputWeights aw{w.attn_norm, {w.wq, w.bq}, {w.wk, w.bk}, {w.wv, w.bv}};
    check(ane::build_attn_input_block(layer_shapes(cfg), aw, o, &b), "building ", o.name);
  } else {
    const ane::FfnBlockWeights fw{{w.wo, {}}, w.ffn_norm, {w.wg, {}}, {w.wu, {}}, {w.wd, {}}};
    check(ane::build_ffn_block(layer_shapes(cfg), fw, o, &b), "building ", o.name);
  }
  b.layer = layer;
  return b;
}

// LM-head chunk `index` at S = 32 with the final norm fused. Only the chunk's rows are dequantised
// (the full f32 head of a 151,936-token vocabulary would be 544 MB): the builder sees a vocabulary
// of chunk.rows, and the output segment is renamed to the real row range afterwards.
ane::BlockProgram build_head_block(const ModelConfig& cfg, const ModelWeights& w,
                                   const std::vector<float>& out_norm, const ane::LmHeadChunk& c,
                                   int index, bool int8, double prescale) {
  const std::vector<float> rows = to_f32(w.lm_head, c.row_begin, c.rows);
  ane::BlockProgram b;
  const ane::BlockOptions o = block_opts("lm_head", index, ane::kDecodeSeqLen, int8, prescale);
  check(ane::build_lm_head_chunk(layer_shapes(cfg), rows, c.rows, {0, c.rows}, out_norm, o, &b),
        "building ", o.name);
  b.outputs[0].segments[0].name =
      "logits[" + std::to_string(c.row_begin) + ":" + std::to_string(c.row_begin + c.rows) + "]";
  return b;
}

// ======================================= execution ============================================

struct Surface {
  ane::SurfaceLayout layout;
  std::vector<std::uint8_t> bytes;
  explicit Surface(ane::SurfaceLayout l)
      : layout(l), bytes(static_cast<std::size_t>(l.alloc_bytes())) {}
};

// The four surfaces of one S bucket, shared by every layer (programs run one at a time).
struct BucketIo {
  std::int64_t seq;
  Surface a_in, a_out, b_in, b_out;  // [D,S] -> [Qd+2KVd,S]; [Qd+D,S] -> [D,S]
  BucketIo(const ModelConfig& c, std::int64_t s)
      : seq(s),
        a_in(ane::SurfaceLayout::channel_major(c.d_model, s)),
        a_out(ane::SurfaceLayout::channel_major(c.q_dim() + 2 * c.kv_dim(), s)),
        b_in(ane::SurfaceLayout::channel_major(c.q_dim() + c.d_model, s)),
        b_out(ane::SurfaceLayout::channel_major(c.d_model, s)) {}
};

void evaluate(ane::Program& p, const Surface& in, Surface& out) {
  const std::span<const std::uint8_t> ins[1] = {in.bytes};
  const std::span<std::uint8_t> outs[1] = {out.bytes};
  const ane::Status s = p.evaluate(ins, outs);
  if (!s.ok()) check(s, "evaluating ANE program ", p.name());
}

// Token-major rows [m][ch] <-> channels [off, off + ch) of lanes [0, m).
void pack(const float* rows, int m, std::int64_t off, std::int64_t ch, Surface& s) {
  const std::span<const float> src(rows, static_cast<std::size_t>(m * ch));
  check(ane::pack_tokens(src, m, s.layout, s.bytes, off, ch), "packing an ANE input");
}
void unpack(const Surface& s, int m, std::int64_t off, std::int64_t ch, float* rows) {
  const std::span<float> dst(rows, static_cast<std::size_t>(m * ch));
  check(ane::unpack_tokens(s.bytes, s.layout, m, dst, off, ch), "unpacking an ANE output");
}

// State shared by the layer executors: config, CPU kernels for the attention core, surfaces.
struct AneShared {
  const ModelConfig& cfg;
  const kernels::KernelTable& k;
  ThreadPool& pool;
  std::vector<BucketIo> io;  // ascending S

  // The smallest bucket holding `remaining` tokens, else the largest (then more chunks follow).
  std::size_t bucket_for(int remaining) const {
    for (std::size_t i = 0; i < io.size(); ++i)
      if (io[i].seq >= remaining) return i;
    return io.size() - 1;
  }
};

// One decoder layer: A on the ANE, attention on the CPU, B on the ANE; chunked over S buckets.
class AneLayer final : public LayerExecutor {
 public:
  AneLayer(AneShared& s, int layer) : s_(s), layer_(layer) {}
  const char* name() const override { return "ane"; }

  void add(std::unique_ptr<ane::Program> a, std::unique_ptr<ane::Program> b) {
    attn_.push_back(std::move(a));
    ffn_.push_back(std::move(b));
  }

  void run_layer(const LayerBatch& b) override {
    if (b.layer != layer_)  // the programs bake this layer's weights
      throw Error(ErrorKind::kInternal, "ANE executor of layer " + std::to_string(layer_) +
                                            " called for layer " + std::to_string(b.layer));
    Activations& a = *b.acts;
    const ModelConfig& c = s_.cfg;
    const std::int64_t d = c.d_model, qd = c.q_dim(), kvd = c.kv_dim();
    for (int t0 = 0; t0 < b.n;) {  // A: x rows -> q, k, v rows
      const std::size_t bi = s_.bucket_for(b.n - t0);
      BucketIo& io = s_.io[bi];
      const int m = static_cast<int>(std::min<std::int64_t>(io.seq, b.n - t0));
      pack(b.x + t0 * d, m, 0, d, io.a_in);
      evaluate(*attn_[bi], io.a_in, io.a_out);
      unpack(io.a_out, m, 0, qd, a.q.data() + t0 * qd);
      unpack(io.a_out, m, qd, kvd, a.k.data() + t0 * kvd);
      unpack(io.a_out, m, qd + kvd, kvd, a.v.data() + t0 * kvd);
      t0 += m;
    }
    ane_attention_core(c, s_.k, s_.pool, b);
    for (int t0 = 0; t0 < b.n;) {  // B: (attention rows, residual rows) -> next residual rows
      const std::size_t bi = s_.bucket_for(b.n - t0);
      BucketIo& io = s_.io[bi];
      const int m = static_cast<int>(std::min<std::int64_t>(io.seq, b.n - t0));
      pack(a.att.data() + t0 * qd, m, 0, qd, io.b_in);
      pack(b.x + t0 * d, m, qd, d, io.b_in);
      evaluate(*ffn_[bi], io.b_in, io.b_out);
      unpack(io.b_out, m, 0, d, b.x + t0 * d);
      t0 += m;
    }
  }

 private:
  AneShared& s_;
  int layer_;
  std::vector<std::unique_ptr<ane::Program>> attn_, ffn_;  // [bucket]
};

// Final norm + LM head as vocabulary chunks at S = 32: up to 32 rows per pass, one shared input.
class AneHead final : public HeadExecutor {
 public:
  AneHead(const ModelConfig& c, std::vector<ane::LmHeadChunk> chunks)
      : cfg_(c),
        chunks_(std::move(chunks)),
        in_(ane::SurfaceLayout::channel_major(c.d_model, ane::kDecodeSeqLen)),
        out_(ane::SurfaceLayout::channel_major(max_rows(), ane::kDecodeSeqLen)),
        scratch_(static_cast<std::size_t>(ane::kDecodeSeqLen * max_rows())) {}

  void add(std::unique_ptr<ane::Program> p) { programs_.push_back(std::move(p)); }

  void logits(const float* x, int n, float* out) override {
    const std::int64_t d = cfg_.d_model, vocab = cfg_.vocab_size;
    for (int t0 = 0; t0 < n;) {
      const int m = static_cast<int>(std::min<std::int64_t>(ane::kDecodeSeqLen, n - t0));
      pack(x + t0 * d, m, 0, d, in_);
      for (std::size_t i = 0; i < chunks_.size(); ++i) {
        const ane::LmHeadChunk& c = chunks_[i];
        // Each chunk has its own row count: view the shared output surface with its layout.
        out_.layout = ane::SurfaceLayout::channel_major(c.rows, ane::kDecodeSeqLen);
        evaluate(*programs_[i], in_, out_);
        unpack(out_, m, 0, c.rows, scratch_.data());
        for (int t = 0; t < m; ++t)
          std::copy_n(scratch_.data() + t * c.rows, c.rows, out + (t0 + t) * vocab + c.row_begin);
      }
      t0 += m;
    }
  }

 private:
  std::int64_t max_rows() const {
    std::int64_t r = 0;
    for (const auto& c : chunks_) r = std::max(r, c.rows);
    return r;
  }

  const ModelConfig& cfg_;
  std::vector<ane::LmHeadChunk> chunks_;
  Surface in_, out_;
  std::vector<float> scratch_;  // [32][max chunk rows]
  std::vector<std::unique_ptr<ane::Program>> programs_;
};

// ======================================== backend =============================================

ane::RuntimeOptions runtime_options(const AneBackendOptions& o) {
  ane::RuntimeOptions ro;
  ro.backend = o.simulator ? ane::Backend::kSimulator : ane::Backend::kAuto;
  ro.cache_dir = o.cache_dir;
  ro.compile_budget = o.compile_budget;
  ro.sim.compile_budget = o.compile_budget;
  return ro;
}

class AneBackendImpl final : public AneBackend {
 public:
  AneBackendImpl(const ModelConfig& cfg, const ModelWeights& w, Transformer& tf, ThreadPool& pool,
                 const AneBackendOptions& o)
      : cfg_(cfg), w_(w), tf_(tf), opts_(o), shared_{cfg, tf.kernels(), pool, {}} {
    std::string why;
    check(ane::make_runtime(runtime_options(o), &rt_, &why), "starting the ANE runtime");
    const bool sim = rt_->kind() != "ane";
    stats_.why_not_ane = sim ? why : "";
    if (sim && !o.simulator) spdlog::info("ANE runtime unavailable ({}); using the simulator", why);
    const Placement p = place_programs(cfg, o, o.compile_budget - rt_->stats().compiles);
    const auto tc = Clock::now();
    ps_ = o.rms_prescale > 0 ? fixed_ane_prescales(cfg, o.rms_prescale)
                             : calibrate_ane_prescales(cfg, w, pool, tf.kernels());
    stats_.build_ms += ms_since(tc);
    for (std::int64_t s : p.buckets) shared_.io.emplace_back(cfg, s);
    const int total = p.total;
    int done = 0;
    auto progress = [&] {
      if (opts_.progress) opts_.progress(++done, total);
    };
    int ane_layers = 0;
    for (; ane_layers < p.ane_layers; ++ane_layers)
      if (!compile_layer(ane_layers, p.buckets, progress)) break;
    if (!p.chunks.empty()) compile_head(p.chunks, progress);
    for (int l = 0; l < ane_layers; ++l) tf_.set_layer_executor(l, layers_[l].get());
    if (head_) tf_.set_head_executor(head_.get());
    fill_stats(p, ane_layers, sim);
    spdlog::info(
        "ANE backend ({}): {} programs ({} compiled, {} from cache, budget {}), {} per "
        "decode token, S buckets {}, {} weights, norm prescale {}..{}, build {:.0f} ms, "
        "compile {:.0f} ms",
        stats_.backend, stats_.programs, stats_.compiles, stats_.cache_hits, stats_.compile_budget,
        stats_.programs_per_decode_token, fmt_buckets(stats_.seq_buckets), stats_.weight_format,
        stats_.prescale_min, stats_.prescale_max, stats_.build_ms, stats_.compile_ms);
  }

  ~AneBackendImpl() override {
    for (int l = 0; l < static_cast<int>(layers_.size()); ++l) tf_.set_layer_executor(l, nullptr);
    if (head_) tf_.set_head_executor(nullptr);
  }

  const AneBackendStats& stats() const override { return stats_; }

 private:
  static std::string fmt_buckets(const std::vector<int>& b) {
    std::string s;
    for (int v : b) s += (s.empty() ? "" : ",") + std::to_string(v);
    return s;
  }

  // Compiles (or loads from the cache) one program; false when the runtime refused it.
  std::unique_ptr<ane::Program> compile(const ane::BlockProgram& b) {
    const auto t0 = Clock::now();
    std::unique_ptr<ane::Program> prog;
    const ane::Status s = rt_->compile(b.source, &prog);
    stats_.compile_ms += ms_since(t0);
    if (!s.ok()) {
      if (!opts_.cpu_remainder)
        throw Error(s.code() == ane::StatusCode::kBudgetExhausted ? ErrorKind::kResourceExhausted
                                                                  : ErrorKind::kInternal,
                    "compiling ANE program " + b.source.name + ": " + s.to_string());
      spdlog::warn("compiling ANE program {} failed ({}); falling back to the CPU", b.source.name,
                   s.to_string());
      return nullptr;
    }
    stats_.weight_bytes += static_cast<std::int64_t>(b.weight_bytes);
    return prog;
  }

  template <class Progress>
  bool compile_layer(int l, const std::vector<std::int64_t>& buckets, Progress& progress) {
    auto t0 = Clock::now();
    const LayerF32 lw(w_.layers[static_cast<std::size_t>(l)]);
    auto layer = std::make_unique<AneLayer>(shared_, l);
    for (std::int64_t s : buckets) {
      const ane::BlockProgram a = build_layer_block(cfg_, lw, l, false, s, opts_.int8_weights, ps_);
      const ane::BlockProgram b = build_layer_block(cfg_, lw, l, true, s, opts_.int8_weights, ps_);
      stats_.build_ms += ms_since(t0);
      auto pa = compile(a);
      if (!pa) return false;
      progress();
      auto pb = compile(b);
      if (!pb) return false;
      progress();
      layer->add(std::move(pa), std::move(pb));
      t0 = Clock::now();
    }
    layers_.push_back(std::move(layer));
    return true;
  }

  template <class Progress>
  void compile_head(const std::vector<ane::LmHeadChunk>& chunks, Progress& progress) {
    const std::vector<float> norm = to_f32(w_.out_norm);
    auto head = std::make_unique<AneHead>(cfg_, chunks);
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const auto t0 = Clock::now();
      const ane::BlockProgram b = build_head_block(cfg_, w_, norm, chunks[i], static_cast<int>(i),
                                                   opts_.int8_weights, ps_.head);
      stats_.build_ms += ms_since(t0);
      auto p = compile(b);
      if (!p) return;  // the whole head stays on the CPU
      progress();
      head->add(std::move(p));
    }
    head_ = std::move(head);
  }

  void fill_stats(const Placement& p, int ane_layers, bool sim) {
    const ane::RuntimeStats rs = rt_->stats();
    AneBackendStats& s = stats_;
    s.weight_format = opts_.int8_weights ? "int8" : "fp16";
    for (std::int64_t b : p.buckets) s.seq_buckets.push_back(static_cast<int>(b));
    s.ane_layers = ane_layers;
    s.lm_head_on_ane = head_ != nullptr;
    s.lm_head_chunks = head_ ? static_cast<int>(p.chunks.size()) : 0;
    s.programs = ane_layers * 2 * static_cast<int>(p.buckets.size()) + s.lm_head_chunks;
    s.compiles = rs.compiles;
    s.cache_hits = rs.cache_hits;
    s.compile_budget = rs.compile_budget;
    s.programs_per_decode_token = ane_layers * 2 + s.lm_head_chunks;
    s.backend = sim ? "ane (simulator)" : "ane";
    s.prescale_min = s.prescale_max = ps_.head;
    for (int l = 0; l < ane_layers; ++l)
      for (double v :
           {ps_.attn[static_cast<std::size_t>(l)], ps_.ffn[static_cast<std::size_t>(l)]}) {
        s.prescale_min = std::min(s.prescale_min, v);
        s.prescale_max = std::max(s.prescale_max, v);
      }
    std::string cpu;
    if (ane_layers < cfg_.n_layers)
      cpu = "layers " + std::to_string(ane_layers) + "-" + std::to_string(cfg_.n_layers - 1);
    if (!head_) cpu += std::string(cpu.empty() ? "" : ", ") + "lm head";
    if (!cpu.empty()) s.backend += " + cpu (" + cpu + ")";
  }

  const ModelConfig& cfg_;
  const ModelWeights& w_;
  Transformer& tf_;
  AneBackendOptions opts_;
  AneShared shared_;
  AnePrescales ps_;
  std::unique_ptr<ane::Runtime> rt_;  // declared before the programs: outlives them
  std::vector<std::unique_ptr<AneLayer>> layers_;
  std::unique_ptr<AneHead> head_;
  AneBackendStats stats_;
};

}  // namespace

std::unique_ptr<AneBackend> make_ane_backend(const ModelConfig& cfg, const ModelWeights& weights,
                                             Transformer& tf, ThreadPool& pool,
                                             const AneBackendOptions& opts) {
  return std::make_unique<AneBackendImpl>(cfg, weights, tf, pool, opts);
}

// ===================================== plan and export ========================================

namespace {

// Bytes of one MILBlob file holding `payload` bytes: 64-byte header + 64-byte record + payload
// padded to 64 (weight_blob.h).
std::int64_t blob_file_bytes(std::int64_t payload) { return 128 + (payload + 63) / 64 * 64; }

// Weight files of a [rows][cols] matrix: fp16 payload, or int8 payload + fp16 scale file.
std::int64_t matrix_bytes(std::int64_t rows, std::int64_t cols, bool int8) {
  return int8 ? blob_file_bytes(rows * cols) + blob_file_bytes(2 * rows)
              : blob_file_bytes(2 * rows * cols);
}

std::int64_t estimate_weight_bytes(const ModelConfig& c, const Placement& p, bool int8) {
  const std::int64_t d = c.d_model, qkv = c.q_dim() + 2 * c.kv_dim(), f = c.d_ff;
  std::int64_t a = matrix_bytes(qkv, d, int8) + (c.qkv_bias ? blob_file_bytes(2 * qkv) : 0);
  std::int64_t b =
      matrix_bytes(d, c.q_dim(), int8) + 2 * matrix_bytes(f, d, int8) + matrix_bytes(d, f, int8);
  std::int64_t total = (a + b) * p.ane_layers * static_cast<std::int64_t>(p.buckets.size());
  for (const auto& ch : p.chunks) total += matrix_bytes(ch.rows, d, int8);
  return total;
}

AneCompileSummary summarize(const ModelConfig& cfg, const AneBackendOptions& o,
                            const Placement& p) {
  AneCompileSummary s;
  s.model_name = cfg.name;
  s.weight_format = o.int8_weights ? "int8" : "fp16";
  for (std::int64_t b : p.buckets) s.seq_buckets.push_back(static_cast<int>(b));
  s.n_layers = cfg.n_layers;
  s.ane_layers = p.ane_layers;
  s.lm_head_chunks = static_cast<int>(p.chunks.size());
  s.programs_per_decode_token = 2 * p.ane_layers + s.lm_head_chunks;
  s.total_programs = p.total;
  s.compile_budget = o.compile_budget;
  s.fits_budget = p.ane_layers == cfg.n_layers && (!o.lm_head_on_ane || !p.chunks.empty()) &&
                  p.total <= o.compile_budget;
  s.total_weight_bytes = estimate_weight_bytes(cfg, p, o.int8_weights);
  return s;
}

void write_block(const std::filesystem::path& dir, const ane::BlockProgram& b,
                 std::vector<ane::ManifestEntry>* entries, AneCompileSummary* s) {
  check(ane::write_program_dir(dir, b.source), "writing ", b.source.name);
  entries->push_back(ane::manifest_entry(b));
  s->program_names.push_back(b.source.name);
  s->total_weight_bytes += static_cast<std::int64_t>(b.weight_bytes);
}

}  // namespace

AneCompileSummary plan_ane_programs(const ModelConfig& cfg, const AneBackendOptions& opts) {
  return summarize(cfg, opts, place_programs(cfg, opts, opts.compile_budget));
}

AneCompileSummary export_ane_programs(const ModelConfig& cfg, const ModelWeights& weights,
                                      const std::string& out_dir, const AneBackendOptions& opts) {
  const auto t0 = Clock::now();
  const Placement p = place_programs(cfg, opts, opts.compile_budget);
  AneCompileSummary s = summarize(cfg, opts, p);
  s.out_dir = out_dir;
  s.total_weight_bytes = 0;
  s.weight_bytes_exact = true;
  const std::filesystem::path dir(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot create " + out_dir + ": " + ec.message());
  // Streamed: one program in memory at a time (ane_bridge's write_programs wants them all at
  // once, ~1 GB for Qwen2.5-0.5B); same directory layout and manifest.
  std::vector<ane::ManifestEntry> entries;
  AnePrescales ps;
  if (opts.rms_prescale > 0) {
    ps = fixed_ane_prescales(cfg, opts.rms_prescale);
  } else {  // the same calibration as the backend, so the programs are identical
    ThreadPool pool(1);
    ps = calibrate_ane_prescales(cfg, weights, pool, kernels::active_kernels());
  }
  for (int l = 0; l < p.ane_layers; ++l) {
    const LayerF32 lw(weights.layers[static_cast<std::size_t>(l)]);
    for (std::int64_t sq : p.buckets)
      for (bool ffn : {false, true})
        write_block(dir, build_layer_block(cfg, lw, l, ffn, sq, opts.int8_weights, ps), &entries,
                    &s);
  }
  const std::vector<float> norm = to_f32(weights.out_norm);
  for (std::size_t i = 0; i < p.chunks.size(); ++i)
    write_block(dir,
                build_head_block(cfg, weights, norm, p.chunks[i], static_cast<int>(i),
                                 opts.int8_weights, ps.head),
                &entries, &s);
  check(ane::write_manifest(dir, entries, cfg.name), "writing manifest.json");
  s.build_ms = ms_since(t0);
  return s;
}

}  // namespace anelm::engine
