// fp16 conversion tests: exhaustive round trip, agreement with a double-based single rounding,
// edges.
#include "ane_bridge/fp16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

namespace anelm::ane {
namespace {

TEST(Fp16, ExhaustiveRoundTripOfEveryHalf) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_fp32(static_cast<std::uint16_t>(h));
    const std::uint16_t back = fp32_to_fp16(f);
    if (std::isnan(f)) {
      EXPECT_EQ(back & 0x7c00u, 0x7c00u);
      EXPECT_NE(back & 0x3ffu, 0u) << h;
    } else {
      ASSERT_EQ(back, h) << "half 0x" << std::hex << h;
    }
  }
}

TEST(Fp16, Fp32PathAgreesWithDoublePathOnRandomBits) {
  // Both are single roundings of the same exact value, so they must agree bit for bit.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    std::uint32_t bits = rng();
    if (i % 2)
      bits = (bits & 0x807fffffu) | ((100u + rng() % 45u) << 23);  // bias toward fp16 range
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), fp64_to_fp16(static_cast<double>(f)))
        << "bits 0x" << std::hex << bits;
  }
}

TEST(Fp16, OverflowSaturatesToInfinityAtTheRoundingBoundary) {
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bffu);
  EXPECT_EQ(fp32_to_fp16(65519.996f), 0x7bffu);  // below the midpoint 65520
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00u);    // tie between 65504 and 2^16 -> even -> inf
  EXPECT_EQ(fp32_to_fp16(-1e9f), 0xfc00u);
  EXPECT_EQ(fp32_to_fp16(INFINITY), 0x7c00u);
  EXPECT_EQ(fp64_to_fp16(65520.0), 0x7c00u);
  EXPECT_EQ(fp64_to_fp16(65519.999), 0x7bffu);
}

TEST(Fp16, SubnormalsAreKeptAndRoundedToNearestEven) {
  EXPECT_EQ(fp32_to_fp16(5.9604644775390625e-08f), 0x0001u);   // 2^-24
  EXPECT_EQ(fp32_to_fp16(2.98023223876953125e-08f), 0x0000u);  // 2^-25: tie -> even (0)
  EXPECT_EQ(fp32_to_fp16(8.94069671630859375e-08f), 0x0002u);  // 1.5 * 2^-24: tie -> even (2)
  EXPECT_EQ(fp32_to_fp16(1e-5f), 0x00a8u);                     // RMSNorm eps 1e-5 (§6.3)
  EXPECT_EQ(fp32_to_fp16(1e-6f), 0x0011u);                     // Qwen eps 1e-6 (§6.9)
  EXPECT_EQ(fp32_to_fp16(6.097555160522461e-05f), 0x03ffu);    // largest subnormal
  EXPECT_EQ(fp32_to_fp16(6.1035156e-05f), 0x0400u);            // smallest normal
  EXPECT_FLOAT_EQ(fp16_to_fp32(0x0001u), 5.9604644775390625e-08f);
  EXPECT_EQ(flush_fp16_subnormal(fp16_to_fp32(0x03ffu)), 0.0f);
  EXPECT_EQ(flush_fp16_subnormal(fp16_to_fp32(0x0400u)), fp16_to_fp32(0x0400u));
}

TEST(Fp16, NormalTiesRoundToEven) {
  EXPECT_EQ(fp32_to_fp16(1.0f + 1.0f / 2048), 0x3c00u);     // tie, even is 1.0
  EXPECT_EQ(fp32_to_fp16(1.0f + 3.0f / 2048), 0x3c02u);     // tie, even is 1 + 2^-9
  EXPECT_EQ(fp32_to_fp16(2049.0f), fp32_to_fp16(2048.0f));  // ulp 2 at 2048
  EXPECT_EQ(fp32_to_fp16(2051.0f), fp32_to_fp16(2052.0f));
  EXPECT_EQ(fp32_to_fp16(1.0f + 1.0f / 2048 + 1e-7f), 0x3c01u);  // just above the tie
}

TEST(Fp16, NanAndSignedZero) {
  EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(NAN))));
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000u);
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000u)));
  EXPECT_EQ(fp64_to_fp16(NAN) & 0x7e00u, 0x7e00u);
}

TEST(Fp16, LiteralRoundingMatchesSpecExamples) {
  // §7.2: fp16(0.001302) -> 0.00130177, fp16(0.088388) -> 0.0883789, fp16(0.133631) -> 0.133667.
  EXPECT_NEAR(fp16_to_fp32(fp64_to_fp16(0.001302)), 0.00130177, 5e-8);
  EXPECT_NEAR(fp16_to_fp32(fp64_to_fp16(0.088388)), 0.0883789, 5e-7);
  EXPECT_NEAR(fp16_to_fp32(fp64_to_fp16(0.133631)), 0.133667, 5e-7);
  EXPECT_EQ(fp16_to_fp32(fp64_to_fp16(0.4)), 0.39990234375f);  // "0.3999" (§5.3)
}

}  // namespace
}  // namespace anelm::ane
