// The token-mixer half of a CPU decoder layer, one implementation per ModelConfig Mixer kind
// (attention, Gated DeltaNet): the executor normalises x, calls the layer's mixer, adds its output
// and runs the FFN. A new kind of layer is a new mixer file plus one line in CpuExecutor.
#pragma once

#include <cstdint>

#include "engine/kernels/kernels.h"
#include "engine/layer_executor.h"
#include "engine/model_config.h"
#include "engine/thread_pool.h"
#include "engine/weights.h"

namespace anelm::engine {

// Token count from which per-token elementwise work (norms, activation quantisation, SiLU, RoPE and
// KV stores) is split across the pool: a prefill batch of 128 tokens spent ~15% of its time in these
// loops on one thread while the others waited. Decode stays inline.
constexpr int kParallelTokens = 16;

// fn(t0, t1) over token ranges covering [0, n): on the pool for a prefill batch, inline otherwise.
template <typename Fn>
void for_tokens(ThreadPool& pool, int n, Fn&& fn) {
  if (n < kParallelTokens) {
    fn(0, n);
    return;
  }
  pool.parallel_for(n, [&](int64_t b, int64_t e, int) { fn(static_cast<int>(b), static_cast<int>(e)); }, 4, 2);
}

// rows y [n][dim] += bias (GPT-2's and Qwen2's projection biases); nothing without the bias.
inline void add_bias_rows(ThreadPool& pool, const kernels::KernelTable& k, const TensorView& bias, float* y, int n,
                          int dim) {
  if (bias.empty()) return;
  const auto* b = static_cast<const float*>(bias.data);
  for_tokens(pool, n, [&](int t0, int t1) {
    for (int64_t t = t0; t < t1; ++t) k.add(y + t * dim, b, dim, y + t * dim);
  });
}

// What every CPU mixer computes with (all borrowed from the executor, which outlives the mixers).
struct CpuContext {
  const ModelConfig& cfg;
  const ModelWeights& w;
  ThreadPool& pool;
  const kernels::KernelTable& k;
  int64_t inline_macs;
};

class CpuMixer {
 public:
  virtual ~CpuMixer() = default;
  // Reads the normalised input acts->xb [n][d_model] and writes the mixer's output (before the
  // residual add) to acts->proj [n][d_model]; updates each sequence's KV or recurrent state.
  virtual void mix(const LayerBatch& b) = 0;
};

}  // namespace anelm::engine
