// The start-up self-check of `--backend ane` on the device: a few of the programs the backend has
// just loaded run on the calibration prompt's real activations, and the same MIL and blobs run
// through the simulator; when they disagree the engine declines the ANE and serves on the CPU.
// The device path is UNTESTED (no Mac in CI); the comparison takes its two evaluators as
// arguments so that tests drive it with the simulator and a deliberately wrong "device".
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ane_bridge/mil_blocks.h"
#include "ane_bridge/program.h"
#include "engine/ane/ane_activations.h"
#include "engine/ane/ane_calibrate.h"
#include "engine/ane/ane_executor.h"
#include "engine/model_config.h"
#include "engine/weights.h"

namespace anelm::engine {

// Largest device-vs-simulator error (ane_rel_error: max over tokens of ||y_dev - y_sim|| /
// ||y_sim||) the self-check accepts. Both sides store fp16 and accumulate in fp32 but may order
// and round differently: each program's own fp16 error against fp32 is <= 1.3e-3 on every model
// `--verify` measured, so two honest implementations differ by a few 1e-3. What the check exists
// to catch (a blob the device reads with another dtype code or layout, subnormals not flushed
// where the programs rely on it, a surface stride mismatch) is O(1) or non-finite. 2e-2 is the
// limit `--verify` asks of the simulator against fp32, >10x above the honest spread and still a
// small fraction of a logit's range (greedy ids survive 1e-2 in the backend tests).
inline constexpr double kAneSelfCheckMaxRelError = 2e-2;

// One program the check runs: its source rebuilt from the weights (for the reference), the same
// program as the backend loaded it (not owned), and its input on the recorded activations.
struct AneSelfCheckCase {
  ane::BlockProgram block;
  ane::Program* loaded = nullptr;
  AneInputs inputs;
};

// Evaluates one case on lanes [0, n): [n][out channels].
using AneCaseEvaluator = std::function<std::vector<float>(const AneSelfCheckCase&, int n)>;

struct AneSelfCheckResult {
  double max_rel_error = 0;  // over the cases; +inf when an output was not finite
  std::string worst_program;
  int programs = 0;          // cases run (one device dispatch each)
  bool passed(double limit = kAneSelfCheckMaxRelError) const { return max_rel_error <= limit; }
};

// Runs every case through `device` and `reference` and compares them.
AneSelfCheckResult run_ane_self_check(const std::vector<AneSelfCheckCase>& cases, int n,
                                      const AneCaseEvaluator& device,
                                      const AneCaseEvaluator& reference);

// The device side: evaluates the loaded program (no compile, no budget spent).
AneCaseEvaluator loaded_program_evaluator();

// The reference side: compiles the case's block on `sim` (a CPU simulator: no device budget),
// evaluates it, releases it. `sim` must outlive the evaluator.
AneCaseEvaluator compiled_program_evaluator(ane::Runtime& sim);

// Where the backend's loaded programs are: layer programs of the decode bucket (A or B) and the
// head's chunks; null when that program is not on the ANE.
struct AneLoadedPrograms {
  std::function<ane::Program*(int layer, bool ffn)> layer;
  std::function<ane::Program*(int chunk)> head;
  int ane_layers = 0;
  std::vector<ane::LmHeadChunk> chunks;
};

// The cases of the start-up check, all in the decode bucket (S = 32): layer 0's A and B (the BOS
// outlier is largest there), in a hybrid model (Qwen3.5) also A and B of the first ANE layer of
// the other kind, the last ANE layer's B (the deepest residual), the first LM-head chunk. `r` must outlive the cases (their inputs point into it).
std::vector<AneSelfCheckCase> ane_self_check_cases(const ModelConfig& cfg, const ModelWeights& w,
                                                   const AneBackendOptions& o,
                                                   const AnePrescales& ps, const AneRecorded& r,
                                                   const AneLoadedPrograms& loaded);

}  // namespace anelm::engine
