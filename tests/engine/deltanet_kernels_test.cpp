// The Gated DeltaNet kernels (delta_rule, conv_silu) of every supported ISA against the naive
// references, on real (128) and odd head sizes, token counts that end mid-vector, and conv splits.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/kernels.h"
#include "engine/kernels/reference.h"

namespace anelm::engine::kernels {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// Unit-norm vectors of `dim` at `offset` in each row (the mixer L2-normalises q and k).
void normalise_rows(std::vector<float>& x, int rows, int64_t ld, int offset, int dim) {
  for (int r = 0; r < rows; ++r) {
    float* v = x.data() + r * ld + offset;
    double s = 0;
    for (int i = 0; i < dim; ++i) s += v[i] * v[i];
    for (int i = 0; i < dim; ++i) v[i] = static_cast<float>(v[i] / std::sqrt(s));
  }
}

class DeltaNetKernels : public ::testing::TestWithParam<Isa> {
 protected:
  const KernelTable& k() const { return *kernel_table(GetParam()); }
  std::string tag(const std::string& op) const { return op + " [" + isa_name(GetParam()) + "]"; }
};

TEST_P(DeltaNetKernels, DeltaRuleMatchesReference) {
  for (int dk : {128, 48, 17}) {
    for (int dv : {128, 33}) {
      for (int n : {1, 5, 21, 64}) {
        // q and k interleaved in one row per token (ld_qk), as the mixer reads them from the conv output.
        const int64_t ld = 2 * dk + dv + 3;
        auto rows = random_floats(static_cast<size_t>(n * ld), 7 + dk + dv + n);
        normalise_rows(rows, n, ld, 0, dk);   // q
        normalise_rows(rows, n, ld, dk, dk);  // k
        const auto g = random_floats(static_cast<size_t>(n * 3), 11 + n, -2.0f, 0.0f);  // log-decay <= 0
        const auto beta = random_floats(static_cast<size_t>(n * 3), 12 + n, 0.0f, 1.0f);
        const auto state0 = random_floats(static_cast<size_t>(dk * dv), 13 + dk, -0.5f, 0.5f);
        std::vector<float> se = state0, sa = state0, oe(static_cast<size_t>(n * dv)), oa(oe.size());
        DeltaRuleArgs a;
        a.q = rows.data();
        a.k = rows.data() + dk;
        a.ld_qk = ld;
        a.v = rows.data() + 2 * dk;
        a.ld_v = ld;
        a.g = g.data();
        a.beta = beta.data();
        a.ld_gb = 3;
        a.ld_out = dv;
        a.n = n;
        a.d_k = dk;
        a.d_v = dv;
        a.state = se.data();
        a.out = oe.data();
        ref::delta_rule(a);
        a.state = sa.data();
        a.out = oa.data();
        k().delta_rule(a);
        const std::string what = "delta_rule dk=" + std::to_string(dk) + " dv=" + std::to_string(dv) + " n=" + std::to_string(n);
        EXPECT_LT(max_diff(oe, oa), 2e-5f) << tag(what + " outputs");
        EXPECT_LT(max_diff(se, sa), 2e-5f) << tag(what + " state");
      }
    }
  }
}

// A sequence's tokens may reach the kernel in one call (a prompt) or several (a batch's chunks,
// then decode steps): outputs and state must be bit-identical however they are split, or batched
// and lone runs of the same sequence part ways at the next near tie.
TEST_P(DeltaNetKernels, DeltaRuleDoesNotDependOnHowTokensAreSplit) {
  for (int dk : {128, 20}) {
    const int dv = 12, n = 37;
    const int64_t ld = 2 * dk + dv;
    auto rows = random_floats(static_cast<size_t>(n * ld), 21 + dk);
    normalise_rows(rows, n, ld, 0, dk);
    normalise_rows(rows, n, ld, dk, dk);
    const auto g = random_floats(static_cast<size_t>(n), 22, -2.0f, 0.0f);
    const auto beta = random_floats(static_cast<size_t>(n), 23, 0.0f, 1.0f);
    const auto state0 = random_floats(static_cast<size_t>(dk * dv), 24, -0.5f, 0.5f);
    auto run = [&](const std::vector<int>& calls, std::vector<float>& state, std::vector<float>& out) {
      state = state0;
      out.assign(static_cast<size_t>(n * dv), 0.0f);
      int t = 0;
      for (int len : calls) {
        DeltaRuleArgs a;
        a.q = rows.data() + t * ld;
        a.k = a.q + dk;
        a.ld_qk = ld;
        a.v = a.q + 2 * dk;
        a.ld_v = ld;
        a.g = g.data() + t;
        a.beta = beta.data() + t;
        a.ld_gb = 1;
        a.out = out.data() + t * dv;
        a.ld_out = dv;
        a.n = len;
        a.d_k = dk;
        a.d_v = dv;
        a.state = state.data();
        k().delta_rule(a);
        t += len;
      }
      ASSERT_EQ(t, n);
    };
    std::vector<float> s1, o1, s2, o2;
    run({n}, s1, o1);
    run({1, 16, 5, 1, 14}, s2, o2);
    EXPECT_EQ(o1, o2) << tag("delta_rule outputs, dk=" + std::to_string(dk));
    EXPECT_EQ(s1, s2) << tag("delta_rule state, dk=" + std::to_string(dk));
  }
}

// A zero decay (g = 0), full write (beta = 1) and a unit key: the state row becomes exactly v, so
// reading with the same key returns v (the delta rule's defining property).
TEST(ReferenceKernels, DeltaRuleWithFullWriteStoresTheValue) {
  const int dk = 4, dv = 3;
  std::vector<float> state(dk * dv, 0.25f), q = {0, 1, 0, 0}, v = {2, -1, 0.5f}, out(dv);
  const float g = 0, beta = 1;
  DeltaRuleArgs a;
  a.state = state.data();
  a.q = q.data();
  a.k = q.data();
  a.v = v.data();
  a.g = &g;
  a.beta = &beta;
  a.out = out.data();
  a.n = 1;
  a.d_k = dk;
  a.d_v = dv;
  ref::delta_rule(a);
  for (int b = 0; b < dv; ++b) EXPECT_FLOAT_EQ(out[b], v[b]);
}

TEST_P(DeltaNetKernels, ConvSiluMatchesReferenceAndCarriesState) {
  for (int taps : {4, 2, 1}) {
    for (int channels : {96, 37, 300}) {
      const int total = 1 + 2 + 5 + 40;  // tokens fed in calls of 1, 2, 5 and 40: the state carries across
      const int64_t ld = channels + 5;
      const auto x = random_floats(static_cast<size_t>(total * ld), 31 + channels + taps, -3.0f, 3.0f);
      const auto w = random_floats(static_cast<size_t>(channels * taps), 32 + taps);
      std::vector<float> se(static_cast<size_t>((taps - 1) * channels), 0.0f), sa = se;
      std::vector<float> oe(static_cast<size_t>(total * channels)), oa(oe.size());
      int at = 0;
      for (int n : {1, 2, 5, 40}) {
        ConvArgs a;
        a.x = x.data() + at * ld;
        a.ld_x = ld;
        a.n = n;
        a.w = w.data();
        a.taps = taps;
        a.ld_state = channels;
        a.ld_out = channels;
        a.channels = channels;
        a.state = se.data();
        a.out = oe.data() + at * channels;
        ref::conv_silu(a);
        // The table's kernel in two channel ranges, as the mixer splits it across threads.
        const int split = channels / 3;
        for (auto [c0, c1] : {std::pair{0, split}, std::pair{split, channels}}) {
          a.x = x.data() + at * ld + c0;
          a.channels = c1 - c0;
          a.w = w.data() + c0 * taps;
          a.state = sa.data() + c0;
          a.out = oa.data() + at * channels + c0;
          k().conv_silu(a);
        }
        at += n;
      }
      const std::string what = "conv_silu taps=" + std::to_string(taps) + " channels=" + std::to_string(channels);
      EXPECT_LT(max_diff(oe, oa), 1e-5f) << tag(what + " outputs");
      EXPECT_EQ(se, sa) << tag(what + " state");
    }
  }
}

// The conv's first outputs see zeros before the sequence: tap taps-1 alone on the first token.
TEST(ReferenceKernels, ConvSiluFirstTokenSeesOnlyItsOwnInput) {
  const std::vector<float> x = {2.0f}, w = {5.0f, 7.0f, 0.5f};  // one channel, 3 taps
  std::vector<float> state(2, 0.0f), out(1);
  ConvArgs a;
  a.x = x.data();
  a.ld_x = 1;
  a.n = 1;
  a.channels = 1;
  a.w = w.data();
  a.taps = 3;
  a.state = state.data();
  a.ld_state = 1;
  a.out = out.data();
  a.ld_out = 1;
  ref::conv_silu(a);
  EXPECT_FLOAT_EQ(out[0], 1.0f / (1.0f + std::exp(-1.0f)));  // silu(0.5 * 2)
  EXPECT_EQ(state, (std::vector<float>{0.0f, 2.0f}));
}

INSTANTIATE_TEST_SUITE_P(AllIsas, DeltaNetKernels, ::testing::ValuesIn(supported_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace anelm::engine::kernels
