// IEEE binary16 conversions with round-to-nearest-even, subnormals, overflow to inf and NaN kept.
#pragma once

#include <cstdint>
#include <span>

namespace anelm::ane {

// fp32 -> fp16 bits, round to nearest even; |x| >= 65520 -> +-inf; NaN stays NaN (quiet).
std::uint16_t fp32_to_fp16(float x);
// fp64 -> fp16 bits with a single rounding (MIL literals are parsed as double, §7.2).
std::uint16_t fp64_to_fp16(double x);
// fp16 bits -> fp32, exact.
float fp16_to_fp32(std::uint16_t h);

// x rounded to the nearest fp16 value, returned as fp32 (exact representation).
inline float round_to_fp16(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }
// Flushes fp16 subnormals (|x| < 2^-14) to a signed zero; used by the FTZ emulation switch.
float flush_fp16_subnormal(float x);

// Bulk helpers over spans of equal length.
void fp32_to_fp16(std::span<const float> in, std::span<std::uint16_t> out);
void fp16_to_fp32(std::span<const std::uint16_t> in, std::span<float> out);

inline constexpr float kFp16Max = 65504.0f;
inline constexpr float kFp16MinNormal = 6.103515625e-05f;   // 2^-14
inline constexpr float kFp16MinSubnormal = 5.9604645e-08f;  // 2^-24

}  // namespace anelm::ane
