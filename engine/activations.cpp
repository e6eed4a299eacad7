// Sizes every forward-pass buffer once (see activations.h for shapes).
#include "engine/activations.h"

#include <algorithm>

#include "engine/kernels/kernels.h"
#include "engine/kernels/rope.h"

namespace anelm::engine {

Activations::Activations(const ModelConfig& cfg, int max_batch_, int ctx_, int n_threads)
    : max_batch(max_batch_), ctx(ctx_) {
  const auto B = static_cast<size_t>(max_batch);
  x.assign(B * cfg.d_model, 0.0f);
  xb.assign(B * cfg.d_model, 0.0f);
  q.assign(B * cfg.q_dim(), 0.0f);
  k.assign(B * cfg.kv_dim(), 0.0f);
  v.assign(B * cfg.kv_dim(), 0.0f);
  att.assign(B * cfg.q_dim(), 0.0f);
  proj.assign(B * cfg.d_model, 0.0f);
  gate.assign(B * cfg.d_ff, 0.0f);
  up.assign(B * cfg.d_ff, 0.0f);
  if (cfg.attn_output_gate) q_gate.assign(B * 2 * cfg.q_dim(), 0.0f);
  if (cfg.recurrent()) {
    const DeltaNetDims& dn = cfg.deltanet;
    dn_qkv.assign(B * dn.conv_dim(), 0.0f);
    dn_conv.assign(B * dn.conv_dim(), 0.0f);
    dn_z.assign(B * dn.value_dim(), 0.0f);
    dn_beta.assign(B * dn.n_v_heads, 0.0f);
    dn_g.assign(B * dn.n_v_heads, 0.0f);
    dn_out.assign(B * dn.value_dim(), 0.0f);
  }
  const int max_cols = std::max({cfg.d_model, cfg.q_dim(), cfg.d_ff, cfg.recurrent() ? cfg.deltanet.value_dim() : 0});
  xq.assign(B * static_cast<size_t>((max_cols + kQBlock - 1) / kQBlock), QBlock8{});
  xk.assign(B * static_cast<size_t>((max_cols + kQKBlock - 1) / kQKBlock), QBlockK{});
  scores.assign(static_cast<size_t>(std::max(n_threads, 1)) * ctx, 0.0f);
  attn_scratch_floats = kernels::attention_scratch_floats(cfg.head_dim);
  attn_scratch.assign(static_cast<size_t>(std::max(n_threads, 1) * attn_scratch_floats), 0.0f);
  logits.assign(static_cast<size_t>(cfg.vocab_size), 0.0f);
  rope_freq_[0] = kernels::rope_frequencies(cfg.rope_dim, cfg.rope_theta, cfg.rope_factors());
  if (!cfg.swa_layers.empty()) rope_freq_[1] = kernels::rope_frequencies(cfg.rope_dim, cfg.rope_theta_swa, nullptr);
  rope_mscale_ = cfg.rope_attn_factor;
  for (int i = 0; i < 2; ++i) {
    if (rope_freq_[i].empty()) continue;
    rope_cs_[i].assign(B * static_cast<size_t>(cfg.rope_dim), 0.0f);
    rope_pos_[i].assign(B, -1);
  }
}

const float* Activations::rope_cs(int t, int pos, bool swa) {
  const int i = swa ? 1 : 0;
  float* cs = rope_cs_[i].data() + static_cast<size_t>(t) * 2 * rope_freq_[i].size();
  if (rope_pos_[i][static_cast<size_t>(t)] != pos) {
    kernels::rope_cos_sin(pos, rope_freq_[i], cs);
    // LongRoPE's attention factor, as llama.cpp applies it: on the rotated dims only (through their
    // cosines and sines); the dims past rope_dim pass unscaled.
    if (rope_mscale_ != 1.0f) {
      for (size_t j = 0; j < 2 * rope_freq_[i].size(); ++j) cs[j] *= rope_mscale_;
    }
    rope_pos_[i][static_cast<size_t>(t)] = pos;
  }
  return cs;
}

}  // namespace anelm::engine
