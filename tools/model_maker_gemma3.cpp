// make_model for Gemma 3 (llama.cpp arch gemma3): the GGUF llama.cpp's converter writes (norm
// weights stored as 1 + w, as HF's Gemma3RMSNorm applies them; engine/family_gemma3.cpp).
#include <cmath>

#include "engine/error.h"
#include "engine/families.h"
#include "tools/model_maker_plan.h"

namespace anelm::tools {

using namespace engine;

ModelConfig gemma3_shape_config(const std::string& shape, int layers) {
  ModelConfig c;
  c.arch = Arch::kGemma3;
  if (shape == "tiny") {
    // 7 layers: 0-4 and 6 local, 5 global; a 64-position window that a 700-token prompt crosses
    // many times; head_dim 128 with q_dim 512 != d_model (as Gemma 3's 1152 vs 4 x 256); rows a
    // multiple of 256 (K-quants apply to every matrix); the global layers' RoPE linearly scaled
    // (Gemma 3 4B and up: factor 8) so the scaling is exercised too.
    c.n_layers = 7, c.d_model = 256, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 128, c.d_ff = 512;
    c.max_ctx = 4096;
    c.sliding_window = 64;
    c.rope_dim = c.head_dim;
    c.rope_freq_factors.assign(static_cast<size_t>(c.rope_dim / 2), 8.0f);
  } else if (shape == "gemma-3-1b") {  // google/gemma-3-1b-it config.json (no rope scaling)
    c.n_layers = 26, c.d_model = 1152, c.n_heads = 4, c.n_kv_heads = 1, c.head_dim = 256, c.d_ff = 6912;
    c.max_ctx = 32768;
    c.sliding_window = 512;
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown gemma3 shape '" + shape + "' (tiny | gemma-3-1b)");
  }
  if (layers > 0) c.n_layers = layers;
  c.rope_dim = c.head_dim;
  c.rope_theta = 1000000.0f;
  c.rope_theta_swa = 10000.0f;
  c.rms_eps = 1e-6f;
  c.rope_layout = RopeLayout::kHalf;
  // Tied as every Gemma 3 checkpoint, except the tiny shape: a head tied to d_model 256 embeddings
  // small enough for the stream (N(0, 0.5 / 16), times 16) leaves every logit near a tie, larger
  // ones make the model repeat its input token (checked with llama.cpp); llama.cpp's gemma3 reads
  // an output.weight when the file has one.
  c.tie_embeddings = shape != "tiny";
  c.qk_norm = true;
  c.post_norms = true;
  c.ffn_act = FfnAct::kGeluTanh;
  c.swa_layers = gemma3_swa_layers(c.n_layers);
  // What the loader derives (family_gemma3.cpp): query_pre_attn_scalar = head_dim for these shapes.
  c.embedding_scale = std::sqrt(static_cast<float>(c.d_model));
  c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return c;
}

}  // namespace anelm::tools
