// make_model for Gemma 3 (llama.cpp arch gemma3): the GGUF llama.cpp's converter writes (norm
// weights stored as 1 + w, as HF's Gemma3RMSNorm applies them; engine/family_gemma3.cpp), or the HF
// checkpoint it converts from (Gemma3ForCausalLM: norms stored as w, config.json).
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

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

void set_gemma3_hf_names(std::vector<Plan>& plan) {
  // GGUF name suffix -> HF name within the layer, for the norms the Llama plan names otherwise.
  static const std::pair<const char*, const char*> kNorms[] = {
      {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
      {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
  };
  for (Plan& p : plan) {
    if (p.kind == Kind::kNorm) p.hf_zero_centred = true;  // every Gemma3RMSNorm, q/k norms included
    if (p.gguf_name.rfind("blk.", 0) != 0) continue;
    const size_t dot = p.gguf_name.find('.', 4);
    const std::string rest = p.gguf_name.substr(dot + 1);
    for (const auto& [gguf, hf] : kNorms) {
      if (rest == gguf) p.hf_name = "model.layers." + p.gguf_name.substr(4, dot - 4) + "." + hf;
    }
  }
}

void write_gemma3_hf_config(const ModelConfig& c, DType dtype, const std::string& dir) {
  nlohmann::json layer_types = nlohmann::json::array();
  for (int l = 0; l < c.n_layers; ++l) layer_types.push_back(c.swa(l) ? "sliding_attention" : "full_attention");
  nlohmann::ordered_json j = {
      {"architectures", {"Gemma3ForCausalLM"}},
      {"model_type", "gemma3_text"},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"hidden_size", c.d_model},
      {"intermediate_size", c.d_ff},
      {"num_attention_heads", c.n_heads},
      {"num_hidden_layers", c.n_layers},
      {"num_key_value_heads", c.n_kv_heads},
      {"head_dim", c.head_dim},
      {"max_position_embeddings", c.max_ctx},
      {"query_pre_attn_scalar", c.head_dim},  // attention_scale 1/sqrt(head_dim), as the shapes set
      {"rms_norm_eps", c.rms_eps},
      {"rope_theta", c.rope_theta},
      {"rope_local_base_freq", c.rope_theta_swa},
      {"rope_scaling", c.rope_freq_factors.empty() ? nlohmann::ordered_json(nullptr)
                                                   : nlohmann::ordered_json{{"rope_type", "linear"}, {"factor", c.rope_freq_factors[0]}}},
      {"sliding_window", c.sliding_window},
      {"sliding_window_pattern", 6},
      {"layer_types", layer_types},
      {"final_logit_softcapping", nullptr},
      {"attn_logit_softcapping", nullptr},
      {"attention_bias", false},
      {"tie_word_embeddings", c.tie_embeddings},
      {"vocab_size", c.vocab_size},
      {"torch_dtype", dtype == DType::kF32 ? "float32" : dtype == DType::kF16 ? "float16" : "bfloat16"},
  };
  if (c.bos_id >= 0) j["bos_token_id"] = c.bos_id;
  if (!c.eos_ids.empty()) j["eos_token_id"] = c.eos_ids[0];
  const std::filesystem::path path = std::filesystem::path(dir) / "config.json";
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) throw Error(ErrorKind::kIo, "cannot write '" + path.string() + "'");
}

}  // namespace anelm::tools
