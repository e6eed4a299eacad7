// RoPE angles, computed once per position instead of per layer and head group: the kernels'
// `rope` rotates by a row's precomputed cosines and sines (the pow and sincos calls were ~4% of a
// prefill when every layer recomputed them for q and again for k).
#pragma once

#include <vector>

namespace anelm::engine::kernels {

// Pair i's frequency theta^(-2i/rope_dim) / freq_factors[i] (freq_factors: null, or rope_dim/2
// divisors), in double as ref::rope computes it.
std::vector<double> rope_frequencies(int rope_dim, float theta, const float* freq_factors);

// cs[0, half) = cos(pos * freq[i]), cs[half, 2 half) = sin(pos * freq[i]): bit-identical to the
// angles ref::rope uses.
void rope_cos_sin(int pos, const std::vector<double>& freq, float* cs);

}  // namespace anelm::engine::kernels
