// Gated DeltaNet (Qwen3.5's linear attention; shared/docs/qwen35-architecture.md §5.3): a fixed-size
// recurrent state per sequence and layer instead of a KV cache.
#pragma once

#include <vector>

#include "engine/mixers/cpu_mixer.h"

namespace anelm::engine {

class DeltaNetMixer final : public CpuMixer {
 public:
  explicit DeltaNetMixer(const CpuContext& c);
  // Projections (q|k|v, z, beta, alpha) -> causal conv + SiLU -> per-head L2 norm of q and k ->
  // gates -> the delta rule per (sequence, value head) over the sequence's rows in order -> gated
  // RMSNorm -> output projection. A sequence at position 0 starts from a zero state.
  void mix(const LayerBatch& b) override;

 private:
  CpuContext c_;
  // The L2 norm as an RMSNorm (eps / d_k) with constant weights: 1/sqrt(d_k) for keys, and 1/d_k
  // for queries, which folds in their 1/sqrt(d_k) scale (llama.cpp computes it the same way).
  std::vector<float> key_scale_, query_scale_;
};

}  // namespace anelm::engine
