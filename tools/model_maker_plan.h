// The tensor plan make_model streams (shared by the per-family files, e.g. model_maker_qwen35.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf_writer.h"
#include "engine/model_config.h"

namespace anelm::tools {

// What a tensor's random values are: kConv a short conv kernel (f32 in GGUF), kDecay a DeltaNet
// decay rate stored as llama.cpp's -exp(A_log) (negative, f32).
enum class Kind { kEmbed, kMatrix, kNorm, kBias, kRopeFreqs, kConv, kDecay };

// One tensor to write. `permute_heads` > 0: a llama GGUF Q/K matrix whose rows are stored in
// llama.cpp's converter order for that many heads.
struct Plan {
  std::string gguf_name, hf_name;
  std::vector<int64_t> shape;  // PyTorch order
  Kind kind;
  int permute_heads = 0;
};

// Qwen3.5 (GGUF only): the config of a shape ("tiny" as the peer kit's generator, "qwen3.5-0.8b",
// "qwen3.5-2b"; layers > 0 overrides the count, every 4th block attention), one block's tensors,
// and the qwen35.* metadata beyond the common keys.
engine::ModelConfig qwen35_shape_config(const std::string& shape, int layers);
void add_qwen35_block_plan(const engine::ModelConfig& c, int layer, std::vector<Plan>& plan);
void add_qwen35_hparams(const engine::ModelConfig& c, engine::GgufWriter& w);

// Granite 3.x ("tiny", "granite-3.3-2b") and SmolLM3 ("tiny", "smollm3-3b"), GGUF only: Llama's
// tensor plan (Q/K rows permuted) under the family's config; layers > 0 overrides the count.
engine::ModelConfig granite_shape_config(const std::string& shape, int layers);
engine::ModelConfig smollm3_shape_config(const std::string& shape, int layers);

}  // namespace anelm::tools
