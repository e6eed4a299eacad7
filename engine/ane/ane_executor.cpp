// The ANE backend: compiles every placed program at start-up and installs the per-layer and
// LM-head executors on the Transformer.
#include "engine/ane/ane_executor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <span>

#include "ane_bridge/mil_blocks.h"
#include "ane_bridge/program.h"
#include "ane_bridge/surface_layout.h"
#include "engine/activations.h"
#include "engine/ane/ane_attention.h"
#include "engine/ane/ane_calibrate.h"
#include "engine/ane/ane_families.h"
#include "engine/ane/ane_programs.h"
#include "engine/ane/ane_selfcheck.h"
#include "engine/error.h"
#include "engine/kernels/quantize.h"
#include "engine/mixers/attention_mixer.h"
#include "engine/mixers/deltanet_core.h"
#include "engine/thread_pool.h"
#include "engine/transformer.h"

namespace anelm::engine {

namespace {

using namespace ane_programs;

// ======================================= execution ============================================

struct Surface {
  ane::SurfaceLayout layout;
  std::vector<std::uint8_t> bytes;
  explicit Surface(ane::SurfaceLayout l)
      : layout(l), bytes(static_cast<std::size_t>(l.alloc_bytes())) {}
};

// A layer kind's two surfaces whose width depends on the kind: A's output, B's input.
struct KindIo {
  Surface a_out, b_in;  // [in width, S]; [mixer width + D, S]
  KindIo(const ModelConfig& c, int layer, std::int64_t s)
      : a_out(ane::SurfaceLayout::channel_major(ane_in_width(c, layer), s)),
        b_in(ane::SurfaceLayout::channel_major(ane_mixer_width(c, layer) + c.d_model, s)) {}
};

// The surfaces of one S bucket, shared by every layer (programs run one at a time): A's input and
// B's output ([D, S]) and, per layer kind the model has, the other two.
struct BucketIo {
  std::int64_t seq;
  Surface a_in, b_out;
  std::unique_ptr<KindIo> kinds[2];  // by Mixer; null for a kind the model has no layer of
  BucketIo(const ModelConfig& c, std::int64_t s)
      : seq(s),
        a_in(ane::SurfaceLayout::channel_major(c.d_model, s)),
        b_out(ane::SurfaceLayout::channel_major(c.d_model, s)) {
    for (int l = 0; l < c.n_layers; ++l) {
      std::unique_ptr<KindIo>& k = kinds[static_cast<std::size_t>(c.mixer(l))];
      if (!k) k = std::make_unique<KindIo>(c, l, s);
    }
  }
  KindIo& of(Mixer m) { return *kinds[static_cast<std::size_t>(m)]; }
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

// State shared by the layer executors: config, CPU kernels for the mixer cores, surfaces.
struct AneShared {
  const ModelConfig& cfg;
  const kernels::KernelTable& k;
  ThreadPool& pool;
  std::vector<BucketIo> io;  // ascending S
  DeltaNetCore deltanet;  // Gated DeltaNet layers' CPU part (between programs A and B)
  // GPT-2's and Gemma 3's attention between A and B (no RoPE; windowed layers over the KV ring,
  // Gemma's attention scale): the CPU mixer's own code (ane_families.h).
  AttentionMixer attention;
  bool family_attention = false;

  // The smallest bucket holding `remaining` tokens, else the largest (then more chunks follow).
  std::size_t bucket_for(int remaining) const {
    for (std::size_t i = 0; i < io.size(); ++i)
      if (io[i].seq >= remaining) return i;
    return io.size() - 1;
  }
};

// One decoder layer: A on the ANE, the token mixer's core on the CPU, B on the ANE; chunked over
// S buckets. Attention: A = norm + q | k | v (| gate); CPU: q/k head norms, RoPE, KV store,
// attention, output gate. Gated DeltaNet: A = norm + qkv | z | beta | alpha; CPU: conv, L2 norms,
// gates, delta rule, gated RMSNorm. B = output projection + residual + norm + SwiGLU + residual.
class AneLayer final : public LayerExecutor {
 public:
  AneLayer(AneShared& s, int layer, const LayerWeights& w, bool fp32_residual)
      : s_(s),
        layer_(layer),
        kind_(s.cfg.mixer(layer)),
        w_(w),
        mix_(ane_mixer_width(s.cfg, layer)),
        fp32_residual_(fp32_residual) {}
  const char* name() const override { return "ane"; }

  void add(std::unique_ptr<ane::Program> a, std::unique_ptr<ane::Program> b) {
    attn_.push_back(std::move(a));
    ffn_.push_back(std::move(b));
  }
  ane::Program* program(std::size_t bucket, bool ffn) const {
    return (ffn ? ffn_ : attn_)[bucket].get();
  }

  void run_layer(const LayerBatch& b) override {
    if (b.layer != layer_)  // the programs bake this layer's weights
      throw Error(ErrorKind::kInternal, "ANE executor of layer " + std::to_string(layer_) +
                                            " called for layer " + std::to_string(b.layer));
    Activations& a = *b.acts;
    const ModelConfig& c = s_.cfg;
    const std::int64_t d = c.d_model;
    // Gemma 3's sqrt(d) embedding scale, as CpuExecutor applies it before layer 0.
    if (layer_ == 0 && c.embedding_scale != 1.0f)
      for (std::int64_t i = 0; i < b.n * d; ++i) b.x[i] *= c.embedding_scale;
    for (int t0 = 0; t0 < b.n;) {  // A: x rows -> the mixer's projections
      const std::size_t bi = s_.bucket_for(b.n - t0);
      BucketIo& io = s_.io[bi];
      KindIo& kio = io.of(kind_);
      const int m = static_cast<int>(std::min<std::int64_t>(io.seq, b.n - t0));
      pack(b.x + t0 * d, m, 0, d, io.a_in);
      evaluate(*attn_[bi], io.a_in, kio.a_out);
      unpack_projections(kio.a_out, m, t0, a);
      t0 += m;
    }
    const float* mixed = a.att.data();  // B's first input: the mixer output, [n][mix_]
    if (kind_ == Mixer::kDeltaNet) {
      s_.deltanet.run(w_.deltanet, b);
      mixed = a.dn_out.data();
    } else if (s_.family_attention) {
      ane_qk_head_norms(c, w_, s_.k, b);
      s_.attention.attend(b);
    } else {
      ane_qk_head_norms(c, w_, s_.k, b);
      ane_attention_core(c, s_.k, s_.pool, b);
      if (c.attn_output_gate) ane_output_gate(c, b);
    }
    for (int t0 = 0; t0 < b.n;) {  // B: (mixer rows, residual rows) -> next residual rows
      const std::size_t bi = s_.bucket_for(b.n - t0);
      BucketIo& io = s_.io[bi];
      KindIo& kio = io.of(kind_);
      const int m = static_cast<int>(std::min<std::int64_t>(io.seq, b.n - t0));
      pack(mixed + t0 * mix_, m, 0, mix_, kio.b_in);
      pack(b.x + t0 * d, m, mix_, d, kio.b_in);
      evaluate(*ffn_[bi], kio.b_in, io.b_out);
      if (!fp32_residual_) {
        unpack(io.b_out, m, 0, d, b.x + t0 * d);
      } else {  // B returned the update only: the residual never leaves fp32
        unpack(io.b_out, m, 0, d, a.proj.data());
        float* x = b.x + t0 * d;
        for (std::int64_t i = 0; i < m * d; ++i) x[i] += a.proj[static_cast<std::size_t>(i)];
      }
      t0 += m;
    }
    if (b.select_rows) move_rows_to_front(b.x, d, b.out_rows);  // program B ran every row
  }

 private:
  // Program A's output segments (ane_in_width's order) of rows [t0, t0 + m) into the scratch the
  // CPU core reads.
  void unpack_projections(const Surface& out, int m, int t0, Activations& a) const {
    const ModelConfig& c = s_.cfg;
    if (kind_ == Mixer::kDeltaNet) {
      const DeltaNetDims& dn = c.deltanet;
      const std::int64_t cd = dn.conv_dim(), vd = dn.value_dim(), nv = dn.n_v_heads;
      unpack(out, m, 0, cd, a.dn_qkv.data() + t0 * cd);
      unpack(out, m, cd, vd, a.dn_z.data() + t0 * vd);
      unpack(out, m, cd + vd, nv, a.dn_beta.data() + t0 * nv);
      unpack(out, m, cd + vd + nv, nv, a.dn_g.data() + t0 * nv);
      return;
    }
    const std::int64_t qd = c.q_dim(), kvd = c.kv_dim();
    unpack(out, m, 0, qd, a.q.data() + t0 * qd);
    unpack(out, m, qd, kvd, a.k.data() + t0 * kvd);
    unpack(out, m, qd + kvd, kvd, a.v.data() + t0 * kvd);
    if (c.attn_output_gate) unpack(out, m, qd + 2 * kvd, qd, a.q_gate.data() + t0 * qd);
  }

  AneShared& s_;
  int layer_;
  Mixer kind_;
  const LayerWeights& w_;
  std::int64_t mix_;
  bool fp32_residual_;
  std::vector<std::unique_ptr<ane::Program>> attn_, ffn_;  // [bucket] programs A and B
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
  ane::Program* program(std::size_t chunk) const { return programs_[chunk].get(); }

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
  ro.sim.max_live_programs = o.max_live_programs;
  return ro;
}

class AneBackendImpl final : public AneBackend {
 public:
  AneBackendImpl(const ModelConfig& cfg, const ModelWeights& w, Transformer& tf, ThreadPool& pool,
                 const AneBackendOptions& o)
      : cfg_(cfg),
        w_(w),
        tf_(tf),
        opts_(o),
        shared_{cfg, tf.kernels(), pool, {}, DeltaNetCore(cfg, tf.kernels(), pool, tf.inline_macs()),
                AttentionMixer(CpuContext{cfg, w, pool, tf.kernels(), tf.inline_macs()}),
                ane_family_layers(cfg)} {
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
    fill_stats(p, ane_layers, sim);
    if (o.self_check == AneBackendOptions::SelfCheck::kAlways ||
        (!sim && o.self_check == AneBackendOptions::SelfCheck::kDevice))
      self_check(p);
    if (!stats_.declined.empty()) return;  // the engine drops this backend: install nothing
    for (int l = 0; l < ane_layers; ++l) tf_.set_layer_executor(l, layers_[l].get());
    if (head_) tf_.set_head_executor(head_.get());
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
    const LayerF32 lw(cfg_, l, w_.layers[static_cast<std::size_t>(l)]);
    auto layer =
        std::make_unique<AneLayer>(shared_, l, w_.layers[static_cast<std::size_t>(l)], opts_.fp32_residual);
    for (std::int64_t s : buckets) {
      const ane::BlockProgram a = build_layer_block(cfg_, lw, l, false, s, opts_.int8_weights, ps_);
      const ane::BlockProgram b =
          build_layer_block(cfg_, lw, l, true, s, opts_.int8_weights, ps_, opts_.fp32_residual);
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

  // UNTESTED on the device (no Mac in CI; the tests run it with kAlways on the simulator). Costs
  // one 8-token CPU forward, one dispatch per case on the device (4 at most) and as many CPU
  // simulator compiles; no device compile.
  void self_check(const Placement& p) {
    const auto t0 = Clock::now();
    const AneRecorded r = record_ane_activations(cfg_, w_);
    AneLoadedPrograms loaded;
    loaded.ane_layers = static_cast<int>(layers_.size());
    loaded.layer = [this](int l, bool ffn) {  // bucket 0: S = 32, the decode bucket
      return layers_[static_cast<std::size_t>(l)]->program(0, ffn);
    };
    loaded.head = [this](int c) { return head_->program(static_cast<std::size_t>(c)); };
    if (head_) loaded.chunks = p.chunks;
    const std::vector<AneSelfCheckCase> cases =
        ane_self_check_cases(cfg_, w_, opts_, ps_, r, loaded);
    ane::RuntimeOptions ro;
    ro.backend = ane::Backend::kSimulator;
    ro.sim.compile_budget = INT_MAX;  // a CPU simulator: its compiles cost the device nothing
    const std::unique_ptr<ane::Runtime> sim = ane::make_simulator(ro);
    AneCaseEvaluator device = loaded_program_evaluator();
    if (opts_.self_check_device_fault)
      device = [d = std::move(device), this](const AneSelfCheckCase& c, int n) {
        std::vector<float> y = d(c, n);
        opts_.self_check_device_fault(c.block.source.name, y);
        return y;
      };
    AneSelfCheckResult res;
    try {
      res = run_ane_self_check(cases, r.n, device, compiled_program_evaluator(*sim));
    } catch (const Error& e) {  // a device that cannot even run them: serve on the CPU as well
      stats_.declined = std::string("the self-check could not run: ") + e.what();
      return;
    }
    stats_.self_check_rel_error = res.max_rel_error;
    stats_.self_check_programs = res.programs;
    if (!res.passed())
      stats_.declined = "device disagrees with the simulator on " + res.worst_program +
                        ": rel error " + fmt::format("{:.3g}", res.max_rel_error);
    spdlog::info("ANE self-check: {} programs, device vs simulator rel error {:.3g} ({}), limit "
                 "{:g}, {:.0f} ms",
                 res.programs, res.max_rel_error, res.worst_program, kAneSelfCheckMaxRelError,
                 ms_since(t0));
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

}  // namespace anelm::engine
