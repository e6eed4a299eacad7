// The part of a Gated DeltaNet layer between its in-projections and its output projection: the
// causal conv, the L2 norms, the gates, the delta-rule recurrence over each sequence's state and the
// gated RMSNorm. The CPU mixer (deltanet_mixer.cpp) runs its projections around it; the ANE path
// (engine/ane) runs them as programs A and B around it.
#pragma once

#include <vector>

#include "engine/kernels/kernels.h"
#include "engine/layer_executor.h"
#include "engine/model_config.h"
#include "engine/thread_pool.h"
#include "engine/weights.h"

namespace anelm::engine {

class DeltaNetCore {
 public:
  // inline_macs: below this many multiply-adds a step runs on the calling thread.
  DeltaNetCore(const ModelConfig& cfg, const kernels::KernelTable& k, ThreadPool& pool, int64_t inline_macs);

  // Reads acts->dn_qkv [n][conv_dim], dn_z [n][value_dim], dn_beta and dn_g [n][N_v] (the raw
  // projections); updates each sequence's conv and delta-rule state of `b.layer` (zeroed for a
  // sequence at position 0) and writes acts->dn_out [n][value_dim]: RMSNorm(o_h; ssm_norm) *
  // SiLU(z_h) per value head, the output projection's input.
  void run(const DeltaNetWeights& w, const LayerBatch& b) const;

 private:
  const ModelConfig& cfg_;
  const kernels::KernelTable& k_;
  ThreadPool& pool_;
  int64_t inline_macs_;
  // The L2 norm as an RMSNorm (eps / d_k) with constant weights: 1/sqrt(d_k) for keys, and 1/d_k
  // for queries, which folds in their 1/sqrt(d_k) scale (llama.cpp computes it the same way).
  std::vector<float> key_scale_, query_scale_;
};

}  // namespace anelm::engine
