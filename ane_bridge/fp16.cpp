// IEEE binary16 conversions used by the blob writer, the surface packers and the simulator.
#include "ane_bridge/fp16.h"

#include <bit>
#include <cmath>

namespace anelm::ane {

std::uint16_t fp32_to_fp16(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {  // inf or NaN
    if (abs_bits == 0x7f800000u) return sign | 0x7c00u;
    return sign | 0x7e00u | static_cast<std::uint16_t>((abs_bits >> 13) & 0x3ffu);
  }
  if (abs_bits >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  if (abs_bits < 0x38800000u) {                        // below 2^-14: subnormal or zero
    // Scaling by 2^24 is exact; lrintf rounds to nearest even. 1024 encodes the smallest normal.
    const float a = std::bit_cast<float>(abs_bits) * 16777216.0f;
    return sign | static_cast<std::uint16_t>(std::lrintf(a));
  }
  std::uint32_t h = (abs_bits - 0x38000000u) >> 13;  // re-bias exponent 127 -> 15
  const std::uint32_t rem = abs_bits & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may bump the exponent: fine
  return sign | static_cast<std::uint16_t>(h);
}

std::uint16_t fp64_to_fp16(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  if (std::isnan(x)) return sign | 0x7e00u;
  const double a = std::fabs(x);
  if (a >= 65520.0) return sign | 0x7c00u;
  if (a < 6.103515625e-05) return sign | static_cast<std::uint16_t>(std::nearbyint(a * 16777216.0));
  int e = 0;
  std::frexp(a, &e);                                   // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1;                                     // a in [2^exp, 2^(exp+1))
  double q = std::nearbyint(std::ldexp(a, 10 - exp));  // in [1024, 2048]
  if (q >= 2048.0) {
    q = 1024.0;
    ++exp;
  }
  return sign | static_cast<std::uint16_t>(((exp + 15) << 10) | (static_cast<int>(q) - 1024));
}

float fp16_to_fp32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

float flush_fp16_subnormal(float x) {
  if (std::fabs(x) < kFp16MinNormal) return std::signbit(x) ? -0.0f : 0.0f;
  return x;
}

void fp32_to_fp16(std::span<const float> in, std::span<std::uint16_t> out) {
  for (std::size_t i = 0; i < in.size() && i < out.size(); ++i) out[i] = fp32_to_fp16(in[i]);
}

void fp16_to_fp32(std::span<const std::uint16_t> in, std::span<float> out) {
  for (std::size_t i = 0; i < in.size() && i < out.size(); ++i) out[i] = fp16_to_fp32(in[i]);
}

}  // namespace anelm::ane
