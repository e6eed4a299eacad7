// Scalar conversions and the Q8_0/Q4_0 row quantizers: exact known values and round-trip bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "engine/kernels/quantize.h"
#include "engine/tensor.h"

namespace anelm::engine::kernels {
namespace {

TEST(Fp16, KnownValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);  // rounds down to the largest finite
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(f32_to_f16(0.1f), 0x2e66);
  EXPECT_EQ(f32_to_f16(5.9604644775390625e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16(2.98023223876953125e-8f), 0x0000);  // half of it: ties to even (0)
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);  // tie between 0x3c00 and 0x3c01 -> even
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::nanf("")))));
  EXPECT_EQ(f16_to_f32(0x7c00), INFINITY);
  EXPECT_EQ(f16_to_f32(0x0400), 6.103515625e-5f);
}

TEST(Fp16, EveryFiniteValueRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;  // inf / nan
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(Bf16, KnownValuesAndRounding) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
  uint32_t bits = 0x3f808000;  // exactly between 0x3f80 and 0x3f81 -> even
  float f;
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(f32_to_bf16(f), 0x3f80);
  bits = 0x3f818000;
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(f32_to_bf16(f), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
}

TEST(DTypes, Sizes) {
  EXPECT_EQ(dtype_row_bytes(DType::kQ8_0, 64), 68);
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_0, 64), 36);
  EXPECT_EQ(dtype_row_bytes(DType::kBF16, 3), 6);
  EXPECT_EQ(dtype_block_elems(DType::kQ4_0), 32);
  EXPECT_STREQ(dtype_name(DType::kQ8_0), "q8_0");
  TensorView t;
  t.ndim = 3;
  t.shape = {2, 3, 4, 0};
  EXPECT_EQ(t.numel(), 24);
}

TEST(Quantize, Q8_0KnownBlock) {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = (i - 16) * 0.25f;  // amax 4 at i = 0
  BlockQ8_0 b;
  quantize_row_q8_0(x, &b, 32);
  EXPECT_EQ(b.d, f32_to_f16(4.0f / 127));
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[16], 0);
  EXPECT_EQ(b.qs[17], 8);  // round(0.25 * 127/4 = 7.94)
  EXPECT_EQ(b.qs[31], static_cast<int8_t>(std::round(3.75f * (127 / 4.0f))));
  float zero[32] = {0};
  quantize_row_q8_0(zero, &b, 32);
  EXPECT_EQ(b.d, 0);
  for (int8_t q : b.qs) EXPECT_EQ(q, 0);
}

TEST(Quantize, Q4_0KnownBlock) {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = (i - 8) * 0.5f;  // max |x| is x[31] = 11.5 (positive)
  BlockQ4_0 b;
  quantize_row_q4_0(x, &b, 32);
  const float d = 11.5f / -8;  // ggml keeps the sign: d is negative here
  EXPECT_EQ(b.d, f32_to_f16(d));
  // Element 31 (high nibble of byte 15): 11.5/d + 8.5 = 0.5 -> 0.
  EXPECT_EQ(b.qs[15] >> 4, 0);
  // Element 0 (low nibble of byte 0): -4/d + 8.5 = 11.28 -> 11.
  EXPECT_EQ(b.qs[0] & 0xf, 11);
  float y[32];
  dequantize_row_q4_0(&b, y, 32);
  EXPECT_NEAR(y[31], 11.5f, 0.01f);
  // The most negative values clamp at 15: -4/d*... element 0 is -4, only 11 steps.
  float z[32] = {0};
  z[3] = -1.0f;
  z[4] = 1.0f;  // same magnitude: the first one wins, so max = -1, d = 1/8
  quantize_row_q4_0(z, &b, 32);
  EXPECT_EQ(b.d, f32_to_f16(0.125f));
  EXPECT_EQ(b.qs[3] & 0xf, 0);   // -1/0.125 + 8.5 = 0.5 -> 0
  EXPECT_EQ(b.qs[4] & 0xf, 15);  // 1/0.125 + 8.5 = 16.5 -> clamped to 15
}

TEST(Quantize, RoundTripBounds) {
  std::mt19937 rng(123);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int n = 32 * 64;
  std::vector<float> x(n), y(n);
  for (float& v : x) v = nd(rng);
  std::vector<BlockQ8_0> q8(n / kQBlock);
  std::vector<BlockQ4_0> q4(n / kQBlock);
  quantize_row_q8_0(x.data(), q8.data(), n);
  dequantize_row_q8_0(q8.data(), y.data(), n);
  for (int b = 0; b < n / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    // Half a step, plus the f16 rounding of d (relative 2^-11) times at most 127 steps.
    const float bound = amax / 127 * 0.5f + amax * 1.0f / 1024;
    for (int j = 0; j < 32; ++j) ASSERT_LE(std::fabs(x[b * 32 + j] - y[b * 32 + j]), bound) << b << "," << j;
  }
  quantize_row_q4_0(x.data(), q4.data(), n);
  dequantize_row_q4_0(q4.data(), y.data(), n);
  for (int b = 0; b < n / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    // One full step at the clamped end (value -max lands on 7d), half a step elsewhere.
    const float bound = amax / 8 * 1.0f + amax * 1.0f / 1024;
    for (int j = 0; j < 32; ++j) ASSERT_LE(std::fabs(x[b * 32 + j] - y[b * 32 + j]), bound) << b << "," << j;
  }
}

TEST(Quantize, RowConvertersCoverEveryType) {
  float x[64];
  for (int i = 0; i < 64; ++i) x[i] = std::sin(i * 0.3f);
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    std::vector<uint8_t> buf(dtype_row_bytes(t, 64));
    float y[64];
    row_from_f32(x, t, buf.data(), 64);
    row_to_f32(t, buf.data(), y, 64);
    const float tol = t == DType::kF32 ? 0 : t == DType::kQ4_0 ? 0.13f : t == DType::kQ8_0 ? 0.005f : 0.004f;
    for (int i = 0; i < 64; ++i) ASSERT_NEAR(x[i], y[i], tol) << dtype_name(t) << " " << i;
  }
}

}  // namespace
}  // namespace anelm::engine::kernels
