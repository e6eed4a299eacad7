// Start-up calibration of the ANE path's RMSNorm prescale: one short CPU forward measures each
// layer's residual-stream magnitude, from which every program gets its own power-of-two prescale.
#pragma once

#include <vector>

#include "engine/kernels/kernels.h"
#include "engine/model_config.h"
#include "engine/thread_pool.h"
#include "engine/weights.h"

namespace anelm::engine {

// The ANE norms square x * p in fp16: x * p must stay below 256 (x^2 < 65504) and the channel sum
// D * rms(x * p)^2 below 65504, yet small x * p lose precision once their squares fall into fp16
// subnormals (< 6.1e-5). A fixed p = 1/16 serves |x| up to 4096 but costs ~3% on a model whose
// residual stream is ~0.02 (llama-2-tiny-random).
struct AnePrescales {
  std::vector<double> attn;  // [n_layers] program A: norm of the layer input
  std::vector<double> ffn;   // [n_layers] program B: norm of h (bounded by the layer in and out)
  double head = 1.0 / 16;    // LM-head chunks: the final norm
  // Gemma 3's post-norms, [n_layers] each (empty without post_norms): the norm of the attention
  // output projection's result and of the FFN's down projection's, inside program B.
  std::vector<double> post_attn, post_ffn;
};

// Runs the CPU layers over a fixed calibration sequence (BOS or token 1, then ids spread over the
// vocabulary; 8 tokens) and picks for every norm the largest power of two p in [1/4096, 1024] with
// max|x| * p * kHeadroom <= 256 and D * (rms(x) * p * kHeadroom)^2 <= 65504, where kHeadroom = 4
// covers inputs larger than the calibration saw. Deterministic for given weights.
AnePrescales calibrate_ane_prescales(const ModelConfig& cfg, const ModelWeights& w,
                                     ThreadPool& pool, const kernels::KernelTable& k);

// The calibration sequence: BOS (or token 1), then 7 ids spread over the vocabulary. Also the
// prompt `anelm compile --verify` runs every program on.
std::vector<int> ane_calibration_ids(const ModelConfig& cfg);

// Every norm at `p` (no calibration).
AnePrescales fixed_ane_prescales(const ModelConfig& cfg, double p);

}  // namespace anelm::engine
