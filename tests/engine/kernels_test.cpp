// Every kernel of every supported ISA against the naive reference (engine/kernels/reference.h), on odd sizes.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/reference.h"
#include "engine/kernels/rope.h"

namespace anelm::engine::kernels {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Encodes a [rows][cols] f32 matrix as weight type t (bytes laid out like a GGUF tensor).
std::vector<uint8_t> encode(const std::vector<float>& m, DType t, int64_t rows, int64_t cols) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * dtype_row_bytes(t, cols)));
  for (int64_t r = 0; r < rows; ++r) row_from_f32(m.data() + r * cols, t, out.data() + r * dtype_row_bytes(t, cols), cols);
  return out;
}

const char* type_name(DType t) { return dtype_name(t); }

struct Compare {
  float max_diff = 0;
  int64_t worst = -1;
};

// Expects |a - e| <= atol + rtol * |e| everywhere; reports op, ISA, index, expected, actual, max diff.
void expect_close(const std::string& what, const float* expected, const float* actual, int64_t n,
                  float atol, float rtol = 0.0f) {
  Compare c;
  int64_t bad = -1;
  for (int64_t i = 0; i < n; ++i) {
    const float d = std::fabs(expected[i] - actual[i]);
    if (!(d <= c.max_diff)) {
      c.max_diff = d;
      c.worst = i;
    }
    if (!(d <= atol + rtol * std::fabs(expected[i])) && bad < 0) bad = i;
  }
  if (bad >= 0) {
    ADD_FAILURE() << what << ": index " << bad << " expected " << expected[bad] << " actual " << actual[bad]
                  << " (max diff " << c.max_diff << " at " << c.worst << ", atol " << atol << ")";
  }
}

class KernelsTest : public ::testing::TestWithParam<Isa> {
 protected:
  const KernelTable& k() const { return *kernel_table(GetParam()); }
  std::string tag(const std::string& op) const { return op + " [" + isa_name(GetParam()) + "]"; }
};

TEST_P(KernelsTest, MatmulFloatTypesMatchReference) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int64_t cols : {1, 7, 16, 33, 100, 257}) {
      for (int64_t rows : {1, 5, 37}) {
        for (int n : {1, 3, 4, 5, 17}) {
          const auto wf = random_floats(static_cast<size_t>(rows * cols), 11 + cols + rows);
          const auto w = encode(wf, t, rows, cols);
          const auto x = random_floats(static_cast<size_t>(n * cols), 7 + n);
          std::vector<float> expected(static_cast<size_t>(n * rows)), actual(expected.size(), -999.0f);
          ref::matmul(w.data(), t, rows, cols, x.data(), n, expected.data());
          k().matmul[dtype_index(t)](w.data(), cols, x.data(), nullptr, n, actual.data(), rows, 0, rows);
          // f32 accumulation error grows with sqrt(cols); values are O(sqrt(cols)/3).
          expect_close(tag(std::string("matmul ") + type_name(t) + " rows=" + std::to_string(rows) +
                           " cols=" + std::to_string(cols) + " n=" + std::to_string(n)),
                       expected.data(), actual.data(), n * rows, 2e-5f * std::sqrt(static_cast<float>(cols)) + 1e-6f);
        }
      }
    }
  }
}

// ANELM_F16_ACTIVATIONS=f16 (ggml's rounding, a parity diagnostic): the table's F16 matmul then sees
// activations rounded to f16, so it equals the reference on the rounded activations and not on the
// f32 ones (x carries 24-bit mantissas, so rounding moves every product).
TEST_P(KernelsTest, F16RoundedActivationsMatchReferenceOnRoundedInputs) {
  const KernelTable rounded = with_f16_rounded_activations(k());
  const int64_t rows = 37, cols = 257;
  const int n = 5;
  const auto w = encode(random_floats(static_cast<size_t>(rows * cols), 3), DType::kF16, rows, cols);
  const auto x = random_floats(static_cast<size_t>(n * cols), 4);
  std::vector<float> xr(x.size());
  for (size_t i = 0; i < x.size(); ++i) xr[i] = round_to_half(x[i]);
  std::vector<float> on_rounded(static_cast<size_t>(n * rows)), on_f32(on_rounded.size()), actual(on_rounded.size());
  ref::matmul(w.data(), DType::kF16, rows, cols, xr.data(), n, on_rounded.data());
  ref::matmul(w.data(), DType::kF16, rows, cols, x.data(), n, on_f32.data());
  rounded.matmul[dtype_index(DType::kF16)](w.data(), cols, x.data(), nullptr, n, actual.data(), rows, 0, rows);
  expect_close(tag("f16-rounded activations"), on_rounded.data(), actual.data(), n * rows, 2e-5f * std::sqrt(257.0f));
  float moved = 0;
  for (size_t i = 0; i < actual.size(); ++i) moved = std::max(moved, std::fabs(actual[i] - on_f32[i]));
  EXPECT_GT(moved, 1e-3f) << tag("the rounding changed nothing");
}


// The same diagnostic's GELU is ggml's table (ggml-cpu/vec.h, GGML_GELU_FP16): 0 at x <= -10, x at
// x >= 10, else f16(gelu(f16(x))); GeGLU multiplies that by up. Expected values come from the scalar
// reference on the f16-rounded input; a flip of the last f16 bit is allowed (the ISA's inner GELU
// is 1e-6 from the reference's), and the f32 result must move.
TEST_P(KernelsTest, F16RoundedGeluFollowsGgmlTable) {
  const KernelTable rounded = with_f16_rounded_activations(k());
  const int n = 301;
  auto x = random_floats(n, 12, 6.0f);
  x[0] = -10.0f, x[1] = 10.0f, x[2] = -12.5f, x[3] = 11.0f, x[4] = 9.99f;
  const auto up = random_floats(n, 13);
  std::vector<float> e(n), e_mul(n), f32(n), a(n), a_mul(n);
  for (int i = 0; i < n; ++i) {
    float g = round_to_half(x[i]);
    ref::gelu(&g, 1, &g);
    e[i] = x[i] <= -10.0f ? 0.0f : x[i] >= 10.0f ? x[i] : round_to_half(g);
    e_mul[i] = e[i] * up[i];
  }
  ref::gelu(x.data(), n, f32.data());
  rounded.gelu(x.data(), n, a.data());
  rounded.gelu_mul(x.data(), up.data(), n, a_mul.data());
  expect_close(tag("ggml-table gelu"), e.data(), a.data(), n, 1e-6f, 1.0f / 1024);
  expect_close(tag("ggml-table gelu_mul"), e_mul.data(), a_mul.data(), n, 1e-6f, 1.0f / 1024);
  float moved = 0;
  for (int i = 0; i < n; ++i) moved = std::max(moved, std::fabs(a[i] - f32[i]));
  EXPECT_GT(moved, 1e-4f) << tag("the table changed nothing");
}
// Quantised weights: the fast path quantises activations to Q8, so compare against the reference run
// on the dequantised Q8 activations (tight), and against plain f32 activations (loose).
TEST_P(KernelsTest, MatmulQuantTypesMatchReference) {
  for (DType t : {DType::kQ8_0, DType::kQ4_0}) {
    for (int64_t cols : {32, 64, 96, 288, 320}) {  // odd and even block counts (pair kernels)
      for (int64_t rows : {1, 5, 37}) {
        for (int n : {1, 2, 4, 7, 9, 17, 33}) {  // 4+: AMX tiles (padded chunks)
          const auto wf = random_floats(static_cast<size_t>(rows * cols), 5 + cols + rows);
          const auto w = encode(wf, t, rows, cols);
          const auto x = random_floats(static_cast<size_t>(n * cols), 3 + n);
          std::vector<QBlock8> xq(static_cast<size_t>(n * cols / kQBlock));
          k().quantize_q8(x.data(), n * cols, xq.data());
          std::vector<float> xdq(x.size());
          ref::dequantize_q8(xq.data(), n * cols, xdq.data());
          std::vector<float> exact(static_cast<size_t>(n * rows)), on_q8(exact.size()), actual(exact.size(), -999.0f);
          ref::matmul(w.data(), t, rows, cols, x.data(), n, exact.data());
          ref::matmul(w.data(), t, rows, cols, xdq.data(), n, on_q8.data());
          k().matmul[dtype_index(t)](w.data(), cols, nullptr, xq.data(), n, actual.data(), rows, 0, rows);
          const std::string what = std::string("matmul ") + type_name(t) + " rows=" + std::to_string(rows) +
                                   " cols=" + std::to_string(cols) + " n=" + std::to_string(n);
          expect_close(tag(what + " vs q8 activations"), on_q8.data(), actual.data(), n * rows, 1e-4f);
          // Against f32 activations the gap is the activation rounding: at most sum_c |W[r][c]| *
          // |x[c] - q8(x)[c]| for each output (triangle inequality), plus the tight tolerance above.
          std::vector<float> w_row(static_cast<size_t>(cols));
          for (int64_t r = 0; r < rows; ++r) {
            ref::dequantize_row(w.data(), t, r, cols, w_row.data());
            for (int i = 0; i < n; ++i) {
              double bound = 1e-4;
              for (int64_t c = 0; c < cols; ++c) {
                bound += std::fabs(w_row[c]) * std::fabs(x[i * cols + c] - xdq[i * cols + c]);
              }
              ASSERT_LE(std::fabs(exact[i * rows + r] - actual[i * rows + r]), bound + 1e-5)
                  << tag(what + " vs f32 activations") << " token " << i << " row " << r;
            }
          }
        }
      }
    }
  }
}

TEST_P(KernelsTest, MatmulRowRangeWritesOnlyItsRows) {
  const int64_t rows = 40, cols = 64;
  for (int n : {6, 20})  // AMX panels split mid-panel at row 13
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    const auto w = encode(random_floats(rows * cols, 1), t, rows, cols);
    const auto x = random_floats(n * cols, 2);
    std::vector<QBlock8> xq(n * cols / kQBlock);
    k().quantize_q8(x.data(), n * cols, xq.data());
    const int64_t ldy = rows + 3;  // padded output rows
    std::vector<float> full(n * ldy, -1.0f), split(n * ldy, -1.0f);
    k().matmul[dtype_index(t)](w.data(), cols, x.data(), xq.data(), n, full.data(), ldy, 0, rows);
    k().matmul[dtype_index(t)](w.data(), cols, x.data(), xq.data(), n, split.data(), ldy, 0, 13);
    k().matmul[dtype_index(t)](w.data(), cols, x.data(), xq.data(), n, split.data(), ldy, 13, rows);
    for (int i = 0; i < n; ++i) {
      for (int64_t r = 0; r < ldy; ++r) {
        ASSERT_EQ(full[i * ldy + r], split[i * ldy + r]) << tag("row range ") << type_name(t) << " i=" << i << " r=" << r;
        if (r >= rows) {
          ASSERT_EQ(full[i * ldy + r], -1.0f) << "padding written";
        }
      }
    }
  }
}

// Prefill shapes: many rows (the AVX2 Q8_0/Q4_0 panels: several L2 chunks of 8-row groups, a partial
// group at the end of an unaligned range) and tile tails, against the reference on the same Q8 activations.
TEST_P(KernelsTest, MatmulQuantManyRowsManyTokens) {
  const int64_t rows = 8 * 70 + 5, cols = 2048, r0 = 3, r1 = rows - 1;
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ5_0}) {
    for (int n : {8, 13, 64}) {
      const auto w = encode(random_floats(rows * cols, 21), t, rows, cols);
      const auto x = random_floats(n * cols, 22 + n);
      std::vector<QBlock8> xq(n * cols / kQBlock);
      k().quantize_q8(x.data(), n * cols, xq.data());
      std::vector<float> xdq(x.size()), expected(static_cast<size_t>(n * rows)), actual(expected.size(), -1.0f);
      ref::dequantize_q8(xq.data(), n * cols, xdq.data());
      ref::matmul(w.data(), t, rows, cols, xdq.data(), n, expected.data());
      k().matmul[dtype_index(t)](w.data(), cols, nullptr, xq.data(), n, actual.data(), rows, r0, r1);
      for (int i = 0; i < n; ++i) {
        for (int64_t r = 0; r < rows; ++r) {
          const float e = r >= r0 && r < r1 ? expected[i * rows + r] : -1.0f;
          ASSERT_NEAR(e, actual[i * rows + r], 2e-4f + 1e-5f * std::fabs(e))
              << tag("many rows ") << type_name(t) << " n=" << n << " token " << i << " row " << r;
        }
      }
    }
  }
}

// A token's Q8_0/Q4_0/Q5_0/IQ4_NL (and on AVX2 Q4_1/Q5_1) results on the AVX2 and NEON tables are
// bit-identical whether it is computed alone (a decode), with a few others (a batched decode step) or
// in a prefill chunk (the panels): a sequence decoded beside others' prefill gives the ids it gives
// alone. The other tables take other paths by token count (AVX-512: a one-token GEMV and pair-packed
// prefill; AMX: int8 tiles), so do not promise it.
TEST_P(KernelsTest, QuantTokenSumsDoNotDependOnTheBatch) {
  if (GetParam() != Isa::kAvx2 && GetParam() != Isa::kNeon) {
    GTEST_SKIP() << "batch-invariant sums are the avx2 and neon panel design only";
  }
  const int64_t rows = 8 * 5 + 3, cols = 2048;
  const int n = 13;
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ5_0, DType::kIQ4_NL, DType::kQ4_1, DType::kQ5_1}) {
    const auto w = encode(random_floats(rows * cols, 31), t, rows, cols);
    const auto x = random_floats(n * cols, 32);
    std::vector<QBlock8> xq(n * cols / kQBlock);
    k().quantize_q8(x.data(), n * cols, xq.data());
    std::vector<float> all(static_cast<size_t>(n * rows));
    k().matmul[dtype_index(t)](w.data(), cols, nullptr, xq.data(), n, all.data(), rows, 0, rows);
    for (int batch : {1, 2, 3, 4, 7, 8}) {
      for (int i0 = 0; i0 < n; i0 += batch) {
        const int m = std::min(batch, n - i0);
        std::vector<float> part(static_cast<size_t>(m * rows));
        k().matmul[dtype_index(t)](w.data(), cols, nullptr, xq.data() + i0 * (cols / kQBlock), m, part.data(), rows, 0, rows);
        for (int i = 0; i < m; ++i) {
          for (int64_t r = 0; r < rows; ++r) {
            ASSERT_EQ(all[(i0 + i) * rows + r], part[i * rows + r])
                << tag("batch invariance ") << type_name(t) << " token " << i0 + i << " in a pass of " << m << ", row " << r;
          }
        }
      }
    }
  }
}

TEST_P(KernelsTest, QuantizeQ8IsBitIdenticalToReference) {
  for (int64_t n : {32, 64, 320}) {
    auto x = random_floats(n, 9 + n, 3.0f);
    x[5] = 0.0f;
    std::fill(x.begin() + 32, x.begin() + 64 > x.end() ? x.end() : x.begin() + 64, 0.0f);  // an all-zero block
    std::vector<QBlock8> a(n / kQBlock), e(n / kQBlock);
    ref::quantize_q8(x.data(), n, e.data());
    k().quantize_q8(x.data(), n, a.data());
    for (size_t b = 0; b < a.size(); ++b) {
      ASSERT_EQ(e[b].d, a[b].d) << tag("quantize_q8") << " block " << b;
      ASSERT_EQ(e[b].sum, a[b].sum) << tag("quantize_q8") << " block " << b;
      ASSERT_EQ(0, std::memcmp(e[b].qs, a[b].qs, kQBlock)) << tag("quantize_q8") << " block " << b;
    }
  }
}

// The Q8 activation multiplier is 1 / d with d = amax / 127, as ggml's quantize_row_q8_0_ref (and
// its Arm code); its x86 code takes 127 / amax, which differs in the last bit for some amax and
// flips a q on a rounding boundary (docs/parity.md measured both against llama.cpp). The blocks
// below are searched so that the two multipliers give different qs, which pins the choice on every
// table. A block whose d rounds to 0 in f16 adds nothing to a dot and must quantise to zeros, not
// overflow.
TEST_P(KernelsTest, QuantizeQ8ScalesAsGgmlReference) {
  std::vector<float> x;
  std::vector<std::array<int8_t, kQBlock>> expected;
  for (uint32_t seed = 1; expected.size() < 8 && seed < 100000; ++seed) {
    auto b = random_floats(kQBlock, seed, 3.0f);
    float amax = 0.0f;
    for (float v : b) amax = std::fmax(amax, std::fabs(v));
    const float ours = 1.0f / (amax / 127.0f), other = 127.0f / amax;
    if (ours == other) continue;
    // A value next to the rounding boundary 52.5 that the two multipliers put on different sides.
    float c = std::nextafter(52.5f / ours, 0.0f);
    for (int step = 0; step < 8 && std::nearbyint(c * ours) == std::nearbyint(c * other); ++step)
      c = std::nextafter(c, 64.0f);
    if (std::nearbyint(c * ours) == std::nearbyint(c * other)) continue;
    b[7] = c;
    std::array<int8_t, kQBlock> q{};
    for (int i = 0; i < kQBlock; ++i) q[i] = static_cast<int8_t>(std::nearbyint(b[i] * ours));
    x.insert(x.end(), b.begin(), b.end());
    expected.push_back(q);
  }
  ASSERT_EQ(expected.size(), 8u) << "no block where the two multipliers part";
  x.insert(x.end(), kQBlock, 1e-37f);  // 1 / (amax / 127) overflows; d = f16(amax / 127) = 0
  std::vector<QBlock8> a(x.size() / kQBlock);
  k().quantize_q8(x.data(), static_cast<int64_t>(x.size()), a.data());
  for (size_t b = 0; b < expected.size(); ++b)
    ASSERT_EQ(0, std::memcmp(expected[b].data(), a[b].qs, kQBlock)) << tag("quantize_q8") << " block " << b;
  EXPECT_EQ(a.back().d, 0.0f) << tag("quantize_q8");
  for (int8_t v : a.back().qs) ASSERT_EQ(v, 0) << tag("quantize_q8");
}

TEST_P(KernelsTest, DequantizeRowMatchesReference) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    const int64_t rows = 3, cols = (t == DType::kQ8_0 || t == DType::kQ4_0) ? 96 : 37;
    const auto w = encode(random_floats(rows * cols, 4), t, rows, cols);
    std::vector<float> e(cols), a(cols);
    ref::dequantize_row(w.data(), t, 2, cols, e.data());
    k().dequantize_row(w.data(), t, 2, cols, a.data());
    expect_close(tag(std::string("dequantize_row ") + type_name(t)), e.data(), a.data(), cols, 0.0f);
  }
}

TEST_P(KernelsTest, ElementwiseMatchReference) {
  for (int n : {1, 7, 64, 173}) {
    const auto x = random_floats(n, 21 + n, 4.0f), w = random_floats(n, 22 + n), y = random_floats(n, 23 + n);
    std::vector<float> e(n), a(n);
    ref::rmsnorm(x.data(), w.data(), 1e-5f, n, e.data());
    k().rmsnorm(x.data(), w.data(), 1e-5f, n, a.data());
    expect_close(tag("rmsnorm n=" + std::to_string(n)), e.data(), a.data(), n, 1e-5f, 1e-5f);
    a = x;  // in place
    k().rmsnorm(a.data(), w.data(), 1e-5f, n, a.data());
    expect_close(tag("rmsnorm in place"), e.data(), a.data(), n, 1e-5f, 1e-5f);

    // LayerNorm (GPT-2): also on rows far from zero mean (GPT-2's residual stream drifts), where a
    // one-pass E[x^2] - E[x]^2 variance would cancel.
    for (const float shift : {0.0f, 300.0f}) {
      std::vector<float> xs = x;
      for (float& v : xs) v += shift;
      const std::string at = " n=" + std::to_string(n) + " shift=" + std::to_string(static_cast<int>(shift));
      ref::layer_norm(xs.data(), w.data(), y.data(), 1e-5f, n, e.data());
      k().layer_norm(xs.data(), w.data(), y.data(), 1e-5f, n, a.data());
      expect_close(tag("layer_norm" + at), e.data(), a.data(), n, 1e-5f, 1e-4f);
      a = xs;  // in place
      k().layer_norm(a.data(), w.data(), y.data(), 1e-5f, n, a.data());
      expect_close(tag("layer_norm in place" + at), e.data(), a.data(), n, 1e-5f, 1e-4f);
    }

    ref::gelu(x.data(), n, e.data());
    k().gelu(x.data(), n, a.data());
    expect_close(tag("gelu n=" + std::to_string(n)), e.data(), a.data(), n, 1e-6f, 1e-5f);
    a = x;  // in place, as the FFN calls it
    k().gelu(a.data(), n, a.data());
    expect_close(tag("gelu in place"), e.data(), a.data(), n, 1e-6f, 1e-5f);

    e = x;
    a = x;
    ref::softmax(e.data(), n);
    k().softmax(a.data(), n);
    expect_close(tag("softmax n=" + std::to_string(n)), e.data(), a.data(), n, 1e-6f, 1e-5f);

    const float lse_e = ref::log_sum_exp(x.data(), n), lse_a = k().log_sum_exp(x.data(), n);
    EXPECT_NEAR(lse_e, lse_a, 1e-5f * std::max(1.0f, std::fabs(lse_e))) << tag("log_sum_exp n=" + std::to_string(n));

    ref::silu_mul(x.data(), y.data(), n, e.data());
    k().silu_mul(x.data(), y.data(), n, a.data());
    expect_close(tag("silu_mul"), e.data(), a.data(), n, 1e-6f, 1e-5f);

    ref::gelu_mul(x.data(), y.data(), n, e.data());
    k().gelu_mul(x.data(), y.data(), n, a.data());
    expect_close(tag("gelu_mul"), e.data(), a.data(), n, 1e-6f, 1e-5f);
    a = x;  // out aliases gate, as the FFN calls it
    k().gelu_mul(a.data(), y.data(), n, a.data());
    expect_close(tag("gelu_mul in place"), e.data(), a.data(), n, 1e-6f, 1e-5f);

    ref::add(x.data(), y.data(), n, e.data());
    a = x;
    k().add(a.data(), y.data(), n, a.data());
    expect_close(tag("add (aliased)"), e.data(), a.data(), n, 0.0f);
  }
}

// exp-based kernels over a wide input range (vector exp clamps and polynomial accuracy).
TEST_P(KernelsTest, ExpKernelsWideRange) {
  for (int n : {5, 31, 1000, 151936}) {
    auto x = random_floats(n, 61 + n, 60.0f);
    x[0] = -100.0f;
    auto e = x, a = x;
    ref::softmax(e.data(), n);
    k().softmax(a.data(), n);
    expect_close(tag("softmax wide n=" + std::to_string(n)), e.data(), a.data(), n, 1e-7f, 2e-6f);
    const float lse_e = ref::log_sum_exp(x.data(), n), lse_a = k().log_sum_exp(x.data(), n);
    EXPECT_NEAR(lse_e, lse_a, 1e-5f * std::fabs(lse_e)) << tag("log_sum_exp wide");
    const auto up = random_floats(n, 62 + n);
    ref::silu_mul(x.data(), up.data(), n, e.data());
    k().silu_mul(x.data(), up.data(), n, a.data());
    expect_close(tag("silu_mul wide"), e.data(), a.data(), n, 1e-6f, 2e-6f);
    ref::gelu_mul(x.data(), up.data(), n, e.data());
    k().gelu_mul(x.data(), up.data(), n, a.data());
    expect_close(tag("gelu_mul wide"), e.data(), a.data(), n, 1e-6f, 2e-6f);
    ref::gelu(x.data(), n, e.data());
    k().gelu(x.data(), n, a.data());
    expect_close(tag("gelu wide"), e.data(), a.data(), n, 1e-6f, 2e-6f);
  }
}

TEST_P(KernelsTest, RopeMatchesReferenceBothLayouts) {
  for (RopeLayout layout : {RopeLayout::kHalf, RopeLayout::kInterleaved}) {
    for (int head_dim : {4, 8, 64}) {
      for (int rope_dim : {head_dim, head_dim / 2}) {
        for (int pos : {0, 1, 17, 1000}) {
          const int heads = 3;
          const auto x = random_floats(heads * head_dim, 31 + pos + head_dim);
          auto e = x, a = x;
          std::vector<float> cs(static_cast<size_t>(rope_dim));
          ref::rope(e.data(), heads, head_dim, rope_dim, pos, 10000.0f, layout);
          rope_cos_sin(pos, rope_frequencies(rope_dim, 10000.0f, nullptr), cs.data());
          k().rope(a.data(), heads, head_dim, rope_dim, layout, cs.data());
          expect_close(tag("rope hd=" + std::to_string(head_dim) + " pos=" + std::to_string(pos)), e.data(),
                       a.data(), heads * head_dim, 1e-6f, 1e-6f);
          std::vector<float> factors(static_cast<size_t>(rope_dim / 2));
          for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 3.0f * static_cast<float>(i % 3);
          auto es = x, as = x;
          ref::rope(es.data(), heads, head_dim, rope_dim, pos, 10000.0f, layout, factors.data());
          rope_cos_sin(pos, rope_frequencies(rope_dim, 10000.0f, factors.data()), cs.data());
          k().rope(as.data(), heads, head_dim, rope_dim, layout, cs.data());
          expect_close(tag("scaled rope"), es.data(), as.data(), heads * head_dim, 1e-6f, 1e-6f);
          if (pos == 0) expect_close(tag("rope pos 0 is identity"), x.data(), a.data(), heads * head_dim, 0.0f);
        }
      }
    }
  }
}

TEST(ReferenceKernels, RopeRotatesTheDocumentedPairs) {
  // head_dim 4, pos 1, theta 10000: pair 0 angle 1 rad, pair 1 angle 0.01 rad.
  float half[4] = {1, 0, 0, 0}, inter[4] = {1, 0, 0, 0};
  ref::rope(half, 1, 4, 4, 1, 10000.0f, RopeLayout::kHalf);
  ref::rope(inter, 1, 4, 4, 1, 10000.0f, RopeLayout::kInterleaved);
  EXPECT_NEAR(half[0], std::cos(1.0f), 1e-6);
  EXPECT_NEAR(half[2], std::sin(1.0f), 1e-6);  // x[0] pairs with x[0 + d/2]
  EXPECT_NEAR(inter[0], std::cos(1.0f), 1e-6);
  EXPECT_NEAR(inter[1], std::sin(1.0f), 1e-6);  // x[0] pairs with x[1]
  // A frequency factor divides the pair's angle (Llama-3 rope scaling): factor 4 -> 0.25 rad.
  float scaled[4] = {1, 0, 0, 0};
  const float factors[2] = {4.0f, 1.0f};
  ref::rope(scaled, 1, 4, 4, 1, 10000.0f, RopeLayout::kHalf, factors);
  EXPECT_NEAR(scaled[0], std::cos(0.25f), 1e-6);
  EXPECT_NEAR(scaled[2], std::sin(0.25f), 1e-6);
}

TEST_P(KernelsTest, AttendHeadMatchesReference) {
  for (DType kv : {DType::kF32, DType::kF16}) {
    for (int head_dim : {4, 8, 20, 64}) {
      for (int n_pos : {1, 2, 13, 100}) {
        const auto q = random_floats(head_dim, 41 + head_dim, 2.0f);
        const auto kf = random_floats(n_pos * head_dim, 42 + n_pos, 2.0f);
        const auto vf = random_floats(n_pos * head_dim, 43 + n_pos);
        std::vector<uint8_t> kb(n_pos * head_dim * 4), vb(kb.size());
        scalar_kernel_table().store_kv(kf.data(), kv, n_pos * head_dim, kb.data());
        scalar_kernel_table().store_kv(vf.data(), kv, n_pos * head_dim, vb.data());
        std::vector<float> scores(n_pos), e(head_dim), a(head_dim);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        ref::attend_head(q.data(), kb.data(), vb.data(), kv, n_pos, head_dim, scale, scores.data(), e.data());
        k().attend_head(q.data(), kb.data(), vb.data(), kv, n_pos, head_dim, scale, scores.data(), a.data());
        expect_close(tag(std::string("attend_head ") + type_name(kv) + " hd=" + std::to_string(head_dim) +
                         " n_pos=" + std::to_string(n_pos)),
                     e.data(), a.data(), head_dim, 1e-5f, 1e-5f);
      }
    }
  }
}

TEST_P(KernelsTest, StoreKvMatchesScalarConversion) {
  for (int n : {1, 7, 8, 16, 37}) {
    auto x = random_floats(n, 51 + n, 70000.0f);  // includes values that overflow f16
    x[0] = 1e-6f;                                 // f16 subnormal
    std::vector<uint16_t> a(n);
    k().store_kv(x.data(), DType::kF16, n, a.data());
    for (int i = 0; i < n; ++i) ASSERT_EQ(float_to_half(x[i]), a[i]) << tag("store_kv") << " i=" << i << " x=" << x[i];
    std::vector<float> f(n);
    k().store_kv(x.data(), DType::kF32, n, f.data());
    expect_close(tag("store_kv f32"), x.data(), f.data(), n, 0.0f);
  }
}

// GQA reference: per-head attend_head over a [pos][kv_head][dim] cache equals ref::attention.
TEST(ReferenceKernels, AttentionGqaMatchesPerHead) {
  const int n_heads = 6, n_kv = 2, hd = 8, n_pos = 9;
  const auto q = random_floats(n_heads * hd, 1), kc = random_floats(n_pos * n_kv * hd, 2), vc = random_floats(n_pos * n_kv * hd, 3);
  std::vector<float> out(n_heads * hd);
  ref::attention(q.data(), kc.data(), vc.data(), n_pos, n_heads, n_kv, hd, out.data());
  for (int h = 0; h < n_heads; ++h) {
    const int kvh = h / (n_heads / n_kv);
    std::vector<float> kh(n_pos * hd), vh(n_pos * hd), scores(n_pos), o(hd);
    for (int p = 0; p < n_pos; ++p) {
      for (int d = 0; d < hd; ++d) {
        kh[p * hd + d] = kc[(p * n_kv + kvh) * hd + d];
        vh[p * hd + d] = vc[(p * n_kv + kvh) * hd + d];
      }
    }
    ref::attend_head(q.data() + h * hd, kh.data(), vh.data(), DType::kF32, n_pos, hd, 1.0f / std::sqrt(8.0f),
                     scores.data(), o.data());
    expect_close("attention head " + std::to_string(h), o.data(), out.data() + h * hd, hd, 1e-6f);
  }
}

TEST(Fp16, HalfRoundTripIsExactForEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(h, float_to_half(f)) << "half 0x" << std::hex << h;
  }
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // rounds up to inf
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3C00);  // tie to even
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.5f)), 1.5f);
}

TEST(Isa, SelectionAndTables) {
  EXPECT_TRUE(isa_supported(Isa::kScalar));
  EXPECT_NE(kernel_table(Isa::kScalar), nullptr);
  EXPECT_TRUE(isa_supported(selected_isa()));
  EXPECT_EQ(active_kernels().isa, selected_isa());
  std::string paths;
  for (Isa isa : supported_isas()) paths += std::string(" ") + isa_name(isa);
  std::printf("kernel paths on this machine:%s (selected: %s)\n", paths.c_str(), isa_name(selected_isa()));
  for (Isa isa : supported_isas()) {
    const KernelTable* t = kernel_table(isa);
    ASSERT_NE(t, nullptr) << isa_name(isa);
    EXPECT_EQ(t->isa, isa);
    for (auto* m : t->matmul) EXPECT_NE(m, nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, KernelsTest, ::testing::ValuesIn(supported_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace anelm::engine::kernels
