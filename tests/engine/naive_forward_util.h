// llama2.c-style single-function forward over the reference kernels (the model oracle for tests),
// and a seeded in-memory synthetic model covering every weight type and both architectures' flags.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model_config.h"
#include "engine/tensor.h"
#include "engine/weights.h"

namespace anelm::engine::testing {

// F32 K/V per layer, [n_layers][ctx][kv_dim]; kv_f16 rounds stored K/V through f16 (as an F16 cache).
struct NaiveState {
  NaiveState(const ModelConfig& cfg, int ctx, bool kv_f16);
  int ctx;
  bool kv_f16;
  std::vector<float> k_cache, v_cache;
};

// Logits [vocab] of `token` at position `pos`; positions < pos must have been run before.
// Block-quantised weights see their input rounded through Q8 (the engine's and llama.cpp's numerics).
std::vector<float> naive_forward(const ModelConfig& cfg, const ModelWeights& w, NaiveState& s, int token,
                                 int pos);

// A seeded random model built in memory (no files): matrices of type `wtype`, F32 norms/biases.
// qwen2_flags: qkv bias, rotate-half RoPE, tied embeddings (else llama: interleaved RoPE, separate head).
struct SyntheticModel {
  ModelConfig cfg;
  ModelWeights w;
  std::vector<std::shared_ptr<std::vector<uint8_t>>> storage;
};
std::unique_ptr<SyntheticModel> make_synthetic_model(DType wtype, uint32_t seed, bool qwen2_flags = true);

}  // namespace anelm::engine::testing
