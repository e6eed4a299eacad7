// Model weights bound by role; views point into mapped files or owned buffers held by the loaded model.
#pragma once

#include <vector>

#include "engine/tensor.h"

namespace anelm::engine {

// Gated DeltaNet mixer (Qwen3.5), in the GGUF's tiled value-head order (DeltaNetDims).
struct DeltaNetWeights {
  TensorView qkv;    // [conv_dim, d_model]  rows [q | k | v]
  TensorView gate;   // [value_dim, d_model] z, the output gate
  TensorView beta;   // [n_v_heads, d_model]
  TensorView alpha;  // [n_v_heads, d_model]
  TensorView conv;   // [conv_dim, conv_kernel] f32; tap conv_kernel - 1 multiplies the current input
  TensorView dt;     // [n_v_heads] f32 bias of the decay's softplus
  TensorView a;      // [n_v_heads] f32 -exp(A_log)
  TensorView norm;   // [d_v] f32 gated RMSNorm weight, shared by the heads
  TensorView out;    // [d_model, value_dim]
};

// Shapes in PyTorch order [out, in]; q_dim = n_heads*head_dim, kv_dim = n_kv_heads*head_dim.
// An attention layer binds wq..wo; a DeltaNet layer binds `deltanet` instead.
struct LayerWeights {
  TensorView attn_norm;  // [d_model]
  TensorView wq;         // [q_dim, d_model]; attn_output_gate: [2 * q_dim, d_model], per head [query | gate]
  TensorView wk;         // [kv_dim, d_model]
  TensorView wv;         // [kv_dim, d_model]
  TensorView bq;         // [q_dim]   (empty unless qkv_bias)
  TensorView bk;         // [kv_dim]  (empty unless qkv_bias)
  TensorView bv;         // [kv_dim]  (empty unless qkv_bias)
  TensorView q_norm;     // [head_dim] (empty unless qk_norm)
  TensorView k_norm;     // [head_dim] (empty unless qk_norm)
  TensorView wo;         // [d_model, q_dim]
  TensorView attn_post_norm;  // [d_model] on the mixer's output (empty unless post_norms: Gemma 3)
  TensorView ffn_norm;   // [d_model]
  TensorView w_gate;     // [d_ff, d_model]
  TensorView w_up;       // [d_ff, d_model]
  TensorView w_down;     // [d_model, d_ff]
  TensorView ffn_post_norm;   // [d_model] on the FFN's output (empty unless post_norms)
  // GPT-2's biases (empty for every other family): the LayerNorms', the output projection's, the FFN's.
  TensorView attn_norm_b;  // [d_model]
  TensorView bo;           // [d_model]
  TensorView ffn_norm_b;   // [d_model]
  TensorView b_up;         // [d_ff]
  TensorView b_down;       // [d_model]
  DeltaNetWeights deltanet;
};

struct ModelWeights {
  TensorView tok_embd;   // [vocab, d_model]
  TensorView out_norm;   // [d_model]
  TensorView lm_head;    // [vocab, d_model]; same memory as tok_embd when tied
  TensorView out_norm_b; // [d_model] LayerNorm bias (GPT-2; empty otherwise)
  TensorView pos_embd;   // [max_ctx, d_model] learned positions (GPT-2; empty otherwise)
  TensorView cls_out;    // [n_cls_out, d_model] a reranker's classifier head (empty otherwise)
  TensorView cls_out_b;  // [n_cls_out] its bias (optional)
  // BERT: the LayerNorm on the input embeddings, and the token-type embeddings (row 0 is added).
  TensorView embd_norm;   // [d_model]
  TensorView embd_norm_b; // [d_model]
  TensorView type_embd;   // [n_token_types, d_model]
  std::vector<LayerWeights> layers;
};

}  // namespace anelm::engine
