// Gated DeltaNet (Qwen3.5's linear attention; shared/docs/qwen35-architecture.md §5.3): a fixed-size
// recurrent state per sequence and layer instead of a KV cache.
#pragma once

#include "engine/mixers/cpu_mixer.h"
#include "engine/mixers/deltanet_core.h"

namespace anelm::engine {

class DeltaNetMixer final : public CpuMixer {
 public:
  explicit DeltaNetMixer(const CpuContext& c);
  // Projections (q|k|v, z, beta, alpha) -> DeltaNetCore (causal conv + SiLU, per-head L2 norm of q
  // and k, gates, the delta rule per (sequence, value head) over the sequence's rows in order, gated
  // RMSNorm) -> output projection. A sequence at position 0 starts from a zero state.
  void mix(const LayerBatch& b) override;

 private:
  CpuContext c_;
  DeltaNetCore core_;
};

}  // namespace anelm::engine
