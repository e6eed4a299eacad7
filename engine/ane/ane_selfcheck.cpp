// The start-up self-check (ane_selfcheck.h): cases from the loaded programs, compared through two
// evaluators.
#include "engine/ane/ane_selfcheck.h"

#include "engine/ane/ane_programs.h"

namespace anelm::engine {

using namespace ane_programs;

AneSelfCheckResult run_ane_self_check(const std::vector<AneSelfCheckCase>& cases, int n,
                                      const AneCaseEvaluator& device,
                                      const AneCaseEvaluator& reference) {
  AneSelfCheckResult r;
  for (const AneSelfCheckCase& c : cases) {
    const std::int64_t width = c.block.outputs[0].type.shape[1];
    const double e = ane_rel_error(device(c, n), reference(c, n), n, width);
    if (r.worst_program.empty() || e > r.max_rel_error) {
      r.max_rel_error = e;
      r.worst_program = c.block.source.name;
    }
    ++r.programs;
  }
  return r;
}

AneCaseEvaluator loaded_program_evaluator() {
  return [](const AneSelfCheckCase& c, int n) {
    return evaluate_ane_program(*c.loaded, c.block, c.inputs, n);
  };
}

AneCaseEvaluator compiled_program_evaluator(ane::Runtime& sim) {
  return [&sim](const AneSelfCheckCase& c, int n) {
    return compile_and_run_ane_program(sim, c.block, c.inputs, n);
  };
}

std::vector<AneSelfCheckCase> ane_self_check_cases(const ModelConfig& cfg, const ModelWeights& w,
                                                   const AneBackendOptions& o,
                                                   const AnePrescales& ps, const AneRecorded& r,
                                                   const AneLoadedPrograms& loaded) {
  std::vector<AneSelfCheckCase> cases;
  const std::int64_t d = cfg.d_model;
  auto add_layer = [&](int l, bool ffn) {
    ane::Program* p = loaded.layer(l, ffn);
    if (!p) return;
    const auto li = static_cast<std::size_t>(l);
    const std::int64_t qd = ane_mixer_width(cfg, l);
    const LayerF32 lw(cfg, l, w.layers[li]);  // dequantised per case: a handful of layers at most
    AneInputs in = ffn ? AneInputs{{r.att[li].data(), qd}, {r.x_in[li].data(), d}}
                       : AneInputs{{r.x_in[li].data(), d}};
    cases.push_back({build_layer_block(cfg, lw, l, ffn, ane::kDecodeSeqLen, o.int8_weights, ps,
                                       ffn && o.fp32_residual),
                     p, std::move(in)});
  };
  if (loaded.ane_layers > 0) {
    add_layer(0, false);
    add_layer(0, true);
    // A hybrid model (Qwen3.5): also the first ANE layer of the other kind, whose programs have
    // other shapes and segments.
    int other = -1;
    for (int l = 1; l < loaded.ane_layers && other < 0; ++l)
      if (cfg.mixer(l) != cfg.mixer(0)) other = l;
    if (other > 0) {
      add_layer(other, false);
      add_layer(other, true);
    }
    if (loaded.ane_layers > 1 && loaded.ane_layers - 1 != other) add_layer(loaded.ane_layers - 1, true);
  }
  if (!loaded.chunks.empty() && loaded.head(0)) {
    const std::vector<float> norm = to_f32(w.out_norm);
    cases.push_back({build_head_block(cfg, w, norm, loaded.chunks[0], 0, o.int8_weights, ps.head),
                     loaded.head(0), AneInputs{{r.x_final.data(), d}}});
  }
  return cases;
}

}  // namespace anelm::engine
