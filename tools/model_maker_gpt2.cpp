// make_model for GPT-2 (llama.cpp arch gpt2): learned positions, LayerNorms with biases, fused
// attn_qkv with bias, an ungated GELU FFN with biases, written as llama.cpp's GPT2Model converter
// writes them (engine/family_gpt2.cpp), or the HF checkpoint it converts from (GPT2LMHeadModel: Conv1D
// weights [in, out], config.json).
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/families.h"
#include "tools/model_maker_plan.h"

namespace anelm::tools {

using namespace engine;

ModelConfig gpt2_shape_config(const std::string& shape, int layers) {
  ModelConfig c;
  c.arch = Arch::kGpt2;
  if (shape == "tiny") {
    // Rows a multiple of 256 (K-quants apply to every matrix); a 512-position table, so the parity
    // fixture's longest prompt sits near its end and the tests can step past it cheaply.
    c.n_layers = 3, c.d_model = 256, c.n_heads = 4, c.head_dim = 64, c.d_ff = 1024;
    c.max_ctx = 512;
  } else if (shape == "gpt2-124m") {  // openai-community/gpt2 config.json
    c.n_layers = 12, c.d_model = 768, c.n_heads = 12, c.head_dim = 64, c.d_ff = 3072;
    c.max_ctx = 1024;
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown gpt2 shape '" + shape + "' (tiny | gpt2-124m)");
  }
  if (layers > 0) c.n_layers = layers;
  c.n_kv_heads = c.n_heads;
  c.rope_dim = c.head_dim;
  c.rms_eps = 1e-5f;  // HF layer_norm_epsilon
  c.tie_embeddings = true;  // GPT2LMHeadModel ties lm_head to wte; the converter writes no output.weight
  c.layer_norm = true;
  c.gated_ffn = false;
  c.ffn_act = FfnAct::kGeluTanh;
  c.learned_positions = true;
  c.qkv_bias = true;
  c.proj_bias = true;
  c.nope_layers.assign(static_cast<size_t>(c.n_layers), true);
  return c;
}

void add_gpt2_block_plan(const ModelConfig& c, int layer, std::vector<Plan>& plan) {
  const int64_t d = c.d_model, qkv = c.q_dim() + 2 * c.kv_dim(), ff = c.d_ff;
  const std::string g = "blk." + std::to_string(layer) + ".";
  plan.push_back({g + "attn_norm.weight", "", {d}, Kind::kNorm});
  plan.push_back({g + "attn_norm.bias", "", {d}, Kind::kBias});
  plan.push_back({g + "attn_qkv.weight", "", {qkv, d}, Kind::kMatrix});
  plan.push_back({g + "attn_qkv.bias", "", {qkv}, Kind::kBias});
  plan.push_back({g + "attn_output.weight", "", {d, c.q_dim()}, Kind::kMatrix});
  plan.push_back({g + "attn_output.bias", "", {d}, Kind::kBias});
  plan.push_back({g + "ffn_norm.weight", "", {d}, Kind::kNorm});
  plan.push_back({g + "ffn_norm.bias", "", {d}, Kind::kBias});
  plan.push_back({g + "ffn_up.weight", "", {ff, d}, Kind::kMatrix});
  plan.push_back({g + "ffn_up.bias", "", {ff}, Kind::kBias});
  plan.push_back({g + "ffn_down.weight", "", {d, ff}, Kind::kMatrix});
  plan.push_back({g + "ffn_down.bias", "", {d}, Kind::kBias});
}

void set_gpt2_hf_names(std::vector<Plan>& plan) {
  for (Plan& p : plan) {
    const std::optional<Gpt2HfName> hf = gpt2_hf_name(p.gguf_name);
    if (!hf) throw Error(ErrorKind::kInternal, "make_model: no GPT-2 HF name for '" + p.gguf_name + "'");
    p.hf_name = hf->name;
    p.hf_transposed = hf->conv1d;
  }
}

void write_gpt2_hf_config(const ModelConfig& c, DType dtype, const std::string& dir) {
  nlohmann::ordered_json j = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"activation_function", "gelu_new"},
      {"n_embd", c.d_model},
      {"n_head", c.n_heads},
      {"n_layer", c.n_layers},
      {"n_positions", c.max_ctx},
      {"n_ctx", c.max_ctx},
      {"n_inner", c.d_ff == 4 * c.d_model ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.d_ff)},
      {"layer_norm_epsilon", c.rms_eps},
      {"scale_attn_weights", true},
      {"tie_word_embeddings", true},
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
