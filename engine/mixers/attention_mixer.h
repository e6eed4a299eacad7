// Causal grouped-query attention over each sequence's KV cache: Q/K/V projections (+ bias), per-head
// Q/K RMSNorm, RoPE, KV stores, blocked causal attention, and Qwen3.5's sigmoid output gate.
#pragma once

#include "engine/mixers/cpu_mixer.h"

namespace anelm::engine {

class AttentionMixer final : public CpuMixer {
 public:
  explicit AttentionMixer(const CpuContext& c) : c_(c) {}
  void mix(const LayerBatch& b) override;
  // RoPE (not on NoPE layers), KV stores (a windowed layer's ring) and causal attention (windowed
  // on local layers) of acts->q/k/v into acts->att: the part between the projections, which the
  // ANE path runs between its programs for GPT-2 and Gemma 3.
  void attend(const LayerBatch& b);

 private:
  CpuContext c_;
};

}  // namespace anelm::engine
