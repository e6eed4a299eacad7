// Recording the calibration prompt's activations and running one ANE program on them
// (ane_activations.h).
#include "engine/ane/ane_activations.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "ane_bridge/surface_layout.h"
#include "engine/activations.h"
#include "engine/ane/ane_calibrate.h"
#include "engine/ane/ane_programs.h"
#include "engine/kernels/kernels.h"
#include "engine/kv_cache.h"
#include "engine/thread_pool.h"
#include "engine/transformer.h"

namespace anelm::engine {

namespace {

using ane_programs::check;

// Runs each layer on the CPU and copies what the ANE programs would get; reads only the batch's
// rows, residual and scratch (the attention output stays in acts->att after the layer).
class Recorder final : public LayerExecutor {
 public:
  Recorder(const ModelConfig& c, LayerExecutor& cpu, AneRecorded& r) : c_(c), cpu_(cpu), r_(r) {}
  const char* name() const override { return "ane-recorder"; }
  void run_layer(const LayerBatch& b) override {
    const std::size_t d = static_cast<std::size_t>(c_.d_model);
    const std::size_t rows = static_cast<std::size_t>(b.n);
    auto l = static_cast<std::size_t>(b.layer);
    r_.x_in[l].assign(b.x, b.x + rows * d);
    // The CPU layer scales layer 0's input (Gemma 3's sqrt(d) embeddings): the program sees it so.
    if (l == 0 && c_.embedding_scale != 1.0f)
      for (float& v : r_.x_in[l]) v *= c_.embedding_scale;
    LayerBatch every_row = b;  // the recording keeps each row's output
    every_row.select_rows = false;
    cpu_.run_layer(every_row);
    // What the CPU mixer fed its output projection: the (gated) attention output, or a DeltaNet
    // layer's gated-normed values; both stay in the scratch after the layer.
    const bool dn = c_.mixer(b.layer) == Mixer::kDeltaNet;
    const std::vector<float>& mixed = dn ? b.acts->dn_out : b.acts->att;
    const auto width = static_cast<std::size_t>(ane_programs::ane_mixer_width(c_, b.layer));
    r_.att[l].assign(mixed.begin(), mixed.begin() + static_cast<long>(rows * width));
    if (b.layer == c_.n_layers - 1) r_.x_final.assign(b.x, b.x + rows * d);
    if (b.select_rows) move_rows_to_front(b.x, static_cast<std::int64_t>(d), b.out_rows);
  }

 private:
  const ModelConfig& c_;
  LayerExecutor& cpu_;
  AneRecorded& r_;
};

}  // namespace

AneRecorded record_ane_activations(const ModelConfig& cfg, const ModelWeights& w) {
  const std::vector<int> ids = ane_calibration_ids(cfg);
  const int n = static_cast<int>(ids.size());
  ThreadPool pool(1);
  const kernels::KernelTable& k = kernels::active_kernels();
  AneRecorded r;
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

std::vector<float> evaluate_ane_program(ane::Program& p, const ane::BlockProgram& b,
                                        const AneInputs& in, int n) {
  const ane::SurfaceLayout li = b.inputs[0].layout(), lo = b.outputs[0].layout();
  std::vector<std::uint8_t> ib(static_cast<std::size_t>(li.alloc_bytes())),
      ob(static_cast<std::size_t>(lo.alloc_bytes()));
  std::int64_t off = 0;
  for (const auto& [rows, ch] : in) {
    const std::span<const float> src(rows, static_cast<std::size_t>(n * ch));
    check(ane::pack_tokens(src, n, li, ib, off, ch), "packing the input of ", b.source.name);
    off += ch;
  }
  const std::span<const std::uint8_t> ins[1] = {ib};
  const std::span<std::uint8_t> outs[1] = {ob};
  check(p.evaluate(ins, outs), "evaluating ", b.source.name);
  const std::int64_t ch = b.outputs[0].type.shape[1];
  std::vector<float> y(static_cast<std::size_t>(n * ch));
  check(ane::unpack_tokens(ob, lo, n, y, 0, ch), "unpacking the output of ", b.source.name);
  return y;
}

std::vector<float> compile_and_run_ane_program(ane::Runtime& rt, const ane::BlockProgram& b,
                                               const AneInputs& in, int n, double* ms) {
  const auto t0 = ane_programs::Clock::now();
  std::unique_ptr<ane::Program> prog;
  check(rt.compile(b.source, &prog), "compiling ", b.source.name);
  std::vector<float> y = evaluate_ane_program(*prog, b, in, n);
  check(prog->release(), "releasing ", b.source.name);
  if (ms) *ms += ane_programs::ms_since(t0);
  return y;
}

double ane_rel_error(const std::vector<float>& a, const std::vector<float>& b, int n,
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

}  // namespace anelm::engine
