// `anelm compile`: load a model, plan or export its ANE programs, and print the summary.
#pragma once

#include <optional>
#include <string>

#include "engine/ane/ane_export.h"

namespace anelm::tools {

// Loads the model (GGUF file or HF directory; `requant` as in load_model), then
// export_ane_programs. What `anelm compile --model PATH --out DIR` runs.
engine::AneCompileSummary compile_ane_programs(const std::string& model_path, const std::string& out_dir,
                                               const engine::AneBackendOptions& opts = {},
                                               std::optional<engine::DType> requant = std::nullopt);

// One JSON object (for `anelm compile --json`) and a few human-readable lines.
std::string ane_compile_summary_json(const engine::AneCompileSummary& s);
std::string ane_compile_summary_text(const engine::AneCompileSummary& s);

}  // namespace anelm::tools
