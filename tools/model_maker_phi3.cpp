// make_model for Phi-3.5-mini / Phi-4-mini (llama.cpp arch phi3): fused attn_qkv and gate/up ffn_up
// tensors, LongRoPE factor tensors and NeoX RoPE over rope_dim < head_dim where the checkpoint has
// it, written as llama.cpp's Phi3MiniModel converter writes them (engine/family_phi3.cpp).
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/families.h"
#include "tools/model_maker_plan.h"

namespace anelm::tools {

using namespace engine;

namespace {

// Smooth stand-ins for a checkpoint's long_factor / short_factor (n = rope_dim / 2 pairs): ~1 for the
// fast pairs, growing towards the slow ones, long up to the context ratio as LongRoPE's search ends.
std::vector<float> longrope_factors(int n, double top) {
  std::vector<float> f(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double t = n > 1 ? static_cast<double>(i) / (n - 1) : 0.0;
    f[static_cast<size_t>(i)] = static_cast<float>(1.0 + (top - 1.0) * t * t);
  }
  return f;
}

}  // namespace

ModelConfig phi3_shape_config(const std::string& shape, int layers) {
  ModelConfig c;
  c.arch = Arch::kPhi3;
  double rotary = 1.0;  // HF partial_rotary_factor
  if (shape == "tiny") {
    // Rows a multiple of 256 (K-quants apply to every matrix); Phi-4-mini's partial rotary (48 of 64
    // dims) and GQA; an original context of 512 so that the fixture's 700-token prompt runs with the
    // long factors and the short ones with the short.
    c.n_layers = 4, c.d_model = 256, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64, c.d_ff = 512;
    c.max_ctx = 4096, c.rope_orig_ctx = 512;
    rotary = 0.75;
    c.tie_embeddings = false;  // as Granite's tiny: tied d_model-256 embeddings leave near ties
  } else if (shape == "phi-4-mini") {  // microsoft/Phi-4-mini-instruct config.json
    c.n_layers = 32, c.d_model = 3072, c.n_heads = 24, c.n_kv_heads = 8, c.head_dim = 128, c.d_ff = 8192;
    c.max_ctx = 131072, c.rope_orig_ctx = 4096;
    rotary = 0.75;
    c.tie_embeddings = true;
  } else if (shape == "phi-3.5-mini") {  // microsoft/Phi-3.5-mini-instruct config.json
    c.n_layers = 32, c.d_model = 3072, c.n_heads = 32, c.n_kv_heads = 32, c.head_dim = 96, c.d_ff = 8192;
    c.max_ctx = 131072, c.rope_orig_ctx = 4096;
    c.tie_embeddings = false;
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown phi3 shape '" + shape + "' (tiny | phi-4-mini | phi-3.5-mini)");
  }
  if (layers > 0) c.n_layers = layers;
  // The converter: rope_dims = int(partial_rotary_factor * n_embd) // n_head.
  c.rope_dim = static_cast<int>(rotary * c.d_model) / c.n_heads;
  c.rope_theta = 10000.0f;
  c.rms_eps = 1e-5f;
  c.rope_layout = RopeLayout::kHalf;
  const double scale = static_cast<double>(c.max_ctx) / c.rope_orig_ctx;
  c.rope_factors_long = longrope_factors(c.rope_dim / 2, scale);
  c.rope_factors_short = longrope_factors(c.rope_dim / 2, 1.5);
  // The converter's LongRoPE attention factor.
  c.rope_attn_factor = static_cast<float>(std::sqrt(1.0 + std::log(scale) / std::log(c.rope_orig_ctx)));
  return c;
}

int phi3_sliding_window(const std::string& shape) {
  // The checkpoints' 262144; the tiny one's 64 lies inside every fixture prompt, so the parity
  // fixture shows llama.cpp ignoring it (full attention).
  return shape == "tiny" ? 64 : 262144;
}

void write_phi3_hf_config(const ModelConfig& c, DType dtype, const std::string& shape, const std::string& dir) {
  nlohmann::ordered_json j = {
      {"architectures", {"Phi3ForCausalLM"}},
      {"model_type", "phi3"},
      {"hidden_act", "silu"},
      {"hidden_size", c.d_model},
      {"intermediate_size", c.d_ff},
      {"num_attention_heads", c.n_heads},
      {"num_hidden_layers", c.n_layers},
      {"num_key_value_heads", c.n_kv_heads},
      {"max_position_embeddings", c.max_ctx},
      {"original_max_position_embeddings", c.rope_orig_ctx},
      {"partial_rotary_factor", static_cast<double>(c.rope_dim) * c.n_heads / c.d_model},
      {"rms_norm_eps", c.rms_eps},
      {"rope_theta", c.rope_theta},
      {"rope_scaling", {{"type", "longrope"}, {"long_factor", c.rope_factors_long}, {"short_factor", c.rope_factors_short}}},
      {"sliding_window", phi3_sliding_window(shape)},
      {"tie_word_embeddings", c.tie_embeddings},
      {"vocab_size", c.vocab_size},
      {"torch_dtype", dtype == DType::kF32 ? "float32" : dtype == DType::kF16 ? "float16" : "bfloat16"},
  };
  if (c.bos_id >= 0) j["bos_token_id"] = c.bos_id;
  if (!c.eos_ids.empty()) j["eos_token_id"] = c.eos_ids[0];
  const std::string path = dir + "/config.json";
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) throw Error(ErrorKind::kIo, "cannot write '" + path + "'");
}

void add_phi3_block_plan(const ModelConfig& c, int layer, std::vector<Plan>& p) {
  const std::string g = "blk." + std::to_string(layer) + ".", h = "model.layers." + std::to_string(layer) + ".";
  const int64_t d = c.d_model, q = c.q_dim(), kv = c.kv_dim(), ff = c.d_ff;
  p.push_back({g + "attn_norm.weight", h + "input_layernorm.weight", {d}, Kind::kNorm});
  p.push_back({g + "attn_qkv.weight", h + "self_attn.qkv_proj.weight", {q + 2 * kv, d}, Kind::kMatrix});
  p.push_back({g + "attn_output.weight", h + "self_attn.o_proj.weight", {d, q}, Kind::kMatrix});
  p.push_back({g + "ffn_norm.weight", h + "post_attention_layernorm.weight", {d}, Kind::kNorm});
  p.push_back({g + "ffn_up.weight", h + "mlp.gate_up_proj.weight", {2 * ff, d}, Kind::kMatrix});
  p.push_back({g + "ffn_down.weight", h + "mlp.down_proj.weight", {d, ff}, Kind::kMatrix});
}

}  // namespace anelm::tools
