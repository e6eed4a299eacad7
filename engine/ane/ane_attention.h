// The CPU attention core the ANE path runs between a layer's two programs: RoPE on q/k, K/V store,
// causal GQA attention over the cache. Same math and kernels as CpuExecutor's attention.
#pragma once

#include "engine/kernels/kernels.h"
#include "engine/layer_executor.h"
#include "engine/model_config.h"
#include "engine/thread_pool.h"
#include "engine/weights.h"

namespace anelm::engine {

// Reads acts->q [n][q_dim], acts->k / acts->v [n][kv_dim] (projections incl. biases, before RoPE);
// rotates q and k in place for positions [pos, pos + n), stores K/V at those positions of
// `b.layer`, and writes acts->att [n][q_dim]: token t's heads attend over positions [0, pos + t].
// Query head h reads KV head h / group_size (HF repeat_kv).
void ane_attention_core(const ModelConfig& cfg, const kernels::KernelTable& k, ThreadPool& pool,
                        const LayerBatch& b);

// Qwen3/Qwen3.5: RMSNorm over each head of acts->q [n][H][HD] and acts->k [n][KVH][HD] with the
// layer's q_norm / k_norm, in place, before RoPE (as AttentionMixer); a no-op without them.
void ane_qk_head_norms(const ModelConfig& cfg, const LayerWeights& L, const kernels::KernelTable& k,
                       const LayerBatch& b);

// Qwen3.5's gated attention: acts->att [n][q_dim] *= sigmoid(gate), the gates program A emitted
// in acts->q_gate as [n][q_dim] (before the output projection in program B).
void ane_output_gate(const ModelConfig& cfg, const LayerBatch& b);

}  // namespace anelm::engine
