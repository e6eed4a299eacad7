// Summary of a model file for `anelm inspect`: config, tensor counts and bytes per stored dtype.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/model_loader.h"

namespace anelm::tools {

struct DTypeStats {
  std::string dtype;  // as stored: "f16", "q8_0", "q4_K" (GGUF) or "BF16", "F32" (safetensors)
  int64_t count = 0;  // tensors
  int64_t bytes = 0;
};

struct ModelInfo {
  std::string path;
  engine::ModelFormat format = engine::ModelFormat::kGguf;
  uint32_t gguf_version = 0;           // 0 for HF
  engine::ModelConfig config;                  // parsed and validated
  int64_t n_tensors = 0;
  int64_t n_params = 0;                // elements over all tensors
  std::vector<DTypeStats> by_dtype;    // sorted by bytes, largest first
  int64_t total_bytes = 0;             // tensor data bytes
  int64_t file_bytes = 0;              // all weight files on disk
};

// Reads headers only (no tensor data is touched), so it works for types anelm cannot run
// (e.g. q4_K). Throws anelm::Error like load_model for unreadable files or invalid configs.
ModelInfo model_info(const std::string& path);

}  // namespace anelm::tools
