// The writers of the block types beyond Q8_0/Q4_0 (Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K..Q6_K, IQ4_XS):
// rows quantised by row_from_f32 and decoded by the reference decoder (row_to_f32) stay within an
// error bound derived from the block layout alone; zero and constant rows come back exactly (up to
// f16 scales); the row-length fallbacks and the type names. Agreement with llama.cpp's quantizer is
// quantize_vs_llamacpp_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/engine.h"
#include "engine/kernels/quantize.h"

namespace anelm::engine::kernels {
namespace {

constexpr DType kWritten[] = {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kQ2_K,
                              DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS};

// How a type spends its bits: `run` elements share one scale (the sub-block), coded on `levels`
// levels, either affine (scale and min: levels span the run's [min, max]; the K-quants' min is <= 0)
// or symmetric about 0 (levels span [-max|x|, max|x|]); IQ4 levels are the non-linear table.
struct Layout {
  int run, levels;
  bool affine, iq4;
};

Layout layout(DType t) {
  switch (t) {
    case DType::kQ4_1: return {32, 16, true, false};
    case DType::kQ5_0: return {32, 32, false, false};
    case DType::kQ5_1: return {32, 32, true, false};
    case DType::kIQ4_NL: return {32, 16, false, true};
    case DType::kQ2_K: return {16, 4, true, false};
    case DType::kQ3_K: return {16, 8, false, false};
    case DType::kQ4_K: return {32, 16, true, false};
    case DType::kQ5_K: return {32, 32, true, false};
    case DType::kQ6_K: return {16, 64, false, false};
    default: return {32, 16, false, true};  // IQ4_XS
  }
}

// The bound: the squared error a plain round-to-nearest quantizer with the same layout is expected
// to make, step^2 / 12 per element (uniform rounding error), where the step of each run is its
// value span over (levels - 1): (max - min) for affine runs (min clamped to <= 0 for the K-quants,
// which store the min as a magnitude to subtract), 2 max|x| for symmetric ones, and the IQ4 table's
// span of 240 units for max|x| = 127 units over its 15 gaps. The least-squares search only ever
// moves away from that quantizer's scale when the error falls, and the K-quants' 6/8-bit sub-block
// scales cost far less than the margin: measured on the data below it is 0.66-0.94 of this bound.
double uniform_quantizer_error(DType t, const float* x, int64_t n) {
  const Layout l = layout(t);
  const bool k_min = dtype_block_elems(t) == kQKBlock;
  double e = 0;
  for (int64_t b = 0; b < n; b += l.run) {
    float lo = *std::min_element(x + b, x + b + l.run), hi = *std::max_element(x + b, x + b + l.run);
    const double amax = std::max(-lo, hi);
    if (k_min) lo = std::min(lo, 0.0f);
    const double step = l.affine ? (hi - lo) / (l.levels - 1.0)
                        : l.iq4  ? amax * 240.0 / 127.0 / 15.0
                                 : 2.0 * amax / (l.levels - 1.0);
    e += l.run * step * step / 12.0;
  }
  return e;
}

double squared_error(DType t, const std::vector<float>& x, std::vector<float>* decoded = nullptr) {
  std::vector<uint8_t> blocks(dtype_row_bytes(t, static_cast<int64_t>(x.size())));
  std::vector<float> y(x.size());
  row_from_f32(x.data(), t, blocks.data(), static_cast<int64_t>(x.size()));
  row_to_f32(t, blocks.data(), y.data(), static_cast<int64_t>(x.size()));
  double e = 0;
  for (size_t i = 0; i < x.size(); ++i) e += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
  if (decoded) *decoded = y;
  return e;
}

// Rows of the three shapes weights take: gaussian (sigma 0.02), gaussian with rare outliers of
// 12 sigma (one element in 97, alternating sign), and two-sided exponential (heavier tails).
std::vector<std::vector<float>> test_rows() {
  constexpr int kN = 256 * 32;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::exponential_distribution<float> expo(50.0f);
  std::vector<std::vector<float>> rows(3, std::vector<float>(kN));
  for (int i = 0; i < kN; ++i) {
    rows[0][i] = normal(rng);
    rows[1][i] = i % 97 == 5 ? (i % 2 ? 0.24f : -0.24f) : normal(rng);
    rows[2][i] = expo(rng) * ((rng() & 1) ? 1.0f : -1.0f);
  }
  return rows;
}

TEST(QuantizeWriters, ErrorBelowThePlainQuantizerOfTheSameLayout) {
  const auto rows = test_rows();
  const char* kind[] = {"gaussian", "outliers", "exponential"};
  for (DType t : kWritten) {
    for (size_t r = 0; r < rows.size(); ++r) {
      const double e = squared_error(t, rows[r]);
      const double bound = uniform_quantizer_error(t, rows[r].data(), static_cast<int64_t>(rows[r].size()));
      double power = 0;
      for (float v : rows[r]) power += static_cast<double>(v) * v;
      EXPECT_LE(e, bound) << dtype_name(t) << " " << kind[r] << ": relative RMSE " << std::sqrt(e / power)
                          << ", bound " << std::sqrt(bound / power);
    }
  }
}

TEST(QuantizeWriters, OutliersKeepTheirMagnitude) {
  // An outlier is the largest magnitude of its run, which the fitted scale places on or next to an
  // end level: at most half a step away, the step being 2 max|x| / (levels - 1), or for IQ4 the
  // table's widest gap (24 units of 127).
  const auto rows = test_rows();
  const std::vector<float>& x = rows[1];
  for (DType t : kWritten) {
    std::vector<float> y;
    squared_error(t, x, &y);
    const Layout l = layout(t);
    for (size_t i = 5; i < x.size(); i += 97) {
      const double step = std::fabs(x[i]) * (l.iq4 ? 24.0 / 127.0 : 2.0 / (l.levels - 1));
      EXPECT_NEAR(y[i], x[i], step / 2 + 1e-3 * std::fabs(x[i])) << dtype_name(t) << " element " << i;
    }
  }
}

TEST(QuantizeWriters, ZeroAndConstantRows) {
  constexpr int kN = 512;
  for (DType t : kWritten) {
    std::vector<float> y;
    squared_error(t, std::vector<float>(kN, 0.0f), &y);
    for (int i = 0; i < kN; ++i) ASSERT_EQ(y[i], 0.0f) << dtype_name(t) << " zero row, element " << i;
    // A constant maps onto one level exactly; only the f16 scale (relative 2^-11) and, for the
    // K-quants, the f16 super-scale times the integer scale round it. (Below ~0.25 a K-quant's
    // super-scale, max / 4096 for Q6_K, is an f16 subnormal, coarser than 2^-11: a limit of the
    // format, in llama.cpp's files as in ours.)
    for (float c : {0.37f, -2.5f, 1.0f, 40.0f}) {
      squared_error(t, std::vector<float>(kN, c), &y);
      for (int i = 0; i < kN; ++i) ASSERT_NEAR(y[i], c, 2e-3f * std::fabs(c)) << dtype_name(t) << " c=" << c;
    }
  }
}

TEST(QuantizeWriters, RowsThatDoNotFitFallBackAsLlamaCpp) {
  EXPECT_EQ(writable_type_for(DType::kQ4_K, 512), DType::kQ4_K);
  EXPECT_EQ(writable_type_for(DType::kQ4_K, 96), DType::kQ5_0);
  EXPECT_EQ(writable_type_for(DType::kQ5_K, 96), DType::kQ5_1);
  EXPECT_EQ(writable_type_for(DType::kQ6_K, 96), DType::kQ8_0);
  for (DType t : {DType::kQ2_K, DType::kQ3_K, DType::kIQ4_XS}) EXPECT_EQ(writable_type_for(t, 64), DType::kIQ4_NL);
  EXPECT_EQ(writable_type_for(DType::kQ4_K, 100), std::nullopt);  // not even a 32-element block
  EXPECT_EQ(writable_type_for(DType::kQ4_0, 100), std::nullopt);
  EXPECT_EQ(writable_type_for(DType::kQ5_0, 64), DType::kQ5_0);
  EXPECT_EQ(writable_type_for(DType::kF16, 37), DType::kF16);
}

TEST(QuantizeWriters, WeightsTypeNames) {
  EXPECT_EQ(weights_type_from_name("q4_k"), DType::kQ4_K);
  EXPECT_EQ(weights_type_from_name("Q6_K"), DType::kQ6_K);
  EXPECT_EQ(weights_type_from_name("iq4_xs"), DType::kIQ4_XS);
  EXPECT_EQ(weights_type_from_name("iq4_nl"), DType::kIQ4_NL);
  EXPECT_EQ(weights_type_from_name("q5_1"), DType::kQ5_1);
  EXPECT_EQ(weights_type_from_name("f16"), DType::kF16);
  EXPECT_EQ(weights_type_from_name("f32"), std::nullopt);  // would only grow the weights
  EXPECT_EQ(weights_type_from_name("bf16"), std::nullopt);
  EXPECT_EQ(weights_type_from_name("q4_k_m"), std::nullopt);  // a llama.cpp mix, not a type
  EXPECT_EQ(weights_type_from_name(""), std::nullopt);
  for (DType t : kWritten) {
    std::string name = dtype_name(t);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(weights_type_from_name(name), t) << name;
    EXPECT_NE(std::string(kWeightsTypeNames).find(name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace anelm::engine::kernels
