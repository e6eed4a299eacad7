// A test model with a massive activation: the first prompt token (BOS) carries one residual channel
// of magnitude ~1e3, as trained Qwen models show, so the ANE numerics are exercised where fp16
// storage and the RMSNorm prescale are tightest.
#pragma once

#include <filesystem>
#include <string>

#include "engine/model_config.h"

namespace anelm::testing {

struct MassiveActivationModel {
  std::string path;             // the GGUF file
  engine::ModelConfig config;
  int token = 0;                // the token whose embedding carries the outlier (BOS, else 1)
  int channel = 0;              // the outlier channel
  float magnitude = 0;          // its value in that token's embedding row
};

// A tiny random llama (anelm make-model, f32 weights so the edit is exact) whose BOS embedding row
// gets `magnitude` in one channel. Every layer adds to the residual, so the outlier rides the
// residual stream of that token through the whole model, as a real massive activation does from
// its early layers on. Throws std::runtime_error when the made file is not what the edit expects.
MassiveActivationModel make_massive_activation_model(const std::filesystem::path& dir,
                                                     float magnitude = 1000.0f,
                                                     const std::string& shape = "tiny");

}  // namespace anelm::testing
