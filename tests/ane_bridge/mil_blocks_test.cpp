// Fused blocks run by the simulator vs a scalar fp32 reference of the same math (RMSNorm,
// projections, SwiGLU, residuals), for fp16 and int8 weights, decode (S=32, one token) and prefill.
#include "ane_bridge/mil_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ane_bridge/fp16.h"
#include "tests/ane_bridge/ane_test_util.h"

namespace anelm::ane {
namespace {

using testing::seeded_values;

// Tolerance (stated): every output element must satisfy |sim - ref| <= kAbsTol * rms(ref) + kRelTol
// * |ref|, i.e. 0.5% of the output RMS plus 0.5% of the value. fp16 storage rounds each of ~10
// intermediate tensors to 11 significant bits (2^-11 ~ 4.9e-4 relative each) and the weights once;
// the observed worst case is ~0.2-0.3 of this bound, while layout or math errors give O(1) errors.
constexpr double kAbsTol = 5e-3;
constexpr double kRelTol = 5e-3;

// ---- scalar reference (fp64 accumulation over fp32 inputs) ----

std::vector<float> ref_rmsnorm(const std::vector<float>& x, int T, int D,
                               const std::vector<float>& g, double eps) {
  std::vector<float> y(x.size());
  for (int t = 0; t < T; ++t) {
    double ss = 0;
    for (int i = 0; i < D; ++i) ss += static_cast<double>(x[t * D + i]) * x[t * D + i];
    const double r = 1.0 / std::sqrt(ss / D + eps);
    for (int i = 0; i < D; ++i)
      y[t * D + i] = static_cast<float>(x[t * D + i] * r * (g.empty() ? 1.0f : g[i]));
  }
  return y;
}

// y[t][o] = sum_i W[o][i] x[t][i] + b[o]
std::vector<float> ref_linear(const std::vector<float>& x, int T, int in,
                              const std::vector<float>& w, int out, const std::vector<float>& b) {
  std::vector<float> y(static_cast<std::size_t>(T) * out);
  for (int t = 0; t < T; ++t)
    for (int o = 0; o < out; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (int i = 0; i < in; ++i)
        acc += static_cast<double>(w[static_cast<std::size_t>(o) * in + i]) * x[t * in + i];
      y[static_cast<std::size_t>(t) * out + o] = static_cast<float>(acc);
    }
  return y;
}

// The weights the int8 program really computes with: fp16(scale[o] * q[o][i]) of W[o][i] * g[i] *
// sqrt(cols) (the norm leaves x / (sqrt(D) rms), the factor rides on the weights), divided back by
// sqrt(cols) so the result pairs with the reference's x / rms.
std::vector<float> int8_effective(const std::vector<float>& w, int rows, int cols,
                                  const std::vector<float>& g) {
  std::vector<float> f = w;
  const float k = g.empty() ? 1.0f : static_cast<float>(std::sqrt(static_cast<double>(cols)));
  if (!g.empty())
    for (int o = 0; o < rows; ++o)
      for (int i = 0; i < cols; ++i) f[o * cols + i] *= g[i] * k;
  const QuantizedRows q = quantize_rows_int8(f, rows, cols);
  for (int o = 0; o < rows; ++o)
    for (int i = 0; i < cols; ++i)
      f[o * cols + i] = round_to_fp16(fp16_to_fp32(q.scale[o]) * q.q[o * cols + i]) / k;
  return f;
}

struct Layer {
  LayerShapes s;
  std::vector<float> g1, wq, wk, wv, bq, bk, bv, wo, g2, wg, wu, wd;
  explicit Layer(LayerShapes shapes, std::uint32_t seed = 100) : s(shapes) {
    const int D = static_cast<int>(s.d_model), Q = static_cast<int>(s.q_dim()),
              KV = static_cast<int>(s.kv_dim()), F = static_cast<int>(s.d_ff);
    const float wsc = 1.0f / std::sqrt(static_cast<float>(D));
    g1 = seeded_values(D, seed + 1, 0.5f);
    for (float& v : g1) v += 1.0f;  // gains near 1, as trained models have
    g2 = seeded_values(D, seed + 2, 0.5f);
    for (float& v : g2) v += 1.0f;
    wq = seeded_values(Q * D, seed + 3, wsc);
    wk = seeded_values(KV * D, seed + 4, wsc);
    wv = seeded_values(KV * D, seed + 5, wsc);
    bq = seeded_values(Q, seed + 6, 0.2f);
    bk = seeded_values(KV, seed + 7, 0.2f);
    bv = seeded_values(KV, seed + 8, 0.2f);
    wo = seeded_values(D * Q, seed + 9, 1.0f / std::sqrt(static_cast<float>(Q)));
    wg = seeded_values(F * D, seed + 10, wsc);
    wu = seeded_values(F * D, seed + 11, wsc);
    wd = seeded_values(D * F, seed + 12, 1.0f / std::sqrt(static_cast<float>(F)));
  }
  AttnInputWeights attn() const { return {g1, {wq, bq}, {wk, bk}, {wv, bv}}; }
  FfnBlockWeights ffn() const { return {{wo, {}}, g2, {wg, {}}, {wu, {}}, {wd, {}}}; }
};

// Compiles `b`, packs T token rows into its one input, evaluates, unpacks T rows of its output.
std::vector<float> run_block(const BlockProgram& b, const std::vector<float>& x_rows, int T) {
  RuntimeOptions ro;
  auto rt = make_simulator(ro);
  std::unique_ptr<Program> p;
  const Status cs = rt->compile(b.source, &p);
  EXPECT_TRUE(cs.ok()) << cs.to_string();
  if (!cs.ok()) return {};
  const SurfaceLayout li = b.inputs[0].layout(), lo = b.outputs[0].layout();
  EXPECT_EQ(p->inputs()[0].type, b.inputs[0].type);
  EXPECT_EQ(p->outputs()[0].type, b.outputs[0].type);
  std::vector<std::uint8_t> in(static_cast<std::size_t>(li.alloc_bytes())),
      out(static_cast<std::size_t>(lo.alloc_bytes()));
  EXPECT_TRUE(pack_tokens(x_rows, T, li, in).ok());
  std::vector<std::span<const std::uint8_t>> ins{in};
  std::vector<std::span<std::uint8_t>> outs{out};
  const Status es = p->evaluate(ins, outs);
  EXPECT_TRUE(es.ok()) << es.to_string();
  std::vector<float> y(static_cast<std::size_t>(T) * lo.rows);
  EXPECT_TRUE(unpack_tokens(out, lo, T, y).ok());
  return y;
}

// Returns the worst ratio |sim - ref| / (kAbsTol * rms(ref) + kRelTol * |ref|); <= 1 passes.
double tolerance_ratio(const std::vector<float>& sim, const std::vector<float>& ref) {
  if (sim.size() != ref.size()) return INFINITY;
  double ss = 0;
  for (float r : ref) ss += static_cast<double>(r) * r;
  const double rms = std::sqrt(ss / ref.size());
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(static_cast<double>(sim[i]) - ref[i]);
    if (std::isnan(err)) return INFINITY;
    worst = std::max(worst, err / (kAbsTol * rms + kRelTol * std::fabs(ref[i])));
  }
  if (std::getenv("ANELM_PRINT_TOL")) std::printf("tolerance ratio %.4f (rms %.4g)\n", worst, rms);
  return worst;
}

std::vector<float> ref_attn_in(const Layer& L, const std::vector<float>& x, int T, bool int8) {
  const int D = static_cast<int>(L.s.d_model), Q = static_cast<int>(L.s.q_dim()),
            KV = static_cast<int>(L.s.kv_dim());
  const auto n = ref_rmsnorm(x, T, D, int8 ? std::vector<float>{} : L.g1, L.s.rms_eps);
  auto eff = [&](const std::vector<float>& w, int rows) {
    return int8 ? int8_effective(w, rows, D, L.g1) : w;
  };
  const auto q = ref_linear(n, T, D, eff(L.wq, Q), Q, L.bq);
  const auto k = ref_linear(n, T, D, eff(L.wk, KV), KV, L.bk);
  const auto v = ref_linear(n, T, D, eff(L.wv, KV), KV, L.bv);
  std::vector<float> y;
  for (int t = 0; t < T; ++t) {
    y.insert(y.end(), q.begin() + t * Q, q.begin() + (t + 1) * Q);
    y.insert(y.end(), k.begin() + t * KV, k.begin() + (t + 1) * KV);
    y.insert(y.end(), v.begin() + t * KV, v.begin() + (t + 1) * KV);
  }
  return y;
}

std::vector<float> ref_ffn(const Layer& L, const std::vector<float>& packed, int T, bool int8) {
  const int D = static_cast<int>(L.s.d_model), Q = static_cast<int>(L.s.q_dim()),
            F = static_cast<int>(L.s.d_ff);
  std::vector<float> a, r;
  for (int t = 0; t < T; ++t) {
    a.insert(a.end(), packed.begin() + t * (Q + D), packed.begin() + t * (Q + D) + Q);
    r.insert(r.end(), packed.begin() + t * (Q + D) + Q, packed.begin() + (t + 1) * (Q + D));
  }
  auto eff = [&](const std::vector<float>& w, int rows, int cols, const std::vector<float>& g) {
    return int8 ? int8_effective(w, rows, cols, g) : w;
  };
  const auto o = ref_linear(a, T, Q, eff(L.wo, D, Q, {}), D, {});
  std::vector<float> h(r.size());
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = r[i] + o[i];
  const auto n = ref_rmsnorm(h, T, D, int8 ? std::vector<float>{} : L.g2, L.s.rms_eps);
  const auto g = ref_linear(n, T, D, eff(L.wg, F, D, L.g2), F, {});
  const auto u = ref_linear(n, T, D, eff(L.wu, F, D, L.g2), F, {});
  std::vector<float> m(g.size());
  for (std::size_t i = 0; i < m.size(); ++i)
    m[i] = static_cast<float>(g[i] / (1.0 + std::exp(-g[i])) * u[i]);
  const auto dn = ref_linear(m, T, F, eff(L.wd, D, F, {}), D, {});
  std::vector<float> y(h.size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = h[i] + dn[i];
  return y;
}

struct Case {
  WeightFormat format;
  std::int64_t seq;  // S bucket
  int tokens;        // tokens actually used (decode: 1)
};

class FusedBlocks : public ::testing::TestWithParam<Case> {};

TEST_P(FusedBlocks, AttentionInputMatchesReference) {
  const Case c = GetParam();
  const Layer L(LayerShapes{64, 2, 1, 32, 128, 1e-6});
  BlockOptions o;
  o.seq_len = c.seq;
  o.format = c.format;
  BlockProgram b;
  ASSERT_TRUE(build_attn_input_block(L.s, L.attn(), o, &b).ok());
  const auto x = seeded_values(static_cast<std::size_t>(c.tokens) * 64, 7, 2.0f);
  const auto sim = run_block(b, x, c.tokens);
  const bool int8 = c.format == WeightFormat::kInt8;
  const double same_math = tolerance_ratio(sim, ref_attn_in(L, x, c.tokens, int8));
  EXPECT_LE(same_math, 1.0) << "worst error as a fraction of the tolerance";
  if (int8) {
    // Against the unquantized fp32 weights: int8 per-channel adds ~0.4% per weight; allow 5x.
    EXPECT_LE(tolerance_ratio(sim, ref_attn_in(L, x, c.tokens, false)), 5.0);
  }
}

TEST_P(FusedBlocks, FfnBlockMatchesReference) {
  const Case c = GetParam();
  const Layer L(LayerShapes{64, 2, 1, 32, 128, 1e-6});
  BlockOptions o;
  o.seq_len = c.seq;
  o.format = c.format;
  BlockProgram b;
  ASSERT_TRUE(build_ffn_block(L.s, L.ffn(), o, &b).ok());
  const auto x = seeded_values(static_cast<std::size_t>(c.tokens) * (64 + 64), 8, 2.0f);
  const auto sim = run_block(b, x, c.tokens);
  const bool int8 = c.format == WeightFormat::kInt8;
  EXPECT_LE(tolerance_ratio(sim, ref_ffn(L, x, c.tokens, int8)), 1.0);
  if (int8) {
    EXPECT_LE(tolerance_ratio(sim, ref_ffn(L, x, c.tokens, false)), 5.0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Buckets, FusedBlocks,
    ::testing::Values(Case{WeightFormat::kFp16, 32, 1}, Case{WeightFormat::kFp16, 64, 50},
                      Case{WeightFormat::kInt8, 32, 1}, Case{WeightFormat::kInt8, 64, 50}),
    [](const auto& info) {
      return std::string(info.param.format == WeightFormat::kInt8 ? "int8" : "fp16") + "_s" +
             std::to_string(info.param.seq) + "_t" + std::to_string(info.param.tokens);
    });

TEST(FusedBlocks, PaddingLanesStayFiniteInDecode) {
  // Lanes 1..31 of a decode surface are zero: eps keeps pow() finite, so no NaN appears anywhere.
  const Layer L(LayerShapes{64, 2, 1, 32, 128, 1e-6});
  BlockProgram b;
  ASSERT_TRUE(build_attn_input_block(L.s, L.attn(), BlockOptions{}, &b).ok());
  const auto all = run_block(b, std::vector<float>(64 * 32, 0.0f), 32);
  for (float v : all) ASSERT_TRUE(std::isfinite(v));
}

TEST(FusedBlocks, LmHeadChunkWithFusedFinalNorm) {
  const LayerShapes s{64, 2, 1, 32, 128, 1e-6};
  const int vocab = 300, D = 64;
  const auto head = seeded_values(vocab * D, 21, 0.125f);
  auto gain = seeded_values(D, 22, 0.3f);
  for (float& g : gain) g += 1.0f;
  const auto chunks = plan_lm_head_chunks(vocab, 128);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[2].rows, 44);
  const auto x = seeded_values(3 * D, 23, 3.0f);
  const auto n = ref_rmsnorm(x, 3, D, gain, s.rms_eps);
  for (const auto& ch : chunks) {
    BlockProgram b;
    BlockOptions o;
    o.seq_len = 32;
    ASSERT_TRUE(build_lm_head_chunk(s, head, vocab, ch, gain, o, &b).ok());
    const std::vector<float> rows(head.begin() + ch.row_begin * D,
                                  head.begin() + (ch.row_begin + ch.rows) * D);
    EXPECT_LE(tolerance_ratio(run_block(b, x, 3),
                              ref_linear(n, 3, D, rows, static_cast<int>(ch.rows), {})),
              1.0);
  }
  BlockProgram fn;
  ASSERT_TRUE(build_final_norm(s, gain, BlockOptions{}, &fn).ok());
  EXPECT_LE(tolerance_ratio(run_block(fn, x, 3), n), 1.0);
}

TEST(FusedBlocks, RejectsBadBucketsAndShapes) {
  const Layer L(LayerShapes{64, 2, 1, 32, 128, 1e-6});
  BlockOptions o;
  o.seq_len = 1;  // S = 1 rows are 2 bytes: the §3.6 failure. Decode must use 32 lanes.
  BlockProgram b;
  EXPECT_EQ(build_attn_input_block(L.s, L.attn(), o, &b).code(), StatusCode::kInvalidArgument);
  o.seq_len = 32;
  AttnInputWeights w = L.attn();
  w.q.weight = w.q.weight.subspan(1);
  EXPECT_EQ(build_attn_input_block(L.s, w, o, &b).code(), StatusCode::kInvalidArgument);
}

// ---- Qwen2.5-0.5B shapes ----

const LayerShapes kQwenLayer{896, 14, 2, 64, 4864, 1e-6};

TEST(QwenPlan, DecodeFitsTheCompileBudget) {
  const ModelShapes m{kQwenLayer, 24, 151936};
  const auto chunks = plan_lm_head_chunks(m.vocab);
  ASSERT_EQ(chunks.size(), 10u);  // 9 x 16384 + 4480
  EXPECT_EQ(chunks.back().rows, 4480);
  ProgramPlan p = plan_programs(m, ProgramPlanOptions{});
  EXPECT_EQ(p.decode_dispatches_per_token, 58);  // 24 x 2 + 10
  EXPECT_EQ(p.total_programs, 58);
  ProgramPlanOptions two;
  two.seq_buckets = {32, 128};
  p = plan_programs(m, two);
  EXPECT_EQ(p.total_programs, 106);  // + 48 for the S = 128 prefill bucket: still <= 119
  EXPECT_LE(p.total_programs, SimulatorOptions{}.compile_budget);
  two.seq_buckets = {32, 64, 128};
  EXPECT_GT(plan_programs(m, two).total_programs, 119);  // needs the cache or a restart
}

TEST(QwenPlan, OneRealSizedLayerCompilesAndRunsWithinLimits) {
  const Layer L(kQwenLayer, 500);
  for (const WeightFormat f : {WeightFormat::kFp16, WeightFormat::kInt8}) {
    BlockOptions o;
    o.format = f;
    BlockProgram a, b;
    ASSERT_TRUE(build_attn_input_block(L.s, L.attn(), o, &a).ok());
    ASSERT_TRUE(build_ffn_block(L.s, L.ffn(), o, &b).ok());
    EXPECT_EQ(a.outputs[0].type.shape[1], 1152);
    EXPECT_EQ(b.inputs[0].type.shape[1], 896 + 896);
    // fp16: attention side 2.3 MB, FFN 27.8 MB (under the ~32 MB SRAM cliff); int8 halves them.
    EXPECT_LT(b.weight_bytes, 32u << 20);
    const auto x = seeded_values(896, 31, 1.0f);
    const bool int8 = f == WeightFormat::kInt8;
    EXPECT_LE(tolerance_ratio(run_block(a, x, 1), ref_attn_in(L, x, 1, int8)), 1.0);
    const auto xb = seeded_values(896 * 2, 32, 1.0f);
    EXPECT_LE(tolerance_ratio(run_block(b, xb, 1), ref_ffn(L, xb, 1, int8)), 1.0);
  }
}

TEST(QwenPlan, LargestLmHeadChunkRespectsTheChannelLimit) {
  const int D = 896, rows = 16384;
  const auto head = seeded_values(static_cast<std::size_t>(rows) * D, 41, 0.05f);
  BlockProgram b;
  ASSERT_TRUE(build_lm_head_chunk(kQwenLayer, head, rows, {0, rows}, {}, BlockOptions{}, &b).ok());
  const auto x = seeded_values(D, 42, 1.0f);
  const auto sim = run_block(b, x, 1);
  EXPECT_LE(tolerance_ratio(sim, ref_linear(x, 1, D, head, rows, {})), 1.0);
  // One row more than the strict limit fails to compile (the device limit is contested, §10.9).
  const auto head2 = seeded_values(static_cast<std::size_t>(rows + 32) * D, 43, 0.05f);
  ASSERT_TRUE(
      build_lm_head_chunk(kQwenLayer, head2, rows + 32, {0, rows + 32}, {}, BlockOptions{}, &b)
          .ok());
  RuntimeOptions ro;
  std::unique_ptr<Program> p;
  EXPECT_EQ(make_simulator(ro)->compile(b.source, &p).code(), StatusCode::kCompileFailed);
}

}  // namespace
}  // namespace anelm::ane
