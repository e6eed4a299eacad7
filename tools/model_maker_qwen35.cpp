// make_model for Qwen3.5 (llama.cpp arch qwen35): Gated DeltaNet blocks with a gated attention block
// every 4th, stored as llama.cpp's converter writes them (shared/docs/qwen35-architecture.md §2, §4),
// or as the HF checkpoint it converts from (§4.3-4.4: zero-centred norms, A_log, grouped value heads).
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "tools/model_maker_plan.h"

namespace anelm::tools {

using namespace engine;

ModelConfig qwen35_shape_config(const std::string& shape, int layers) {
  ModelConfig c;
  c.arch = Arch::kQwen35;
  DeltaNetDims& dn = c.deltanet;
  dn.d_k = dn.d_v = 128;
  dn.conv_kernel = 4;
  c.head_dim = 256;
  if (shape == "tiny") {  // the peer kit's tiny: N_v > N_k exercises the tiled value-head order
    c.n_layers = 4, c.d_model = 256, c.d_ff = 512, c.n_heads = 2, c.n_kv_heads = 1;
    dn.n_k_heads = 2, dn.n_v_heads = 4;
  } else if (shape == "qwen3.5-0.8b") {
    c.n_layers = 24, c.d_model = 1024, c.d_ff = 3584, c.n_heads = 8, c.n_kv_heads = 2;
    dn.n_k_heads = dn.n_v_heads = 16;
  } else if (shape == "qwen3.5-2b") {
    c.n_layers = 24, c.d_model = 2048, c.d_ff = 6144, c.n_heads = 8, c.n_kv_heads = 2;
    dn.n_k_heads = dn.n_v_heads = 16;
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown qwen35 shape '" + shape + "' (tiny | qwen3.5-0.8b | qwen3.5-2b)");
  }
  c.max_ctx = 262144;
  c.rope_dim = 64;  // partial_rotary_factor 0.25
  c.rope_theta = 10000000.0f;
  c.rms_eps = 1e-6f;
  c.qk_norm = true;
  c.attn_output_gate = true;
  c.tie_embeddings = true;
  if (layers > 0) c.n_layers = layers;
  for (int l = 0; l < c.n_layers; ++l) c.mixers.push_back((l + 1) % 4 ? Mixer::kDeltaNet : Mixer::kAttention);
  return c;
}

void add_qwen35_block_plan(const ModelConfig& c, int layer, std::vector<Plan>& p) {
  const std::string g = "blk." + std::to_string(layer) + ".";
  const std::string h = "model.language_model.layers." + std::to_string(layer) + ".";
  const int64_t d = c.d_model, ff = c.d_ff, q = c.q_dim(), kv = c.kv_dim();
  const auto norm = [&](const std::string& gguf, const std::string& hf, int64_t n, bool zero_centred = true) {
    Plan pl{g + gguf, h + hf, {n}, Kind::kNorm};
    pl.hf_zero_centred = zero_centred;
    p.push_back(pl);
  };
  const auto heads = [&](HfValueHeads::Axis axis, int64_t at, int64_t size) {
    p.back().hf_heads = {axis, at, size};
  };
  norm("attn_norm.weight", "input_layernorm.weight", d);
  if (c.mixer(layer) == Mixer::kDeltaNet) {
    const DeltaNetDims& dn = c.deltanet;
    const int64_t cd = dn.conv_dim(), vd = dn.value_dim(), nv = dn.n_v_heads, v_at = 2 * dn.key_dim();
    p.push_back({g + "attn_qkv.weight", h + "linear_attn.in_proj_qkv.weight", {cd, d}, Kind::kMatrix});
    heads(HfValueHeads::kRows, v_at, dn.d_v);
    p.push_back({g + "attn_gate.weight", h + "linear_attn.in_proj_z.weight", {vd, d}, Kind::kMatrix});
    heads(HfValueHeads::kRows, 0, dn.d_v);
    p.push_back({g + "ssm_beta.weight", h + "linear_attn.in_proj_b.weight", {nv, d}, Kind::kMatrix});
    heads(HfValueHeads::kRows, 0, 1);
    p.push_back({g + "ssm_alpha.weight", h + "linear_attn.in_proj_a.weight", {nv, d}, Kind::kMatrix});
    heads(HfValueHeads::kRows, 0, 1);
    p.push_back({g + "ssm_conv1d.weight", h + "linear_attn.conv1d.weight", {cd, dn.conv_kernel}, Kind::kConv});
    heads(HfValueHeads::kRows, v_at, dn.d_v);
    p.push_back({g + "ssm_dt.bias", h + "linear_attn.dt_bias", {nv}, Kind::kBias});
    heads(HfValueHeads::kRows, 0, 1);
    p.push_back({g + "ssm_a", h + "linear_attn.A_log", {nv}, Kind::kDecay});
    heads(HfValueHeads::kRows, 0, 1);
    norm("ssm_norm.weight", "linear_attn.norm.weight", dn.d_v, false);
    p.push_back({g + "ssm_out.weight", h + "linear_attn.out_proj.weight", {d, vd}, Kind::kMatrix});
    heads(HfValueHeads::kCols, 0, dn.d_v);
  } else {
    // per head [query | gate]
    p.push_back({g + "attn_q.weight", h + "self_attn.q_proj.weight", {2 * q, d}, Kind::kMatrix});
    p.push_back({g + "attn_k.weight", h + "self_attn.k_proj.weight", {kv, d}, Kind::kMatrix});
    p.push_back({g + "attn_v.weight", h + "self_attn.v_proj.weight", {kv, d}, Kind::kMatrix});
    norm("attn_q_norm.weight", "self_attn.q_norm.weight", c.head_dim);
    norm("attn_k_norm.weight", "self_attn.k_norm.weight", c.head_dim);
    p.push_back({g + "attn_output.weight", h + "self_attn.o_proj.weight", {d, q}, Kind::kMatrix});
  }
  norm("post_attention_norm.weight", "post_attention_layernorm.weight", d);
  p.push_back({g + "ffn_gate.weight", h + "mlp.gate_proj.weight", {ff, d}, Kind::kMatrix});
  p.push_back({g + "ffn_up.weight", h + "mlp.up_proj.weight", {ff, d}, Kind::kMatrix});
  p.push_back({g + "ffn_down.weight", h + "mlp.down_proj.weight", {d, ff}, Kind::kMatrix});
}

int64_t qwen35_gguf_index(const HfValueHeads& hv, const DeltaNetDims& dn, int64_t i) {
  if (hv.axis == HfValueHeads::kNone || i < hv.at) return i;
  // HF value head j (grouped: key head j / r) is the GGUF's head (j % r) * N_k + j / r (tiled).
  const int64_t r = dn.n_v_heads / dn.n_k_heads, j = (i - hv.at) / hv.size, within = (i - hv.at) % hv.size;
  return hv.at + ((j % r) * dn.n_k_heads + j / r) * hv.size + within;
}

void write_qwen35_hf_config(const ModelConfig& c, DType dtype, const std::string& dir) {
  const DeltaNetDims& dn = c.deltanet;
  nlohmann::json layer_types = nlohmann::json::array();
  for (int l = 0; l < c.n_layers; ++l) layer_types.push_back(c.mixer(l) == Mixer::kDeltaNet ? "linear_attention" : "full_attention");
  nlohmann::json text = {
      {"model_type", "qwen3_5_text"}, {"hidden_size", c.d_model}, {"intermediate_size", c.d_ff},
      {"num_hidden_layers", c.n_layers}, {"num_attention_heads", c.n_heads}, {"num_key_value_heads", c.n_kv_heads},
      {"head_dim", c.head_dim}, {"vocab_size", c.vocab_size}, {"rms_norm_eps", c.rms_eps},
      {"max_position_embeddings", c.max_ctx}, {"hidden_act", "silu"}, {"attn_output_gate", c.attn_output_gate},
      {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", c.rope_theta},
                           {"partial_rotary_factor", static_cast<double>(c.rope_dim) / c.head_dim}}},
      {"linear_num_key_heads", dn.n_k_heads}, {"linear_num_value_heads", dn.n_v_heads},
      {"linear_key_head_dim", dn.d_k}, {"linear_value_head_dim", dn.d_v}, {"linear_conv_kernel_dim", dn.conv_kernel},
      {"full_attention_interval", 4}, {"layer_types", layer_types}, {"tie_word_embeddings", c.tie_embeddings},
      {"dtype", dtype == DType::kF32 ? "float32" : dtype == DType::kF16 ? "float16" : "bfloat16"}};
  if (c.bos_id >= 0) text["bos_token_id"] = c.bos_id;
  if (!c.eos_ids.empty()) text["eos_token_id"] = c.eos_ids[0];
  const nlohmann::json cfg = {{"architectures", {"Qwen3_5ForConditionalGeneration"}}, {"model_type", "qwen3_5"},
                              {"tie_word_embeddings", c.tie_embeddings}, {"text_config", text}};
  const std::filesystem::path path = std::filesystem::path(dir) / "config.json";
  std::ofstream out(path);
  out << cfg.dump(2) << "\n";
  if (!out) throw Error(ErrorKind::kIo, "cannot write '" + path.string() + "'");
}

void add_qwen35_hparams(const ModelConfig& c, GgufWriter& w) {
  const std::string a = "qwen35.";
  const DeltaNetDims& dn = c.deltanet;
  w.add_u32(a + "ssm.conv_kernel", static_cast<uint32_t>(dn.conv_kernel));
  w.add_u32(a + "ssm.state_size", static_cast<uint32_t>(dn.d_k));
  w.add_u32(a + "ssm.group_count", static_cast<uint32_t>(dn.n_k_heads));
  w.add_u32(a + "ssm.time_step_rank", static_cast<uint32_t>(dn.n_v_heads));
  w.add_u32(a + "ssm.inner_size", static_cast<uint32_t>(dn.value_dim()));
  w.add_u32(a + "full_attention_interval", 4);
  w.add_i32_array(a + "rope.dimension_sections", {11, 11, 10, 0});
  std::vector<bool> recurrent;
  for (int l = 0; l < c.n_layers; ++l) recurrent.push_back(c.mixer(l) == Mixer::kDeltaNet);
  w.add_bool_array(a + "attention.recurrent_layers", recurrent);
}

}  // namespace anelm::tools
