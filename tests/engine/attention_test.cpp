// attend_causal of every supported ISA against ref::attend_causal (attend_head per token and head):
// ragged query counts and cache depths, GQA ratios 1/2/4/7, head_dim 16/64/128 (and an odd one), F16 and
// F32 KV, prompts continuing after cached tokens; scratch and output bounds are checked by canaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/reference.h"

namespace anelm::engine::kernels {
namespace {

constexpr float kCanary = 12345.0f;

std::vector<float> random_floats(size_t n, uint32_t seed, float scale) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

struct Shape {
  int n_q, pos0, group, head_dim;
  int window = 0;  // > 0: sliding window (Gemma 3's local layers)
};

std::string describe(const Shape& s, DType kv, Isa isa) {
  return std::string("attend_causal [") + isa_name(isa) + "] " + dtype_name(kv) + " n_q=" + std::to_string(s.n_q) +
         " pos0=" + std::to_string(s.pos0) + " group=" + std::to_string(s.group) +
         " hd=" + std::to_string(s.head_dim) + " window=" + std::to_string(s.window);
}

// Runs one call on the second of two KV groups (so the head offset within a token row is exercised)
// and compares every output row of that group with the reference; the first group's rows, the
// padding between tokens and the end of the scratch must stay untouched.
void check(const KernelTable& k, const Shape& s, DType kv, float score_scale) {
  const int hd = s.head_dim, n_pos = s.pos0 + s.n_q;
  const int64_t ld = 2 * s.group * hd + 3;  // two groups plus padding floats between tokens
  const int64_t off = s.group * hd;         // the group under test
  const auto q = random_floats(static_cast<size_t>(s.n_q * ld), 7 + s.n_q + hd, score_scale);
  const auto kf = random_floats(static_cast<size_t>(n_pos) * hd, 11 + n_pos, 1.0f);
  const auto vf = random_floats(static_cast<size_t>(n_pos) * hd, 13 + n_pos, 1.0f);
  std::vector<uint8_t> kb(kf.size() * 4), vb(vf.size() * 4);
  scalar_kernel_table().store_kv(kf.data(), kv, n_pos * hd, kb.data());
  scalar_kernel_table().store_kv(vf.data(), kv, n_pos * hd, vb.data());

  AttentionArgs a;
  a.q = q.data() + off;
  a.ld = ld;
  a.k = kb.data();
  a.v = vb.data();
  a.kv = kv;
  a.n_q = s.n_q;
  a.pos0 = s.pos0;
  a.group = s.group;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.window = s.window;

  std::vector<float> expected(q.size(), kCanary), actual(q.size(), kCanary);
  a.out = expected.data() + off;
  ref::attend_causal(a);
  const int64_t scratch_n = attention_scratch_floats(hd);
  std::vector<float> scratch(static_cast<size_t>(scratch_n + 16), kCanary);
  a.out = actual.data() + off;
  k.attend_causal(a, scratch.data());

  const std::string what = describe(s, kv, k.isa);
  for (int i = 0; i < 16; ++i) ASSERT_EQ(scratch[scratch_n + i], kCanary) << what << ": scratch overrun";
  int bad = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(q.size()) && bad < 3; ++i) {
    const float e = expected[i], g = actual[i];
    if (!(std::fabs(e - g) <= 2e-5f + 2e-5f * std::fabs(e))) {
      const int64_t t = i / ld, c = i % ld;
      ADD_FAILURE() << what << ": token " << t << " column " << c << " expected " << e << " actual " << g;
      ++bad;
    }
  }
  if (s.window <= 0) return;
  // A windowed layer's ring (KvCache) hands over only the positions from the first token's window
  // on: row 0 is position kv_first. The rows before it are NaN here, so reading one shows. The same
  // arithmetic on the same values: the outputs are bitwise those of the whole cache.
  const int lo = std::max(0, s.pos0 - s.window + 1), pad = std::min(lo, 40);
  const int64_t row_bytes = static_cast<int64_t>(hd) * (kv == DType::kF16 ? 2 : 4);
  std::vector<uint8_t> kr(static_cast<size_t>((n_pos - lo + pad) * row_bytes), 0xFF);  // 0xFF..: NaN
  std::vector<uint8_t> vr(kr.size(), 0xFF);
  std::copy(kb.begin() + lo * row_bytes, kb.begin() + n_pos * row_bytes, kr.begin() + pad * row_bytes);
  std::copy(vb.begin() + lo * row_bytes, vb.begin() + n_pos * row_bytes, vr.begin() + pad * row_bytes);
  a.k = kr.data() + pad * row_bytes;
  a.v = vr.data() + pad * row_bytes;
  a.kv_first = lo;
  std::vector<float> ring(q.size(), kCanary), ring_ref(q.size(), kCanary);
  a.out = ring.data() + off;
  k.attend_causal(a, scratch.data());
  a.out = ring_ref.data() + off;
  ref::attend_causal(a);
  EXPECT_EQ(std::memcmp(ring.data(), actual.data(), ring.size() * sizeof(float)), 0)
      << what << ": kv_first " << lo << " (rows from the window on) changed the output";
  EXPECT_EQ(std::memcmp(ring_ref.data(), expected.data(), ring.size() * sizeof(float)), 0)
      << what << ": the reference with kv_first " << lo << " differs";
}

class AttentionTest : public ::testing::TestWithParam<Isa> {
 protected:
  const KernelTable& k() const { return *kernel_table(GetParam()); }
};

TEST_P(AttentionTest, PrefillBlocksMatchReference) {
  // n_q and n_pos ragged against the 32-position K/V block and the 8/16-lane row vectors; pos0 > 0
  // is a prompt continuing after cached tokens.
  const Shape shapes[] = {{1, 0, 1, 64},   {5, 0, 1, 64},    {17, 0, 2, 64},  {9, 0, 7, 64},
                          {13, 31, 7, 64}, {40, 0, 2, 128},  {3, 100, 7, 128}, {70, 33, 1, 64},
                          {64, 0, 1, 128}, {20, 57, 7, 128}, {33, 1, 2, 64},  {11, 0, 7, 20}};
  for (DType kv : {DType::kF32, DType::kF16}) {
    for (const Shape& s : shapes) check(k(), s, kv, 2.0f);
  }
}

TEST_P(AttentionTest, DecodeOneTokenMatchesReference) {
  // n_q = 1: the group's heads are the kernel's rows; depths around block and vector edges.
  for (DType kv : {DType::kF32, DType::kF16}) {
    for (int group : {1, 2, 7}) {
      for (int hd : {64, 128}) {
        for (int pos0 : {0, 1, 31, 32, 33, 200, 1000}) check(k(), {1, pos0, group, hd}, kv, 2.0f);
      }
    }
  }
}

TEST_P(AttentionTest, FewRowsSpanningBlockEdgesMatchReference) {
  // Few rows (up to half a vector: positions run across the lanes instead) from several tokens,
  // whose last positions straddle a 32-position K/V block edge, so some rows skip the last block.
  const Shape shapes[] = {{4, 30, 2, 64}, {8, 60, 1, 128}, {2, 31, 4, 64}, {3, 94, 1, 64}, {2, 15, 1, 16}};
  for (DType kv : {DType::kF32, DType::kF16}) {
    for (const Shape& s : shapes) check(k(), s, kv, 2.0f);
  }
}

TEST_P(AttentionTest, PeakedScoresStayFinite) {
  // Large scores make the running maximum jump between blocks: the rescaling must keep sums exact.
  for (DType kv : {DType::kF32, DType::kF16}) {
    check(k(), {24, 40, 7, 64}, kv, 12.0f);
    check(k(), {1, 300, 2, 128}, kv, 12.0f);
  }
}

TEST_P(AttentionTest, DeepCacheMatchesReference) {
  // The engine's last 512-token prefill chunk of a 2048-token prompt (Qwen2.5-0.5B: 7 heads per KV
  // head), cut to its last 64 tokens to keep the reference quick.
  for (DType kv : {DType::kF32, DType::kF16}) check(k(), {64, 1984, 7, 64}, kv, 2.0f);
}

TEST_P(AttentionTest, SlidingWindowMatchesReference) {
  // Windows shorter than, equal to and longer than the K/V block and the query span, with rows
  // whose windows start inside, at the edge of and past the pass's first blocks (prefill, decode,
  // few rows); window 1 attends to the token itself only.
  const Shape shapes[] = {{70, 0, 1, 64, 16},  {70, 33, 2, 64, 64},  {40, 100, 7, 128, 5}, {64, 0, 1, 128, 1},
                          {1, 200, 2, 64, 64}, {1, 63, 7, 128, 64},  {1, 64, 1, 64, 64},   {1, 1000, 1, 128, 33},
                          {4, 90, 2, 64, 20},  {8, 60, 1, 128, 7},   {3, 94, 1, 64, 40},   {20, 57, 7, 128, 512},
                          {11, 30, 7, 20, 9}};
  for (DType kv : {DType::kF32, DType::kF16}) {
    for (const Shape& s : shapes) check(k(), s, kv, 2.0f);
  }
}

// ANELM_F16_ACTIVATIONS=f16 (a parity diagnostic, as ggml converts Q to an F16 cache's type): the
// table's attention sees the group's queries rounded to f16 and nothing else changes, so its output
// is bitwise the exact kernel's on rounded queries, and differs from it on the f32 ones. The rows
// outside the group (another group's heads, the padding) are not the kernel's to read.
TEST_P(AttentionTest, F16RoundedQueriesAreTheExactKernelOnRoundedQueries) {
  const KernelTable rounded = with_f16_rounded_activations(k());
  const int n_q = 5, pos0 = 40, group = 2, hd = 64;
  const int64_t ld = 2 * group * hd + 3, off = group * hd;
  auto q = random_floats(static_cast<size_t>(n_q * ld), 21, 2.0f);
  const auto kf = random_floats(static_cast<size_t>(pos0 + n_q) * hd, 22, 1.0f);
  const auto vf = random_floats(kf.size(), 23, 1.0f);
  std::vector<uint8_t> kb(kf.size() * 2), vb(vf.size() * 2);
  scalar_kernel_table().store_kv(kf.data(), DType::kF16, static_cast<int>(kf.size()), kb.data());
  scalar_kernel_table().store_kv(vf.data(), DType::kF16, static_cast<int>(vf.size()), vb.data());
  AttentionArgs a;
  a.ld = ld, a.k = kb.data(), a.v = vb.data(), a.kv = DType::kF16, a.n_q = n_q, a.pos0 = pos0;
  a.group = group, a.head_dim = hd, a.scale = 0.125f;
  std::vector<float> scratch(static_cast<size_t>(attention_scratch_floats(hd)));
  std::vector<float> on_f32(q.size()), actual(q.size()), on_rounded(q.size());
  a.q = q.data() + off;
  a.out = on_f32.data() + off;
  k().attend_causal(a, scratch.data());
  a.out = actual.data() + off;
  rounded.attend_causal(a, scratch.data());
  for (int t = 0; t < n_q; ++t)
    for (int64_t i = 0; i < off; ++i) q[t * ld + off + i] = round_to_half(q[t * ld + off + i]);
  a.out = on_rounded.data() + off;
  k().attend_causal(a, scratch.data());
  EXPECT_EQ(std::memcmp(actual.data(), on_rounded.data(), actual.size() * sizeof(float)), 0) << isa_name(GetParam());
  EXPECT_NE(std::memcmp(actual.data(), on_f32.data(), actual.size() * sizeof(float)), 0) << isa_name(GetParam());
}

// The reference's window convention is llama.cpp's (is_masked_swa: a key at j is masked for the
// query at p when p - j >= window): a query sees exactly `window` positions, itself included. With
// V rows that are one-hot in the position, the output is the attention weights, so the boundary
// positions are checked directly.
TEST(AttentionWindow, ReferenceSeesExactlyTheLastWindowPositions) {
  const int hd = 64, window = 8, pos = 20, n_pos = pos + 1;
  std::vector<float> q(hd, 0.0f), k(static_cast<size_t>(n_pos) * hd, 0.0f), v(static_cast<size_t>(n_pos) * hd, 0.0f);
  for (int j = 0; j < n_pos; ++j) v[static_cast<size_t>(j) * hd + j] = 1.0f;  // equal scores: uniform weights
  std::vector<float> out(hd);
  AttentionArgs a;
  a.q = q.data(), a.out = out.data(), a.ld = hd, a.k = k.data(), a.v = v.data(), a.kv = DType::kF32;
  a.n_q = 1, a.pos0 = pos, a.group = 1, a.head_dim = hd, a.window = window;
  ref::attend_causal(a);
  EXPECT_EQ(out[pos - window], 0.0f) << "position p - window is outside the window";
  EXPECT_NEAR(out[pos - window + 1], 1.0f / window, 1e-6f) << "position p - window + 1 is inside";
  EXPECT_NEAR(out[pos], 1.0f / window, 1e-6f);
  for (Isa isa : supported_isas()) {
    std::vector<float> got(hd), scratch(static_cast<size_t>(attention_scratch_floats(hd)));
    a.out = got.data();
    kernel_table(isa)->attend_causal(a, scratch.data());
    for (int j = 0; j < n_pos; ++j) EXPECT_NEAR(got[j], out[j], 1e-6f) << isa_name(isa) << " position " << j;
  }
}

TEST(AttentionTable, EveryIsaHasTheKernel) {
  for (Isa isa : supported_isas()) EXPECT_NE(kernel_table(isa)->attend_causal, nullptr) << isa_name(isa);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, AttentionTest, ::testing::ValuesIn(supported_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace anelm::engine::kernels
