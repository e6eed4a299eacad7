// `anelm compile --verify` (ane_verify.h): record real activations with a CPU forward, then run
// every placed program through the simulator and compare with its fp32 reference.
#include "engine/ane/ane_verify.h"

#include <climits>
#include <cmath>
#include <span>

#include "ane_bridge/program.h"
#include "ane_bridge/surface_layout.h"
#include "engine/activations.h"
#include "engine/ane/ane_calibrate.h"
#include "engine/ane/ane_programs.h"
#include "engine/ane/ane_reference.h"
#include "engine/error.h"
#include "engine/kernels/kernels.h"
#include "engine/kv_cache.h"
#include "engine/thread_pool.h"
#include "engine/transformer.h"

namespace anelm::engine {

namespace {

using namespace ane_programs;

// What the programs see on the prompt: per layer the input residual and the attention output
// (before o_proj), then the last layer's output (the head's input). All [tokens][width].
struct Recorded {
  int n = 0;
  std::vector<std::vector<float>> x_in, att;
  std::vector<float> x_final;
};

// Runs each layer on the CPU and copies what the ANE programs would get; reads only the batch's
// rows, residual and scratch (the attention output stays in acts->att after the layer).
class Recorder final : public LayerExecutor {
 public:
  Recorder(const ModelConfig& c, LayerExecutor& cpu, Recorded& r) : c_(c), cpu_(cpu), r_(r) {}
  const char* name() const override { return "verify-recorder"; }
  void run_layer(const LayerBatch& b) override {
    const std::size_t d = static_cast<std::size_t>(c_.d_model), qd = c_.q_dim();
    const std::size_t rows = static_cast<std::size_t>(b.n);
    auto l = static_cast<std::size_t>(b.layer);
    r_.x_in[l].assign(b.x, b.x + rows * d);
    cpu_.run_layer(b);
    r_.att[l].assign(b.acts->att.begin(), b.acts->att.begin() + static_cast<long>(rows * qd));
    if (b.layer == c_.n_layers - 1) r_.x_final.assign(b.x, b.x + rows * d);
  }

 private:
  const ModelConfig& c_;
  LayerExecutor& cpu_;
  Recorded& r_;
};

Recorded record(const ModelConfig& cfg, const ModelWeights& w) {
  const std::vector<int> ids = ane_calibration_ids(cfg);
  const int n = static_cast<int>(ids.size());
  ThreadPool pool(1);
  const kernels::KernelTable& k = kernels::active_kernels();
  Recorded r;
  r.n = n;
  r.x_in.resize(static_cast<std::size_t>(cfg.n_layers));
  r.att.resize(static_cast<std::size_t>(cfg.n_layers));
  CpuExecutor cpu(cfg, w, pool, k);
  Recorder rec(cfg, cpu, r);
  Transformer tf(cfg, w, pool, k);
  for (int l = 0; l < cfg.n_layers; ++l) tf.set_layer_executor(l, &rec);
  KvCache kv(cfg, n, DType::kF32);
  Activations acts(cfg, n, n, pool.size());
  tf.forward(ids, 0, kv, acts);
  return r;
}

// max over tokens of ||a_t - b_t|| / ||b_t|| ([n][width] each). A token whose reference is all
// zero counts its absolute error.
double rel_error(const std::vector<float>& a, const std::vector<float>& b, int n,
                 std::int64_t width) {
  double worst = 0;
  for (int t = 0; t < n; ++t) {
    double num = 0, den = 0;
    for (std::int64_t i = 0; i < width; ++i) {
      const double x = a[static_cast<std::size_t>(t * width + i)],
                   y = b[static_cast<std::size_t>(t * width + i)];
      num += (x - y) * (x - y);
      den += y * y;
    }
    const double e = std::sqrt(num) / (den > 0 ? std::sqrt(den) : 1.0);
    worst = std::max(worst, std::isfinite(e) ? e : INFINITY);
  }
  return worst;
}

// Compiles one program on `rt`, runs the packed input rows, returns [n][out channels]; released
// when done, so the live count never grows.
std::vector<float> run(ane::Runtime& rt, const ane::BlockProgram& b,
                       const std::vector<std::pair<const float*, std::int64_t>>& input_parts,
                       int n, double* ms) {
  const auto t0 = Clock::now();
  std::unique_ptr<ane::Program> prog;
  check(rt.compile(b.source, &prog), "compiling ", b.source.name);
  const ane::SurfaceLayout li = b.inputs[0].layout(), lo = b.outputs[0].layout();
  std::vector<std::uint8_t> in(static_cast<std::size_t>(li.alloc_bytes())),
      out(static_cast<std::size_t>(lo.alloc_bytes()));
  std::int64_t off = 0;
  for (const auto& [rows, ch] : input_parts) {
    const std::span<const float> src(rows, static_cast<std::size_t>(n * ch));
    check(ane::pack_tokens(src, n, li, in, off, ch), "packing the input of ", b.source.name);
    off += ch;
  }
  const std::span<const std::uint8_t> ins[1] = {in};
  const std::span<std::uint8_t> outs[1] = {out};
  check(prog->evaluate(ins, outs), "evaluating ", b.source.name);
  const std::int64_t ch = b.outputs[0].type.shape[1];
  std::vector<float> y(static_cast<std::size_t>(n * ch));
  check(ane::unpack_tokens(out, lo, n, y, 0, ch), "unpacking the output of ", b.source.name);
  check(prog->release(), "releasing ", b.source.name);
  if (ms) *ms += ms_since(t0);
  return y;
}

// The device runtime when this build has one and it starts; null (with the reason) otherwise.
std::unique_ptr<ane::Runtime> device_runtime(std::string* why) {
  if (!ane::ane_runtime_compiled_in()) {
    *why =
        "not available: this build has no ANE runtime (not macOS); device vs simulator can only "
        "be measured on a Mac";
    return nullptr;
  }
  ane::RuntimeOptions ro;
  ro.backend = ane::Backend::kAne;
  std::unique_ptr<ane::Runtime> rt;
  const ane::Status s = ane::make_runtime(ro, &rt);
  if (!s.ok() || rt->kind() != "ane") {
    *why = "not available: " + s.to_string();
    return nullptr;
  }
  // UNTESTED: written without a Mac. Each program is compiled on the device as well (it spends
  // the per-process budget: run --verify in its own process).
  *why = "device vs simulator (untested code path: never run in this project's CI)";
  return rt;
}

class Verifier {
 public:
  Verifier(const Recorded& r, bool ftz) : r_(r) {
    ane::RuntimeOptions ro;
    ro.backend = ane::Backend::kSimulator;
    ro.sim.fp16_ftz = ftz;
    // Programs run one at a time and are released; the plan's own counts are checked by
    // place_programs, not here.
    ro.sim.compile_budget = INT_MAX;
    sim_ = ane::make_simulator(ro);
    device_ = device_runtime(&report_.device);
    report_.ftz = ftz;
    report_.tokens = r.n;
    report_.reference = "cpu fp32 (double accumulation) on the same inputs";
  }

  void check_program(const ane::BlockProgram& b,
                     const std::vector<std::pair<const float*, std::int64_t>>& inputs,
                     const std::vector<float>& ref) {
    AneProgramCheck c;
    c.name = b.source.name;
    c.kind = b.kind;
    const std::vector<float> y = run(*sim_, b, inputs, r_.n, &report_.sim_ms);
    const std::int64_t width = b.outputs[0].type.shape[1];
    c.rel_error = rel_error(y, ref, r_.n, width);
    if (device_)
      c.device_rel_error = rel_error(run(*device_, b, inputs, r_.n, nullptr), y, r_.n, width);
    if (c.rel_error > report_.max_rel_error || report_.worst_program.empty()) {
      report_.max_rel_error = std::max(report_.max_rel_error, c.rel_error);
      report_.worst_program = c.name;
    }
    report_.programs.push_back(std::move(c));
  }

  AneVerifyReport take() { return std::move(report_); }

 private:
  const Recorded& r_;
  std::unique_ptr<ane::Runtime> sim_, device_;
  AneVerifyReport report_;
};

}  // namespace

AneVerifyReport verify_ane_programs(const ModelConfig& cfg, const ModelWeights& w,
                                    const AneBackendOptions& opts, bool ftz) {
  const Placement p = place_programs(cfg, opts, opts.compile_budget);
  const Recorded r = record(cfg, w);
  AnePrescales ps;
  if (opts.rms_prescale > 0) {
    ps = fixed_ane_prescales(cfg, opts.rms_prescale);
  } else {  // the backend's calibration, so these are the programs it would load
    ThreadPool pool(1);
    ps = calibrate_ane_prescales(cfg, w, pool, kernels::active_kernels());
  }
  Verifier v(r, ftz);
  const int n = r.n;
  const std::int64_t d = cfg.d_model, qd = cfg.q_dim();
  for (int l = 0; l < p.ane_layers; ++l) {
    const auto li = static_cast<std::size_t>(l);
    const LayerF32 lw(w.layers[li]);
    const float* x = r.x_in[li].data();
    const std::vector<float> ref_a = ane_reference::attn_input(cfg, lw, x, n);
    const std::vector<float> ref_b =
        ane_reference::ffn(cfg, lw, r.att[li].data(), x, n, opts.fp32_residual);
    for (std::int64_t s : p.buckets) {
      v.check_program(build_layer_block(cfg, lw, l, false, s, opts.int8_weights, ps), {{x, d}},
                      ref_a);
      v.check_program(
          build_layer_block(cfg, lw, l, true, s, opts.int8_weights, ps, opts.fp32_residual),
          {{r.att[li].data(), qd}, {x, d}}, ref_b);
    }
  }
  const std::vector<float> norm = to_f32(w.out_norm);
  for (std::size_t i = 0; i < p.chunks.size(); ++i) {
    const ane::LmHeadChunk& c = p.chunks[i];
    const std::vector<float> rows = to_f32(w.lm_head, c.row_begin, c.rows);
    v.check_program(
        build_head_block(cfg, w, norm, c, static_cast<int>(i), opts.int8_weights, ps.head),
        {{r.x_final.data(), d}},
        ane_reference::lm_head(cfg, rows, c.rows, norm, r.x_final.data(), n));
  }
  AneVerifyReport rep = v.take();
  rep.live_programs = p.live;
  rep.dispatches_per_token = p.dispatches_per_token;
  return rep;
}

}  // namespace anelm::engine
