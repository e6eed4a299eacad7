// Causal grouped-query attention over each sequence's KV cache: Q/K/V projections (+ bias), per-head
// Q/K RMSNorm, RoPE, KV stores, blocked causal attention, and Qwen3.5's sigmoid output gate.
#pragma once

#include "engine/mixers/cpu_mixer.h"

namespace anelm::engine {

class AttentionMixer final : public CpuMixer {
 public:
  explicit AttentionMixer(const CpuContext& c) : c_(c) {}
  void mix(const LayerBatch& b) override;

 private:
  void attend(const LayerBatch& b);
  CpuContext c_;
};

}  // namespace anelm::engine
