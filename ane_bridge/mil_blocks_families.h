// Fused layer programs of the families whose layers differ from Llama's (issue 25): GPT-2
// (LayerNorm with bias, biased projections, tanh-GELU FFN) and Gemma 3 (post-attention and
// post-FFN RMSNorms, GeGLU). Same I/O contract as mil_blocks.h's programs A, B and LM head, so
// the engine runs them through the same executors.
#pragma once

#include <span>

#include "ane_bridge/mil_blocks.h"

namespace anelm::ane {

// GPT-2's program A: LayerNorm(x) * gain + bias, then q | k | v (+ biases). Input x [1, D, 1, S];
// output y [1, Qd + 2 KVd, 1, S] with segments q, k, v. The gain is folded into the rows of Wqkv
// and the norm's bias into the projection's bias (b + W . norm_bias, in fp64), so the block costs
// the RMSNorm block's ops plus the mean (reduce_sum, mul, sub).
Status build_ln_attn_input_block(const LayerShapes& shapes, const AttnInputWeights& w,
                                 std::span<const float> norm_bias, const BlockOptions& opts,
                                 BlockProgram* out);

// GPT-2's program B: h = x + Wo a + bo; n = LayerNorm(h) * gain + bias;
// y = h + Wd gelu_tanh(Wu n + bu) + bd (update_only: y - x). Input x [1, Qd + D, 1, S] (attention
// output, residual), output y [1, D, 1, S]. shapes.d_ff is the up projection's rows.
struct LnFfnBlockWeights {
  LinearWeights o;                   // [D][Qd] + [D]
  std::span<const float> norm_gain;  // [D] ln_2 weight
  std::span<const float> norm_bias;  // [D] ln_2 bias
  LinearWeights up;                  // [F][D] + [F]
  LinearWeights down;                // [D][F] + [D]
};
Status build_ln_ffn_block(const LayerShapes& shapes, const LnFfnBlockWeights& w,
                          const BlockOptions& opts, BlockProgram* out);

// LM-head chunk after a final LayerNorm (GPT-2): logits = W (LayerNorm(x) * gain + bias) =
// (W diag(gain)) LayerNorm(x) + W . bias; the second term is a per-row bias of the chunk.
Status build_ln_lm_head_chunk(const LayerShapes& shapes, std::span<const float> head_weight,
                              std::int64_t vocab, const LmHeadChunk& chunk,
                              std::span<const float> norm_gain, std::span<const float> norm_bias,
                              const BlockOptions& opts, BlockProgram* out);

// Gemma 3's program B: o = Wo a; h = x + RMSNorm(o) * post_attn; n = RMSNorm(h) * ffn_norm;
// f = Wd (gelu_tanh(Wg n) * Wu n); y = h + RMSNorm(f) * post_ffn (update_only: y - x). The norm
// gains are the GGUF's (already 1 + w). Each norm has its own prescale: opts.rms_prescale for the
// pre-FFN norm, the two below for the post-norms, whose inputs (a projection's output) are not the
// residual stream's size. The post-norm gains multiply explicitly (they feed the residual, not a
// projection).
struct PostNormFfnBlockWeights {
  LinearWeights o;                        // [D][Qd]
  std::span<const float> post_attn_gain;  // [D] post_attention_norm
  std::span<const float> norm_gain;       // [D] ffn_norm (pre-FFN)
  LinearWeights gate;                     // [F][D]
  LinearWeights up;                       // [F][D]
  LinearWeights down;                     // [D][F]
  std::span<const float> post_ffn_gain;   // [D] post_ffw_norm
};
struct PostNormPrescales {
  double post_attn = 1.0;
  double post_ffn = 1.0;
};
Status build_post_norm_ffn_block(const LayerShapes& shapes, const PostNormFfnBlockWeights& w,
                                 const PostNormPrescales& ps, const BlockOptions& opts,
                                 BlockProgram* out);

}  // namespace anelm::ane
