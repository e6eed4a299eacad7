// `anelm compile`: load a model, plan or export its ANE programs, and print the summary.
#pragma once

#include <optional>
#include <string>

#include "engine/ane/ane_export.h"
#include "engine/ane/ane_verify.h"

namespace anelm::tools {

// Loads the model (GGUF file or HF directory; `requant` as in load_model), then
// export_ane_programs. What `anelm compile --model PATH --out DIR` runs.
engine::AneCompileSummary compile_ane_programs(const std::string& model_path, const std::string& out_dir,
                                               const engine::AneBackendOptions& opts = {},
                                               std::optional<engine::DType> requant = std::nullopt);

// Loads the model, then verify_ane_programs. What `anelm compile --model PATH --verify` runs.
engine::AneVerifyReport verify_ane_model(const std::string& model_path,
                                         const engine::AneBackendOptions& opts = {},
                                         bool ftz = true,
                                         std::optional<engine::DType> requant = std::nullopt);

// `programs` (name, kind, rel_error[, device_rel_error]), max_rel_error, worst_program, ftz,
// live_programs, dispatches_per_token, tokens, reference, device, sim_ms; and as text.
std::string ane_verify_json(const engine::AneVerifyReport& r);
std::string ane_verify_text(const engine::AneVerifyReport& r);

// One JSON object (for `anelm compile --json`) and a few human-readable lines.
std::string ane_compile_summary_json(const engine::AneCompileSummary& s);
std::string ane_compile_summary_text(const engine::AneCompileSummary& s);

}  // namespace anelm::tools
