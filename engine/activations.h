// Every scratch buffer of a forward pass, sized once from the config, the max batch, ctx and threads.
#pragma once

#include <vector>

#include "engine/kernels/dtype.h"
#include "engine/model_config.h"

namespace anelm::engine {

// B = max_batch tokens per forward chunk. Nothing here grows after construction.
struct Activations {
  Activations(const ModelConfig& cfg, int max_batch, int ctx, int n_threads);

  int max_batch = 0;
  int ctx = 0;
  std::vector<float> x;      // [B][d_model] residual stream
  std::vector<float> xb;     // [B][d_model] normalised input of a sub-block
  std::vector<float> q;      // [B][q_dim]
  std::vector<float> k;      // [B][kv_dim]
  std::vector<float> v;      // [B][kv_dim]
  std::vector<float> att;    // [B][q_dim] attention output (heads concatenated)
  std::vector<float> proj;   // [B][d_model] output of wo / w_down before the residual add
  std::vector<float> gate;   // [B][d_ff] gate projection, then silu(gate) * up
  std::vector<float> up;     // [B][d_ff]
  std::vector<float> q_gate; // [B][2 * q_dim] gated attention's [query | gate] projection (attn_output_gate)
  // Gated DeltaNet layers (empty without them):
  std::vector<float> dn_qkv;   // [B][conv_dim] the q|k|v projection, the conv's input
  std::vector<float> dn_conv;  // [B][conv_dim] after conv + SiLU, then q and k L2-normalised
  std::vector<float> dn_z;     // [B][value_dim] output gate z
  std::vector<float> dn_beta;  // [B][n_v_heads] write strength (projection, then sigmoid)
  std::vector<float> dn_g;     // [B][n_v_heads] alpha projection, then the log-decay g
  std::vector<float> dn_out;   // [B][value_dim] delta-rule outputs, then gated-normed
  std::vector<QBlock8> xq;  // [B][max(d_model, q_dim, d_ff, value_dim) / 32] Q8 activations
  std::vector<QBlockK> xk;  // [B][max(d_model, q_dim, d_ff, value_dim) / 256] Q8_K activations (K-quant weights)
  std::vector<float> scores;         // [threads][ctx] attention scores, one row per thread
  int64_t attn_scratch_floats = 0;   // per thread: kernels::attention_scratch_floats(head_dim)
  std::vector<float> attn_scratch;   // [threads][attn_scratch_floats] attend_causal working set
  std::vector<float> logits;         // [vocab] logits of the last token

  // Row t's RoPE cosines and sines at position pos (see kernels::rope_cos_sin), computed on the
  // row's first layer and reused by the others while its position stays. Distinct rows may be
  // asked for from different threads. swa: the angles of the sliding-window layers (Gemma 3:
  // rope_theta_swa, unscaled).
  const float* rope_cs(int t, int pos, bool swa = false);

 private:
  // [0] the global layers' angles, [1] the sliding-window layers' (empty without them).
  std::vector<double> rope_freq_[2];  // [rope_dim / 2]
  float rope_mscale_ = 1.0f;          // ModelConfig::rope_attn_factor: scales every cosine and sine
  std::vector<float> rope_cs_[2];     // [B][rope_dim]
  std::vector<int> rope_pos_[2];      // [B] the position rope_cs_ holds for the row, -1: none
};

}  // namespace anelm::engine
