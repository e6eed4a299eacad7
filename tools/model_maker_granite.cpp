// make_model for Granite 3.x (llama.cpp arch granite): Llama's tensors with Granite 3.3's four
// multipliers, written as llama.cpp's converter writes them (engine/family_granite.cpp).
#include "engine/error.h"
#include "tools/model_maker_plan.h"

namespace anelm::tools {

using namespace engine;

ModelConfig granite_shape_config(const std::string& shape, int layers) {
  ModelConfig c;
  c.arch = Arch::kGranite;
  if (shape == "tiny") {  // rows a multiple of 256 (K-quants apply to every matrix)
    c.n_layers = 4, c.d_model = 256, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64, c.d_ff = 512;
    c.max_ctx = 4096;
    // A separate head: tied to d_model 256 embeddings of N(0, 0.5 / 12) it would leave every logit
    // near a tie (the 2B shape's 2048 columns do not).
    c.tie_embeddings = false;
  } else if (shape == "granite-3.3-2b") {  // ibm-granite/granite-3.3-2b-instruct config.json
    c.n_layers = 40, c.d_model = 2048, c.n_heads = 32, c.n_kv_heads = 8, c.head_dim = 64, c.d_ff = 8192;
    c.max_ctx = 131072;
    c.tie_embeddings = true;
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown granite shape '" + shape + "' (tiny | granite-3.3-2b)");
  }
  if (layers > 0) c.n_layers = layers;
  c.rope_dim = c.head_dim;
  c.rope_theta = 10000000.0f;
  c.rms_eps = 1e-5f;
  c.rope_layout = RopeLayout::kInterleaved;  // Q/K rows permuted as llama.cpp's converter stores them
  // Granite 3.3's multipliers (2B and 8B alike): attention_multiplier 1/head_dim = 1/64 (not
  // 1/sqrt(64)), embedding_multiplier 12, residual_multiplier 0.22, logits_scaling 8.
  c.attention_scale = 0.015625f;
  c.embedding_scale = 12.0f;
  c.residual_scale = 0.22f;
  c.logit_scale = 8.0f;
  return c;
}

}  // namespace anelm::tools
