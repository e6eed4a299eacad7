// Model weights bound by role; views point into mapped files or owned buffers held by the loaded model.
#pragma once

#include <vector>

#include "engine/tensor.h"

namespace anelm::engine {

// Shapes in PyTorch order [out, in]; q_dim = n_heads*head_dim, kv_dim = n_kv_heads*head_dim.
struct LayerWeights {
  TensorView attn_norm;  // [d_model]
  TensorView wq;         // [q_dim, d_model]
  TensorView wk;         // [kv_dim, d_model]
  TensorView wv;         // [kv_dim, d_model]
  TensorView bq;         // [q_dim]   (empty unless qkv_bias)
  TensorView bk;         // [kv_dim]  (empty unless qkv_bias)
  TensorView bv;         // [kv_dim]  (empty unless qkv_bias)
  TensorView q_norm;     // [head_dim] (empty unless qk_norm)
  TensorView k_norm;     // [head_dim] (empty unless qk_norm)
  TensorView wo;         // [d_model, q_dim]
  TensorView ffn_norm;   // [d_model]
  TensorView w_gate;     // [d_ff, d_model]
  TensorView w_up;       // [d_ff, d_model]
  TensorView w_down;     // [d_model, d_ff]
};

struct ModelWeights {
  TensorView tok_embd;   // [vocab, d_model]
  TensorView out_norm;   // [d_model]
  TensorView lm_head;    // [vocab, d_model]; same memory as tok_embd when tied
  std::vector<LayerWeights> layers;
};

}  // namespace anelm::engine
