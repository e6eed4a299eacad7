// The GGUF block types beyond Q8_0/Q4_0 (Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K..Q6_K, IQ4_XS): hand-built
// blocks decode to hand-computed values (the layouts of dtype.h), the Q8_K activation quantiser
// matches llama.cpp's definition, and every ISA's matmul of every type matches the reference on
// random blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/reference.h"

namespace anelm::engine::kernels {
namespace {

constexpr DType kNewTypes[] = {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kQ2_K,
                               DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS};

uint16_t h(float v) { return float_to_half(v); }

// Decodes one block of type t with both decoders (the reference's and row_to_f32).
std::vector<float> decode(DType t, const void* block) {
  const int64_t n = dtype_block_elems(t);
  std::vector<float> a(static_cast<size_t>(n)), b(a.size());
  ref::dequantize_row(block, t, 0, n, a.data());
  row_to_f32(t, block, b.data(), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(a[i], b[i]) << dtype_name(t) << " element " << i;
  return a;
}

TEST(QuantBlocks, SizesMatchGguf) {
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_K, 512), 288);
  EXPECT_EQ(dtype_row_bytes(DType::kQ6_K, 256), 210);
  EXPECT_EQ(dtype_row_bytes(DType::kQ5_0, 64), 44);
  EXPECT_EQ(dtype_block_elems(DType::kIQ4_NL), 32);
  EXPECT_EQ(dtype_block_elems(DType::kIQ4_XS), 256);
  EXPECT_TRUE(uses_q8k_activations(DType::kQ2_K));
  EXPECT_TRUE(uses_q8_activations(DType::kQ5_1));
  EXPECT_FALSE(uses_q8k_activations(DType::kQ8_0));
}

TEST(QuantBlocks, Q4_KHandBuilt) {
  BlockQ4_K b{};
  b.d = h(1.0f);
  b.dmin = h(0.5f);
  b.scales[0] = 0x42;  // sub-block 0 scale 2; top bits = high bits of sub-block 4's scale (1)
  b.scales[4] = 0x83;  // sub-block 0 min 3; top bits = high bits of sub-block 4's min (2)
  b.scales[1] = 5;     // sub-block 1 scale 5
  b.scales[5] = 1;     // sub-block 1 min 1
  b.scales[8] = 0x21;  // sub-block 4: scale low 1, min low 2 -> scale 17, min 34
  b.qs[0] = 0x73;      // element 0: 3, element 32: 7
  b.qs[64] = 0x0A;     // element 128: 10
  const auto v = decode(DType::kQ4_K, &b);
  EXPECT_EQ(v[0], 2 * 3 - 1.5f);
  EXPECT_EQ(v[1], -1.5f);
  EXPECT_EQ(v[32], 5 * 7 - 0.5f);
  EXPECT_EQ(v[128], 17 * 10 - 17.0f);
}

TEST(QuantBlocks, Q6_KHandBuilt) {
  BlockQ6_K b{};
  b.d = h(0.5f);
  b.scales[0] = 3, b.scales[2] = -2, b.scales[4] = 7, b.scales[6] = 1, b.scales[9] = -4;
  b.ql[0] = 0x5A;   // element 0 low 4 bits 10, element 64 low 4 bits 5
  b.qh[0] = 0xE6;   // 2-bit fields: element 0 -> 2, 32 -> 1, 64 -> 2, 96 -> 3
  b.ql[32] = 0x0F;  // element 32 low 4 bits 15, element 96 low 4 bits 0
  b.ql[81] = 0x01;  // element 128 + 17
  b.qh[49] = 0x03;
  const auto v = decode(DType::kQ6_K, &b);
  EXPECT_EQ(v[0], 0.5f * 3 * (42 - 32));
  EXPECT_EQ(v[64], 0.5f * 7 * (37 - 32));
  EXPECT_EQ(v[32], 0.5f * -2 * (31 - 32));
  EXPECT_EQ(v[96], 0.5f * 1 * (48 - 32));
  EXPECT_EQ(v[145], 0.5f * -4 * (49 - 32));
  EXPECT_EQ(v[1], 0.5f * 3 * -32);
}

TEST(QuantBlocks, Q5_0Q4_1Q5_1Iq4NlHandBuilt) {
  BlockQ5_0 a{};
  a.d = h(2.0f);
  a.qs[0] = 0x31;
  a.qs[1] = 0xF0;
  a.qh[0] = 0x01;  // element 0's fifth bit
  a.qh[2] = 0x02;  // element 17's fifth bit
  auto v = decode(DType::kQ5_0, &a);
  EXPECT_EQ(v[0], 2.0f * 1);
  EXPECT_EQ(v[16], 2.0f * (3 - 16));
  EXPECT_EQ(v[17], 2.0f * 15);
  EXPECT_EQ(v[1], 2.0f * -16);

  BlockQ4_1 b{};
  b.d = h(0.5f);
  b.m = h(-1.0f);
  b.qs[0] = 0x21;
  v = decode(DType::kQ4_1, &b);
  EXPECT_EQ(v[0], -0.5f);
  EXPECT_EQ(v[16], 0.0f);

  BlockQ5_1 c{};
  c.d = h(1.0f);
  c.m = h(0.5f);
  c.qs[0] = 0x0F;
  c.qh[0] = 0x01;
  v = decode(DType::kQ5_1, &c);
  EXPECT_EQ(v[0], 31.5f);
  EXPECT_EQ(v[16], 0.5f);

  BlockIQ4_NL d{};
  d.d = h(0.5f);
  d.qs[0] = 0xF0;
  v = decode(DType::kIQ4_NL, &d);
  EXPECT_EQ(v[0], 0.5f * -127);
  EXPECT_EQ(v[16], 0.5f * 113);
  EXPECT_EQ(v[1], 0.5f * -127);
}

TEST(QuantBlocks, Q2_KQ3_KQ5_KIq4XsHandBuilt) {
  BlockQ2_K a{};
  a.d = h(1.0f);
  a.dmin = h(0.5f);
  a.scales[0] = 0x23, a.scales[2] = 0x10, a.scales[4] = 0x05, a.scales[6] = 0x31;
  a.qs[0] = 0xE4;  // 2-bit fields 0, 1, 2, 3 for elements 0, 32, 64, 96
  auto v = decode(DType::kQ2_K, &a);
  EXPECT_EQ(v[0], -1.0f);
  EXPECT_EQ(v[32], -0.5f);
  EXPECT_EQ(v[64], 10.0f);
  EXPECT_EQ(v[96], 1.5f);

  BlockQ3_K b{};
  b.d = h(1.0f);
  b.scales[0] = 0x05;  // sub-block 0: low bits 5 ...
  b.scales[8] = 0x02;  // ... high bits 2 -> 37 - 32 = 5; sub-blocks 2 and 8 stay at -32
  b.hmask[0] = 0x01;   // element 0 has its high bit (no -4)
  b.qs[0] = 0x03;
  v = decode(DType::kQ3_K, &b);
  EXPECT_EQ(v[0], 15.0f);
  EXPECT_EQ(v[32], 128.0f);
  EXPECT_EQ(v[128], 128.0f);

  BlockQ5_K c{};
  c.d = h(1.0f);
  c.dmin = h(1.0f);
  c.scales[0] = 1, c.scales[1] = 2, c.scales[5] = 1;
  c.qs[0] = 0x02;
  c.qh[0] = 0x03;  // fifth bits of elements 0 and 32
  v = decode(DType::kQ5_K, &c);
  EXPECT_EQ(v[0], 18.0f);
  EXPECT_EQ(v[32], 2 * 16 - 1.0f);

  BlockIQ4_XS d{};
  d.d = h(1.0f);
  d.scales_h = 0x0008;  // sub-block 1 high bits 2
  d.scales_l[0] = 0x13;  // sub-block 0 low 3, sub-block 1 low 1
  d.qs[0] = 0x08;
  d.qs[16] = 0x0F;
  v = decode(DType::kIQ4_XS, &d);
  EXPECT_EQ(v[0], -29.0f * 1);
  EXPECT_EQ(v[16], -29.0f * -127);
  EXPECT_EQ(v[32], 1.0f * 113);
}

// llama.cpp's Q8_K: scale from the signed largest-magnitude value, q clamped to 127, 16-sums.
TEST(QuantBlocks, Q8KActivationsAsLlamaCpp) {
  std::vector<float> x(256, 0.0f);
  x[3] = -1.984375f;     // the largest |x|, negative: iscale = -127 / x[3] = 64 exactly, d = 1/64
  x[4] = 2.5f / 64;      // 2.5 steps: ties to even -> 2
  x[5] = 0.5f / 64;      // half a step -> 0
  x[17] = -1.5f / 64;    // -1.5 steps -> -2
  QBlockK q{};
  ref::quantize_q8k(x.data(), 256, &q);
  EXPECT_EQ(q.d, 1.0f / 64);
  EXPECT_EQ(q.qs[3], -127);
  EXPECT_EQ(q.qs[4], 2);
  EXPECT_EQ(q.qs[5], 0);
  EXPECT_EQ(q.qs[17], -2);
  EXPECT_EQ(q.bsums[0], -125);
  EXPECT_EQ(q.bsums[1], -2);
  std::vector<float> zero(256, 0.0f);
  ref::quantize_q8k(zero.data(), 256, &q);
  EXPECT_EQ(q.d, 0.0f);
  EXPECT_EQ(q.bsums[0], 0);
}

// Random bytes with sane f16 scales (no inf/nan) in every block of `n` elements of type t.
std::vector<uint8_t> random_blocks(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> out(static_cast<size_t>(rows * dtype_row_bytes(t, cols)));
  for (auto& b : out) b = static_cast<uint8_t>(gen());
  std::uniform_real_distribution<float> scale(0.001f, 0.02f);
  std::vector<int> f16_at;  // byte offsets of f16 fields within a block
  switch (t) {
    case DType::kQ4_1: case DType::kQ5_1: case DType::kQ4_K: case DType::kQ5_K: f16_at = {0, 2}; break;
    case DType::kQ8_0: case DType::kQ4_0: case DType::kQ5_0: case DType::kIQ4_NL: case DType::kIQ4_XS: f16_at = {0}; break;
    case DType::kQ2_K: f16_at = {80, 82}; break;
    case DType::kQ3_K: f16_at = {108}; break;
    case DType::kQ6_K: f16_at = {208}; break;
    default: break;
  }
  const int64_t bb = dtype_block_bytes(t);
  for (size_t blk = 0; blk < out.size() / static_cast<size_t>(bb); ++blk) {
    for (int off : f16_at) {
      const uint16_t v = float_to_half((off == 2 && (t == DType::kQ4_1 || t == DType::kQ5_1) ? -1.0f : 1.0f) * scale(gen));
      std::memcpy(out.data() + blk * bb + off, &v, 2);
    }
  }
  return out;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

class QuantKernelsTest : public ::testing::TestWithParam<Isa> {
 protected:
  const KernelTable& k() const { return *kernel_table(GetParam()); }
};

TEST_P(QuantKernelsTest, QuantizeQ8KBitIdenticalToReference) {
  auto x = random_floats(256 * 5, 9);
  // Edge blocks: the largest magnitude twice with opposite signs (the first one's sign wins), exact
  // half steps (ties to even), and all zeros.
  std::vector<float> edge(256 * 3, 0.0f);
  edge[10] = 3.0f, edge[200] = -3.0f, edge[11] = 1.0f;
  edge[256 + 3] = -1.984375f, edge[256 + 4] = 2.5f / 64, edge[256 + 5] = 0.5f / 64, edge[256 + 17] = -1.5f / 64;
  x.insert(x.end(), edge.begin(), edge.end());
  const int64_t blocks = static_cast<int64_t>(x.size()) / 256;
  std::vector<QBlockK> e(static_cast<size_t>(blocks)), a(e.size());
  ref::quantize_q8k(x.data(), blocks * 256, e.data());
  k().quantize_q8k(x.data(), blocks * 256, a.data());
  EXPECT_EQ(std::memcmp(e.data(), a.data(), sizeof(QBlockK) * e.size()), 0) << isa_name(GetParam());
}

// Each type's matmul against the reference on the dequantised activations the kernel saw
// (tight), for decode (n = 1) and prefill tiles (ragged token counts), and a row sub-range.
TEST_P(QuantKernelsTest, MatmulMatchesReference) {
  for (DType t : kNewTypes) {
    const bool qk = uses_q8k_activations(t);
    for (int64_t cols : {256, 512, 768, 96, 288}) {  // 32-element types: odd block counts too
      if (cols % dtype_block_elems(t) != 0) continue;
      for (int64_t rows : {1, 9, 21, 37}) {
        for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 40}) {  // 2-8: few-token kernels; AMX tiles (full and padded chunks)
          const auto w = random_blocks(t, rows, cols, static_cast<uint32_t>(cols + rows + n));
          const auto x = random_floats(static_cast<size_t>(n * cols), static_cast<uint32_t>(3 + n));
          std::vector<QBlock8> xq(static_cast<size_t>(n * cols / kQBlock));
          std::vector<QBlockK> xk(static_cast<size_t>(n * cols / kQKBlock));
          std::vector<float> xdq(x.size());
          if (qk) {
            k().quantize_q8k(x.data(), n * cols, xk.data());
            ref::dequantize_q8k(xk.data(), n * cols, xdq.data());
          } else {
            k().quantize_q8(x.data(), n * cols, xq.data());
            ref::dequantize_q8(xq.data(), n * cols, xdq.data());
          }
          std::vector<float> expected(static_cast<size_t>(n * rows)), actual(expected.size(), -999.0f);
          ref::matmul(w.data(), t, rows, cols, xdq.data(), n, expected.data());
          const void* xa = qk ? static_cast<const void*>(xk.data()) : xq.data();
          const int64_t r0 = rows > 4 ? 2 : 0;  // rows before r0 must stay untouched
          k().matmul[dtype_index(t)](w.data(), cols, nullptr, xa, n, actual.data(), rows, r0, rows);
          double max_diff = 0;
          for (int i = 0; i < n; ++i) {
            for (int64_t r = 0; r < rows; ++r) {
              const float e = expected[i * rows + r], a = actual[i * rows + r];
              if (r < r0) {
                ASSERT_EQ(a, -999.0f) << "wrote outside its rows";
                continue;
              }
              const double diff = std::fabs(e - a);
              max_diff = std::max(max_diff, diff);
              ASSERT_LE(diff, 2e-3 + 2e-5 * std::fabs(e))
                  << "matmul " << dtype_name(t) << " [" << isa_name(GetParam()) << "] rows=" << rows
                  << " cols=" << cols << " n=" << n << " token " << i << " row " << r << ": expected " << e
                  << " actual " << a;
            }
          }
        }
      }
    }
  }
}

// Prefill shapes (the integer path: no float activations given): K long enough to be real model
// rows, enough rows that the kernels' row chunks (AVX2 K-quants: ~48 KB of weights each) split the
// range several times, token counts that leave ragged tiles, and a row sub-range starting mid-chunk.
TEST_P(QuantKernelsTest, MatmulManyTokensMatchesReference) {
  for (DType t : kNewTypes) {
    const bool qk = uses_q8k_activations(t);
    // 6144 columns: 8 tokens' activations outgrow L1 and the tiles run in column slices (sliced_rows).
    const int64_t rows = 200, r0 = 5;
    for (const auto& [n, cols] : {std::pair<int, int64_t>{13, 1024}, {35, 1024}, {35, 6144}}) {
      const auto w = random_blocks(t, rows, cols, static_cast<uint32_t>(7 * n + 1));
      const auto x = random_floats(static_cast<size_t>(n * cols), static_cast<uint32_t>(11 + n));
      std::vector<QBlock8> xq(static_cast<size_t>(n * cols / kQBlock));
      std::vector<QBlockK> xk(static_cast<size_t>(n * cols / kQKBlock));
      std::vector<float> xdq(x.size());
      if (qk) {
        k().quantize_q8k(x.data(), n * cols, xk.data());
        ref::dequantize_q8k(xk.data(), n * cols, xdq.data());
      } else {
        k().quantize_q8(x.data(), n * cols, xq.data());
        ref::dequantize_q8(xq.data(), n * cols, xdq.data());
      }
      std::vector<float> expected(static_cast<size_t>(n * rows)), actual(expected.size(), -999.0f);
      ref::matmul(w.data(), t, rows, cols, xdq.data(), n, expected.data());
      const void* xa = qk ? static_cast<const void*>(xk.data()) : xq.data();
      k().matmul[dtype_index(t)](w.data(), cols, nullptr, xa, n, actual.data(), rows, r0, rows);
      for (int i = 0; i < n; ++i) {
        for (int64_t r = 0; r < rows; ++r) {
          const float e = expected[i * rows + r], a = actual[i * rows + r];
          if (r < r0) {
            ASSERT_EQ(a, -999.0f) << "wrote outside its rows";
            continue;
          }
          ASSERT_LE(std::fabs(e - a), 4e-3 + 2e-5 * std::fabs(e))
              << "matmul " << dtype_name(t) << " [" << isa_name(GetParam()) << "] n=" << n << " cols=" << cols << " token " << i
              << " row " << r << ": expected " << e << " actual " << a;
        }
      }
    }
  }
}

// bf16 with round to nearest even (as VCVTNE2PS2BF16).
float round_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }

// The opt-in AMX-BF16 table's many-token path (float activations given, n >= bf16_min_tokens): products of
// bf16-rounded weights and activations summed in fp32, against a double-precision sum of the same
// rounded products. Token and row counts that leave partial tiles, a row sub-range, and K long
// enough to be cut into slices (cols 2048 at 300 tokens).
TEST(AmxBf16, ManyTokenMatmulMatchesBf16Reference) {
  const KernelTable* amx = amx_bf16_table();
  if (amx == nullptr) GTEST_SKIP() << "no AMX-BF16 on this CPU";
  std::vector<DType> types(std::begin(kNewTypes), std::end(kNewTypes));
  types.insert(types.begin(), {DType::kQ8_0, DType::kQ4_0});
  struct Shape { int64_t rows, cols; int n; };
  for (DType t : types) {
    const int from = amx->bf16_min_tokens[dtype_index(t)];
    ASSERT_GT(from, 0) << dtype_name(t);
    ASSERT_LE(from, 256) << dtype_name(t);
    for (Shape sh : {Shape{37, 256, from}, Shape{64, 512, from + 15}, Shape{21, 2048, 300}, Shape{40, 96, 300}}) {
      if (sh.cols % dtype_block_elems(t) != 0) continue;
      const auto w = random_blocks(t, sh.rows, sh.cols, static_cast<uint32_t>(sh.cols + sh.n));
      const auto x = random_floats(static_cast<size_t>(sh.n * sh.cols), static_cast<uint32_t>(sh.n));
      std::vector<float> wr(static_cast<size_t>(sh.cols));
      std::vector<float> actual(static_cast<size_t>(sh.n * sh.rows), -999.0f);
      // The quantised activations too, as the engine passes them (the int8 path would read them).
      std::vector<QBlock8> xq(static_cast<size_t>(sh.n * sh.cols / kQBlock));
      std::vector<QBlockK> xk(static_cast<size_t>(sh.n * sh.cols / kQKBlock));
      amx->quantize_q8(x.data(), sh.n * sh.cols, xq.data());
      if (sh.cols % kQKBlock == 0) amx->quantize_q8k(x.data(), sh.n * sh.cols, xk.data());
      const void* xa = uses_q8k_activations(t) ? static_cast<const void*>(xk.data()) : xq.data();
      const int64_t r0 = 3;  // rows before r0 must stay untouched
      amx->matmul[dtype_index(t)](w.data(), sh.cols, x.data(), xa, sh.n, actual.data(), sh.rows, r0, sh.rows);
      for (int64_t r = 0; r < sh.rows; ++r) {
        ref::dequantize_row(w.data(), t, r, sh.cols, wr.data());
        for (int i = 0; i < sh.n; ++i) {
          const float a = actual[static_cast<size_t>(i * sh.rows + r)];
          if (r < r0) {
            ASSERT_EQ(a, -999.0f) << "wrote outside its rows";
            continue;
          }
          double e = 0, mag = 0;
          for (int64_t c = 0; c < sh.cols; ++c) {
            const double p = static_cast<double>(round_bf16(wr[c])) * round_bf16(x[i * sh.cols + c]);
            e += p;
            mag += std::fabs(p);
          }
          ASSERT_LE(std::fabs(e - a), 1e-4 * mag + 1e-6)
              << dtype_name(t) << " rows=" << sh.rows << " cols=" << sh.cols << " n=" << sh.n << " token " << i
              << " row " << r << ": expected " << e << " actual " << a;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, QuantKernelsTest, ::testing::ValuesIn(supported_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace anelm::engine::kernels
