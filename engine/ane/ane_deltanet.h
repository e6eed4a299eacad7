// The CPU part of a Gated DeltaNet layer on the ANE path (Qwen3.5): program A computed the four
// in-projections, program B runs ssm_out + FFN; between them the causal conv, the L2 norms, the
// gates, the delta-rule recurrence over each sequence's state and the gated RMSNorm stay here,
// through the same kernels (KernelTable::conv_silu, delta_rule, rmsnorm, silu_mul) and in the same
// order as engine/mixers/deltanet_mixer.cpp.
#pragma once

#include <vector>

#include "engine/kernels/kernels.h"
#include "engine/layer_executor.h"
#include "engine/model_config.h"
#include "engine/thread_pool.h"
#include "engine/weights.h"

namespace anelm::engine {

class AneDeltaNetCore {
 public:
  AneDeltaNetCore(const ModelConfig& cfg, const kernels::KernelTable& k, ThreadPool& pool);

  // Reads acts->dn_qkv [n][conv_dim], dn_z [n][value_dim], dn_beta and dn_g [n][N_v] (the raw
  // projections); updates each sequence's conv and delta-rule state of `b.layer` (zeroed for a
  // sequence at position 0) and writes acts->dn_out [n][value_dim]: RMSNorm(o_h; ssm_norm) *
  // SiLU(z_h) per value head, program B's input.
  void run(const DeltaNetWeights& w, const LayerBatch& b) const;

 private:
  const ModelConfig& cfg_;
  const kernels::KernelTable& k_;
  ThreadPool& pool_;
  // The L2 norm as an RMSNorm (eps / d_k) with constant weights, as the CPU mixer: 1/sqrt(d_k) for
  // keys, 1/d_k for queries (folding in their 1/sqrt(d_k) scale).
  std::vector<float> key_scale_, query_scale_;
};

}  // namespace anelm::engine
