#include "engine/kernels/rope.h"

#include <cmath>

namespace anelm::engine::kernels {

std::vector<double> rope_frequencies(int rope_dim, float theta, const float* freq_factors) {
  std::vector<double> freq(static_cast<size_t>(rope_dim / 2));
  for (size_t i = 0; i < freq.size(); ++i) {
    freq[i] = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / rope_dim);
    if (freq_factors) freq[i] /= freq_factors[i];
  }
  return freq;
}

void rope_cos_sin(int pos, const std::vector<double>& freq, float* cs) {
  const size_t half = freq.size();
  for (size_t i = 0; i < half; ++i) {
    const double angle = pos * freq[i];
    cs[i] = static_cast<float>(std::cos(angle));
    cs[half + i] = static_cast<float>(std::sin(angle));
  }
}

}  // namespace anelm::engine::kernels
