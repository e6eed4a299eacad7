// Loads a model (GGUF file or HF directory) into a validated config plus bound weight views.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/tensor.h"
#include "engine/weights.h"

namespace anelm::engine {

enum class ModelFormat { kGguf, kHf };

struct LoadedModel {
  ModelFormat format = ModelFormat::kGguf;
  std::string path;
  ModelConfig config;
  ModelWeights weights;                       // views into `owners`
  std::vector<std::shared_ptr<void>> owners;  // mapped files and owned (converted) buffers
  int64_t weight_bytes = 0;                   // bytes of all bound weight tensors
};

// Throws anelm::Error naming file, tensor, field and values on any problem. `requant` converts
// matrices (not norms/biases) to that type at load (f16, q8_0, q4_0); nullopt keeps the stored types.
std::unique_ptr<LoadedModel> load_model(const std::string& path,
                                        std::optional<DType> requant = std::nullopt);

}  // namespace anelm::engine
