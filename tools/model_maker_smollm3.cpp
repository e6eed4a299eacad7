// make_model for SmolLM3 (llama.cpp arch smollm3): Llama's tensors, no RoPE in every 4th layer
// (engine/family_smollm3.cpp); the GGUF carries only the common keys, as llama.cpp's converter writes.
#include "engine/error.h"
#include "engine/families.h"
#include "tools/model_maker_plan.h"

namespace anelm::tools {

using namespace engine;

ModelConfig smollm3_shape_config(const std::string& shape, int layers) {
  ModelConfig c;
  c.arch = Arch::kSmolLM3;
  if (shape == "tiny") {  // 4 layers: the last is NoPE; rows a multiple of 256
    c.n_layers = 4, c.d_model = 256, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64, c.d_ff = 512;
    c.max_ctx = 4096;
  } else if (shape == "smollm3-3b") {  // HuggingFaceTB/SmolLM3-3B config.json
    c.n_layers = 36, c.d_model = 2048, c.n_heads = 16, c.n_kv_heads = 4, c.head_dim = 128, c.d_ff = 11008;
    c.max_ctx = 65536;
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown smollm3 shape '" + shape + "' (tiny | smollm3-3b)");
  }
  if (layers > 0) c.n_layers = layers;
  c.rope_dim = c.head_dim;
  c.rope_theta = 5000000.0f;
  c.rms_eps = 1e-6f;
  c.rope_layout = RopeLayout::kInterleaved;  // Q/K rows permuted as llama.cpp's converter stores them
  c.tie_embeddings = true;
  c.nope_layers = smollm3_nope_layers(c.n_layers);
  return c;
}

}  // namespace anelm::tools
