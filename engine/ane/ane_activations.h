// What `compile --verify` and the start-up self-check share: the activations every ANE program
// sees on the calibration prompt (recorded by a CPU forward), running one program on them, and
// the per-token relative error both report.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ane_bridge/mil_blocks.h"
#include "ane_bridge/program.h"
#include "engine/model_config.h"
#include "engine/weights.h"

namespace anelm::engine {

// Per layer the input residual and the mixer output before its output projection (program B's
// first input: the gated attention output [n][q_dim], or a Gated DeltaNet layer's gated-normed
// values [n][value_dim]), then the last layer's output (the head's input), on
// ane_calibration_ids (BOS first: massive activations live there). All [tokens][width].
struct AneRecorded {
  int n = 0;
  std::vector<std::vector<float>> x_in, att;
  std::vector<float> x_final;
};
AneRecorded record_ane_activations(const ModelConfig& cfg, const ModelWeights& w);

// A program's input as token-major row blocks packed one after the other on channels: (rows
// [n][ch], ch) per part.
using AneInputs = std::vector<std::pair<const float*, std::int64_t>>;

// Runs an already loaded program `p` (built from `b`) on lanes [0, n); returns [n][out channels].
std::vector<float> evaluate_ane_program(ane::Program& p, const ane::BlockProgram& b,
                                        const AneInputs& in, int n);

// Compiles `b` on `rt`, evaluates it as above and releases it (the live count never grows); adds
// the time to *ms when given.
std::vector<float> compile_and_run_ane_program(ane::Runtime& rt, const ane::BlockProgram& b,
                                               const AneInputs& in, int n, double* ms = nullptr);

// max over tokens of ||a_t - b_t|| / ||b_t|| ([n][width] each); a token whose reference is all
// zero counts its absolute error; anything non-finite is infinite.
double ane_rel_error(const std::vector<float>& a, const std::vector<float>& b, int n,
                     std::int64_t width);

}  // namespace anelm::engine
