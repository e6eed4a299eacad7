// LayerExecutor over the CPU kernel table, plus the fused row-parallel linear used for the LM head.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kernels/kernels.h"
#include "engine/layer_executor.h"
#include "engine/mixers/attention_mixer.h"
#include "engine/mixers/deltanet_mixer.h"
#include "engine/model_config.h"
#include "engine/thread_pool.h"
#include "engine/weights.h"

namespace anelm::engine {

struct Activations;

// One output of a fused linear: y [n][w->rows()] = in [n][cols] x w^T.
struct LinearOut {
  const TensorView* w;
  float* y;
};

// Below this many multiply-adds a pool wake-up costs more than it saves: run on the caller.
constexpr int64_t kDefaultInlineMacs = 128 * 1024;

// Runs every LinearOut over the same input in one parallel_for across their concatenated rows (so
// Q/K/V or gate/up wake the pool once). Quantises `in` first into xq ([n][cols/32] QBlock8) when any
// weight uses_q8_activations, and into xk ([n][cols/256] QBlockK) when any uses_q8k_activations. Problems under inline_macs multiply-adds run inline on the caller.
void parallel_linear(ThreadPool& pool, const kernels::KernelTable& k, const float* in, int n,
                     int64_t cols, std::span<const LinearOut> outs, QBlock8* xq, QBlockK* xk,
                     int64_t inline_macs = kDefaultInlineMacs);

class CpuExecutor final : public LayerExecutor {
 public:
  // inline_macs: see parallel_linear (tests pass 0 to force every parallel path).
  CpuExecutor(const ModelConfig& cfg, const ModelWeights& weights, ThreadPool& pool,
              const kernels::KernelTable& kernels, int64_t inline_macs = kDefaultInlineMacs);
  const char* name() const override { return "cpu"; }
  void run_layer(const LayerBatch& batch) override;

 private:
  void scale_rows(float* x, int n, int d, float s);
  void add_residual(float* x, float* out, int n, int d);
  void post_norm(const TensorView& w, float* out, int n);
  void norm_rows(const float* w, const TensorView& bias, const float* x, int n, float* out);
  void ffn_ungated(const LayerWeights& L, Activations& a, int n);

  const ModelConfig& cfg_;
  const ModelWeights& w_;
  ThreadPool& pool_;
  const kernels::KernelTable& k_;
  int64_t inline_macs_;
  AttentionMixer attention_;
  DeltaNetMixer deltanet_;
  std::vector<CpuMixer*> mixers_;  // [n_layers] the mixer of each layer's kind
};

}  // namespace anelm::engine
