// The math of each ANE program in fp32 storage with double accumulation, straight from the
// dequantised weights: the independent reference `anelm compile --verify` checks the programs
// against (no fp16 rounding, no prescale, no folded gains, no kernel tables).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ane/ane_programs.h"
#include "engine/model_config.h"

namespace anelm::engine::ane_reference {

// Program A: rows [n][D] -> the stacked projections of RMSNorm(x) * attn_norm (GPT-2: LayerNorm
// with attn_norm_b) (+ biases):
// attention q | k | v (| gate), Gated DeltaNet qkv | z | beta | alpha.
std::vector<float> attn_input(const ModelConfig& c, const ane_programs::LayerF32& w,
                              const float* x, int n);

// Program B: (att [n][M], x [n][D]) -> [n][D] with M the mixer width (w.wo is [D][M]):
// h = x + Wo att; y = h + Wd (silu(Wg hn) * Wu hn)
// with hn = RMSNorm(h) * ffn_norm; update_only: y - x (what BlockOptions::update_only returns).
// GPT-2: biases on Wo, Wu, Wd, LayerNorm with bias, y = h + Wd gelu(Wu hn + bu) + bd. Gemma 3:
// Wo att and the FFN output RMSNormed (attn_post_norm, ffn_post_norm) before their residual adds,
// GeGLU (tanh-GELU gate).
std::vector<float> ffn(const ModelConfig& c, const ane_programs::LayerF32& w, const float* att,
                       const float* x, int n, bool update_only);

// LM-head chunk: [n][D] -> [n][rows] = head_rows (rows x D) . RMSNorm(x) * out_norm (GPT-2:
// LayerNorm(x) * out_norm + out_norm_b).
std::vector<float> lm_head(const ModelConfig& c, const std::vector<float>& head_rows,
                           std::int64_t rows, const std::vector<float>& out_norm, const float* x,
                           int n, const std::vector<float>& out_norm_b = {});

}  // namespace anelm::engine::ane_reference
