// `anelm compile --verify` (ane_verify.h): record real activations with a CPU forward, then run
// every placed program through the simulator and compare with its fp32 reference.
#include "engine/ane/ane_verify.h"

#include <climits>

#include "ane_bridge/program.h"
#include "engine/ane/ane_activations.h"
#include "engine/ane/ane_calibrate.h"
#include "engine/ane/ane_programs.h"
#include "engine/ane/ane_reference.h"
#include "engine/error.h"
#include "engine/kernels/kernels.h"
#include "engine/thread_pool.h"

namespace anelm::engine {

namespace {

using namespace ane_programs;

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
  Verifier(const AneRecorded& r, bool ftz) : r_(r) {
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
                     const AneInputs& inputs,
                     const std::vector<float>& ref) {
    AneProgramCheck c;
    c.name = b.source.name;
    c.kind = b.kind;
    const std::vector<float> y = compile_and_run_ane_program(*sim_, b, inputs, r_.n, &report_.sim_ms);
    const std::int64_t width = b.outputs[0].type.shape[1];
    c.rel_error = ane_rel_error(y, ref, r_.n, width);
    if (device_)
      c.device_rel_error =
          ane_rel_error(compile_and_run_ane_program(*device_, b, inputs, r_.n), y, r_.n, width);
    if (c.rel_error > report_.max_rel_error || report_.worst_program.empty()) {
      report_.max_rel_error = std::max(report_.max_rel_error, c.rel_error);
      report_.worst_program = c.name;
    }
    report_.programs.push_back(std::move(c));
  }

  AneVerifyReport take() { return std::move(report_); }

 private:
  const AneRecorded& r_;
  std::unique_ptr<ane::Runtime> sim_, device_;
  AneVerifyReport report_;
};

}  // namespace

AneVerifyReport verify_ane_programs(const ModelConfig& cfg, const ModelWeights& w,
                                    const AneBackendOptions& opts, bool ftz) {
  const Placement p = place_programs(cfg, opts, opts.compile_budget);
  const AneRecorded r = record_ane_activations(cfg, w);
  AnePrescales ps;
  if (opts.rms_prescale > 0) {
    ps = fixed_ane_prescales(cfg, opts.rms_prescale);
  } else {  // the backend's calibration, so these are the programs it would load
    ThreadPool pool(1);
    ps = calibrate_ane_prescales(cfg, w, pool, kernels::active_kernels());
  }
  Verifier v(r, ftz);
  const int n = r.n;
  const std::int64_t d = cfg.d_model;
  for (int l = 0; l < p.ane_layers; ++l) {
    const auto li = static_cast<std::size_t>(l);
    const LayerF32 lw(cfg, l, w.layers[li]);
    const std::int64_t qd = ane_mixer_width(cfg, l);
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
  const std::vector<float> norm = to_f32(w.out_norm), norm_b = to_f32(w.out_norm_b);
  for (std::size_t i = 0; i < p.chunks.size(); ++i) {
    const ane::LmHeadChunk& c = p.chunks[i];
    const std::vector<float> rows = to_f32(w.lm_head, c.row_begin, c.rows);
    v.check_program(
        build_head_block(cfg, w, norm, c, static_cast<int>(i), opts.int8_weights, ps.head),
        {{r.x_final.data(), d}},
        ane_reference::lm_head(cfg, rows, c.rows, norm, r.x_final.data(), n, norm_b));
  }
  AneVerifyReport rep = v.take();
  rep.live_programs = p.live;
  rep.dispatches_per_token = p.dispatches_per_token;
  return rep;
}

}  // namespace anelm::engine
