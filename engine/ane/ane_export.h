// Ahead-of-time ANE program export (the engine side of `anelm compile`): plans (counts only) or
// builds and writes every program of a model, and summarises counts against the compile budget.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ane/ane_executor.h"
#include "engine/model_config.h"
#include "engine/weights.h"

namespace anelm::engine {

// The result of planning or exporting a model's programs. Counts follow the same placement rules
// as make_ane_backend (buckets dropped, layers or head left on the CPU when the budget is short).
struct AneCompileSummary {
  std::string model_name;        // ModelConfig::name
  std::string out_dir;           // export directory; empty for a plan
  std::string weight_format;     // "fp16" | "int8"
  std::vector<int> seq_buckets;  // S buckets the layer programs are built for (32 = decode)
  int n_layers = 0;              // decoder layers of the model
  int ane_layers = 0;            // layers placed on the ANE (== n_layers unless short of budget)
  int ane_attention_layers = 0;  // of those, attention layers (attn_in + ffn)
  int ane_deltanet_layers = 0;   // and Gated DeltaNet layers (dn_in + dn_ffn; Qwen3.5)
  int programs_per_layer = 2;    // per S bucket: A (attn_in | dn_in) + B (ffn | dn_ffn)
  int lm_head_chunks = 0;        // LM-head programs (S = 32 only); 0 when the head is on the CPU
  int programs_per_decode_token = 0;  // evaluations per decoded token: 2 * ane_layers + chunks
  int total_programs = 0;             // compiles on a cold start: 2 * ane_layers * buckets + chunks
  int compile_budget = 0;             // per-process compile budget planned against
  int live_programs = 0;              // programs loaded at once (every placed program stays loaded)
  int max_live_programs = 0;          // the live-program cap planned against (0: none)
  bool fits_budget = false;           // every layer and the head on the ANE within the budget and
                                      // the live-program cap
  int64_t total_weight_bytes = 0;     // sum of weights/*.bin sizes; estimated (fp16/int8 payloads +
                                      // headers) for a plan, exact for an export
  bool weight_bytes_exact = false;
  double build_ms = 0;  // export only: dequantise + MIL + blob generation + writing
  std::vector<std::string> program_names;  // every program in build order (an export: one
                                           // directory each; a plan: the names it would build)
};

// Counts only: no weights are read. Throws anelm::Error(kInvalidArgument) for bad buckets and
// kResourceExhausted as make_ane_backend would (cpu_remainder false and the model does not fit).
AneCompileSummary plan_ane_programs(const ModelConfig& cfg, const AneBackendOptions& opts = {});

// Builds every planned program from `weights` and writes out_dir/NAME/model.mil,
// out_dir/NAME/weights/*.bin and out_dir/manifest.json (ane_bridge's layout). One program is held
// in memory at a time. Throws anelm::Error (kIo when writing fails).
AneCompileSummary export_ane_programs(const ModelConfig& cfg, const ModelWeights& weights,
                                      const std::string& out_dir,
                                      const AneBackendOptions& opts = {});

}  // namespace anelm::engine
