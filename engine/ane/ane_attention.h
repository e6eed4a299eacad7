// The CPU attention core the ANE path runs between a layer's two programs: RoPE on q/k, K/V store,
// causal GQA attention over the cache. Same math and kernels as CpuExecutor's attention.
#pragma once

#include "engine/kernels/kernels.h"
#include "engine/layer_executor.h"
#include "engine/model_config.h"
#include "engine/thread_pool.h"

namespace anelm::engine {

// Reads acts->q [n][q_dim], acts->k / acts->v [n][kv_dim] (projections incl. biases, before RoPE);
// rotates q and k in place for positions [pos, pos + n), stores K/V at those positions of
// `b.layer`, and writes acts->att [n][q_dim]: token t's heads attend over positions [0, pos + t].
// Query head h reads KV head h / group_size (HF repeat_kv).
void ane_attention_core(const ModelConfig& cfg, const kernels::KernelTable& k, ThreadPool& pool,
                        const LayerBatch& b);

}  // namespace anelm::engine
