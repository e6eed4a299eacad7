// SmolLM3 as llama.cpp reads it (src/models/smollm3.cpp, v0.5.0): Llama's layers (Q/K rows in the
// converter's interleaved RoPE order) where every 4th layer attends without positions. llama.cpp
// fixes the interval at 4 (n_no_rope_layer_step) and its converter writes no key for it, as every
// SmolLM3 checkpoint has no_rope_layer_interval 4 (HF's no_rope_layers list: 0 at layers 3, 7, ...).
#include "engine/families.h"

namespace anelm::engine {

std::vector<bool> smollm3_nope_layers(int n_layers) {
  std::vector<bool> nope;
  for (int l = 0; l < n_layers; ++l) nope.push_back((l + 1) % 4 == 0);
  return nope;
}

void smollm3_from_gguf(const GgufFile&, ModelConfig& c) {
  c.rope_layout = RopeLayout::kInterleaved;
  c.nope_layers = smollm3_nope_layers(c.n_layers);
}

}  // namespace anelm::engine
