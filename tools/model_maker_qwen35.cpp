// make_model for Qwen3.5 (llama.cpp arch qwen35): Gated DeltaNet blocks with a gated attention block
// every 4th, stored as llama.cpp's converter writes them (shared/docs/qwen35-architecture.md §2, §4).
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
  const int64_t d = c.d_model, ff = c.d_ff, q = c.q_dim(), kv = c.kv_dim();
  p.push_back({g + "attn_norm.weight", "", {d}, Kind::kNorm});
  if (c.mixer(layer) == Mixer::kDeltaNet) {
    const DeltaNetDims& dn = c.deltanet;
    const int64_t cd = dn.conv_dim(), vd = dn.value_dim(), nv = dn.n_v_heads;
    p.push_back({g + "attn_qkv.weight", "", {cd, d}, Kind::kMatrix});
    p.push_back({g + "attn_gate.weight", "", {vd, d}, Kind::kMatrix});
    p.push_back({g + "ssm_beta.weight", "", {nv, d}, Kind::kMatrix});
    p.push_back({g + "ssm_alpha.weight", "", {nv, d}, Kind::kMatrix});
    p.push_back({g + "ssm_conv1d.weight", "", {cd, dn.conv_kernel}, Kind::kConv});
    p.push_back({g + "ssm_dt.bias", "", {nv}, Kind::kBias});
    p.push_back({g + "ssm_a", "", {nv}, Kind::kDecay});
    p.push_back({g + "ssm_norm.weight", "", {dn.d_v}, Kind::kNorm});
    p.push_back({g + "ssm_out.weight", "", {d, vd}, Kind::kMatrix});
  } else {
    p.push_back({g + "attn_q.weight", "", {2 * q, d}, Kind::kMatrix});  // per head [query | gate]
    p.push_back({g + "attn_k.weight", "", {kv, d}, Kind::kMatrix});
    p.push_back({g + "attn_v.weight", "", {kv, d}, Kind::kMatrix});
    p.push_back({g + "attn_q_norm.weight", "", {c.head_dim}, Kind::kNorm});
    p.push_back({g + "attn_k_norm.weight", "", {c.head_dim}, Kind::kNorm});
    p.push_back({g + "attn_output.weight", "", {d, q}, Kind::kMatrix});
  }
  p.push_back({g + "post_attention_norm.weight", "", {d}, Kind::kNorm});
  p.push_back({g + "ffn_gate.weight", "", {ff, d}, Kind::kMatrix});
  p.push_back({g + "ffn_up.weight", "", {ff, d}, Kind::kMatrix});
  p.push_back({g + "ffn_down.weight", "", {d, ff}, Kind::kMatrix});
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
