// `anelm compile --verify`: every placed ANE program run on real prompt activations through the
// simulator (fp16 numerics, FTZ on by default) and checked against an fp32 CPU reference of the same
// program; on a Mac also the device against the simulator (written, never run here).
#pragma once

#include <string>
#include <vector>

#include "engine/ane/ane_executor.h"
#include "engine/model_config.h"
#include "engine/weights.h"

namespace anelm::engine {

struct AneProgramCheck {
  std::string name;             // e.g. "L03_ffn_s32", "lm_head_02_s32"
  std::string kind;             // "attn_in" | "ffn" | "dn_in" | "dn_ffn" | "lm_head"
  double rel_error = 0;         // simulator vs reference: max over the prompt's tokens of
                                // ||y_sim - y_ref|| / ||y_ref|| over the output channels
  double device_rel_error = -1;  // device vs simulator, same measure; -1: not run
};

struct AneVerifyReport {
  std::vector<AneProgramCheck> programs;  // in placement order (layers, buckets, A then B, head)
  double max_rel_error = 0;
  std::string worst_program;
  bool ftz = true;                 // the simulator flushed fp16 subnormals
  int tokens = 0;                  // prompt tokens each program ran on (lanes 0..tokens-1)
  int live_programs = 0;           // of the plan verified (Placement::live)
  int dispatches_per_token = 0;    // of the plan verified
  std::string reference;           // what the simulator was compared with
  std::string device;              // what happened to the device comparison, and why
  double sim_ms = 0;               // simulator compile + evaluate time over all programs
};

// The prompt is the calibration sequence (ane_calibration_ids: BOS first, where massive
// activations live). A CPU forward over it records each layer's input residual and attention
// output; program A runs on the layer input, program B on (attention output, layer input), the LM
// head chunks on the last layer's output. Each reference is the program's own math in fp32 with
// double accumulation from the dequantised weights (no fp16 rounding, no prescale), so the error
// is what the ANE path adds to one program; nothing compounds across layers. Throws anelm::Error as
// place_programs does, and kInternal when a program fails to build, compile or run.
AneVerifyReport verify_ane_programs(const ModelConfig& cfg, const ModelWeights& weights,
                                    const AneBackendOptions& opts, bool ftz = true);

}  // namespace anelm::engine
