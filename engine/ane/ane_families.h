// The ANE programs of the families whose layers are not Llama's (issue 25): GPT-2 (LayerNorms
// with biases, biased projections, tanh-GELU FFN, a final LayerNorm before the tied head) and
// Gemma 3 (post-attention and post-FFN norms, GeGLU). Program A/B and head-chunk I/O is the same
// as every other family's, so AneLayer/AneHead, --verify, the self-check and the export run them
// unchanged; what differs on the CPU between A and B (no RoPE / windowed attention with the KV
// ring) is the CPU attention mixer's own code (ane_executor.cpp).
#pragma once

#include <vector>

#include "ane_bridge/mil_blocks.h"
#include "engine/ane/ane_calibrate.h"
#include "engine/ane/ane_programs.h"
#include "engine/model_config.h"
#include "engine/weights.h"

namespace anelm::engine::ane_programs {

// The model's layers are built here rather than by build_layer_block's Llama path.
bool ane_family_layers(const ModelConfig& cfg);

// GPT-2's or Gemma 3's program A (ffn == false) or B of `layer` for bucket `seq`.
ane::BlockProgram build_family_layer_block(const ModelConfig& cfg, const LayerF32& w, int layer,
                                           bool ffn, std::int64_t seq, bool int8,
                                           const AnePrescales& ps, bool update_only);

// GPT-2's LM-head chunk `index`: the final LayerNorm (out_norm, w.out_norm_b) fused.
ane::BlockProgram build_ln_head_block(const ModelConfig& cfg, const ModelWeights& w,
                                      const std::vector<float>& out_norm,
                                      const ane::LmHeadChunk& c, int index, bool int8,
                                      double prescale);

}  // namespace anelm::engine::ane_programs
