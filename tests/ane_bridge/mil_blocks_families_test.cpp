// GPT-2's and Gemma 3's blocks (mil_blocks_families.h) run by the simulator with FTZ on against a
// scalar fp64 reference of the same math: LayerNorm with bias (program A, program B, the head),
// the tanh-GELU built from mul/add/sigmoid, Gemma 3's post-norms; finite on zero padding lanes,
// on a token with a 1000 outlier and a non-zero mean, and where GELU's u^2 overflows fp16.
#include "ane_bridge/mil_blocks_families.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "ane_bridge/block_emitter.h"
#include "tests/ane_bridge/ane_test_util.h"

namespace anelm::ane {
namespace {

using testing::seeded_values;
using Vec = std::vector<float>;

// Same stated tolerance as mil_blocks_test.cpp: |sim - ref| <= 5e-3 * rms(ref) + 5e-3 * |ref|.
double tolerance_ratio(const Vec& sim, const Vec& ref) {
  if (sim.size() != ref.size()) return INFINITY;
  double ss = 0;
  for (float r : ref) ss += static_cast<double>(r) * r;
  const double rms = std::sqrt(ss / static_cast<double>(ref.size()));
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(static_cast<double>(sim[i]) - ref[i]);
    if (!std::isfinite(err)) return INFINITY;
    worst = std::max(worst, err / (5e-3 * rms + 5e-3 * std::fabs(ref[i])));
  }
  std::printf("  tolerance ratio %.4f (rms %.4g)\n", worst, rms);
  return worst;
}

// ---- scalar references (fp64) ----

Vec ref_layer_norm(const Vec& x, int T, int D, const Vec& g, const Vec& b, double eps) {
  Vec y(x.size());
  for (int t = 0; t < T; ++t) {
    double m = 0, v = 0;
    for (int i = 0; i < D; ++i) m += x[t * D + i];
    m /= D;
    for (int i = 0; i < D; ++i) v += (x[t * D + i] - m) * (x[t * D + i] - m);
    const double r = 1.0 / std::sqrt(v / D + eps);
    for (int i = 0; i < D; ++i) y[t * D + i] = static_cast<float>((x[t * D + i] - m) * r * g[i] + b[i]);
  }
  return y;
}

Vec ref_rms_norm(const Vec& x, int T, int D, const Vec& g, double eps) {
  Vec y(x.size());
  for (int t = 0; t < T; ++t) {
    double ss = 0;
    for (int i = 0; i < D; ++i) ss += static_cast<double>(x[t * D + i]) * x[t * D + i];
    const double r = 1.0 / std::sqrt(ss / D + eps);
    for (int i = 0; i < D; ++i) y[t * D + i] = static_cast<float>(x[t * D + i] * r * g[i]);
  }
  return y;
}

Vec ref_linear(const Vec& x, int T, int in, const Vec& w, int out, const Vec& b) {
  Vec y(static_cast<std::size_t>(T) * out);
  for (int t = 0; t < T; ++t)
    for (int o = 0; o < out; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (int i = 0; i < in; ++i) acc += static_cast<double>(w[static_cast<std::size_t>(o) * in + i]) * x[t * in + i];
      y[static_cast<std::size_t>(t) * out + o] = static_cast<float>(acc);
    }
  return y;
}

double ref_gelu(double u) {
  return 0.5 * u * (1.0 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) * (u + 0.044715 * u * u * u)));
}

Vec add(Vec a, const Vec& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// Compiles `b` on a fresh simulator (FTZ on: the default), packs T token rows, evaluates, unpacks.
Vec run_block(const BlockProgram& b, const Vec& x_rows, int T) {
  RuntimeOptions ro;
  EXPECT_TRUE(ro.sim.fp16_ftz);
  auto rt = make_simulator(ro);
  std::unique_ptr<Program> p;
  const Status cs = rt->compile(b.source, &p);
  EXPECT_TRUE(cs.ok()) << cs.to_string();
  if (!cs.ok()) return {};
  const SurfaceLayout li = b.inputs[0].layout(), lo = b.outputs[0].layout();
  std::vector<std::uint8_t> in(static_cast<std::size_t>(li.alloc_bytes())), out(static_cast<std::size_t>(lo.alloc_bytes()));
  EXPECT_TRUE(pack_tokens(x_rows, T, li, in).ok());
  std::vector<std::span<const std::uint8_t>> ins{in};
  std::vector<std::span<std::uint8_t>> outs{out};
  const Status es = p->evaluate(ins, outs);
  EXPECT_TRUE(es.ok()) << es.to_string();
  Vec y(static_cast<std::size_t>(T) * lo.rows);
  EXPECT_TRUE(unpack_tokens(out, lo, T, y).ok());
  return y;
}

constexpr int D = 64, Q = 64, F = 256, T = 4;
const LayerShapes kShapes{D, 2, 2, 32, F, 1e-5};

Vec gains(std::uint32_t seed) {
  Vec g = seeded_values(D, seed, 0.5f);
  for (float& v : g) v += 1.0f;
  return g;
}

// Four tokens: rms ~1; a large non-zero mean (LayerNorm must centre it); a 1000 outlier in one
// channel (a massive activation); rms ~0.3. One prescale serves them all: 1/16 keeps the
// outlier's 4x headroom (1000 * 4 / 16 = 250 < 256). (A token of rms 0.03 beside that outlier,
// ~17000x below it, is outside the norms' documented ~2000x band and misses by 7x here.)
Vec tokens() {
  Vec x = seeded_values(static_cast<std::size_t>(T) * D, 31, 1.7f);
  for (int i = 0; i < D; ++i) {
    x[D + i] = 3.0f + x[D + i];
    x[3 * D + i] *= 0.3f;
  }
  x[2 * D + 7] = 1000.0f;
  return x;
}
constexpr double kPrescale = 1.0 / 16;

TEST(FamilyBlocks, LayerNormQkvWithBiasesMatchesReference) {
  const Vec g = gains(1), nb = seeded_values(D, 2, 0.3f);
  const Vec wq = seeded_values(Q * D, 3, 0.125f), wk = seeded_values(Q * D, 4, 0.125f),
            wv = seeded_values(Q * D, 5, 0.125f);
  const Vec bq = seeded_values(Q, 6, 0.2f), bk = seeded_values(Q, 7, 0.2f), bv = seeded_values(Q, 8, 0.2f);
  BlockOptions o;
  o.rms_prescale = kPrescale;
  BlockProgram b;
  ASSERT_TRUE(build_ln_attn_input_block(kShapes, {g, {wq, bq}, {wk, bk}, {wv, bv}}, nb, o, &b).ok());
  EXPECT_EQ(b.outputs[0].type.shape[1], 3 * Q);
  const Vec x = tokens();
  const Vec n = ref_layer_norm(x, T, D, g, nb, kShapes.rms_eps);
  Vec ref(static_cast<std::size_t>(T) * 3 * Q);
  const Vec* ws[3] = {&wq, &wk, &wv};
  const Vec* bs[3] = {&bq, &bk, &bv};
  for (int part = 0; part < 3; ++part) {
    const Vec y = ref_linear(n, T, D, *ws[part], Q, *bs[part]);
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < Q; ++i) ref[static_cast<std::size_t>(t) * 3 * Q + part * Q + i] = y[t * Q + i];
  }
  EXPECT_LE(tolerance_ratio(run_block(b, x, T), ref), 1.0);
  // Zero padding lanes (decode) stay finite: the mean and the eps floor keep pow() away from 0.
  for (float v : run_block(b, Vec(static_cast<std::size_t>(32) * D, 0.0f), 32)) ASSERT_TRUE(std::isfinite(v));
}

// GPT-2's B: the GELU FFN with every bias, after a LayerNorm with bias; also the update-only form.
TEST(FamilyBlocks, LayerNormGeluFfnMatchesReference) {
  const Vec g = gains(11), nb = seeded_values(D, 12, 0.3f);
  const Vec wo = seeded_values(D * Q, 13, 0.125f), bo = seeded_values(D, 14, 0.2f);
  const Vec wu = seeded_values(F * D, 15, 0.25f), bu = seeded_values(F, 16, 0.5f);
  const Vec wd = seeded_values(D * F, 17, 0.0625f), bd = seeded_values(D, 18, 0.2f);
  const Vec a = seeded_values(static_cast<std::size_t>(T) * Q, 19, 1.0f), r = tokens();
  Vec in;
  for (int t = 0; t < T; ++t) {
    in.insert(in.end(), a.begin() + t * Q, a.begin() + (t + 1) * Q);
    in.insert(in.end(), r.begin() + t * D, r.begin() + (t + 1) * D);
  }
  const Vec o = ref_linear(a, T, Q, wo, D, bo);
  const Vec h = add(r, o);
  Vec u = ref_linear(ref_layer_norm(h, T, D, g, nb, kShapes.rms_eps), T, D, wu, F, bu);
  for (float& v : u) v = static_cast<float>(ref_gelu(v));
  const Vec f = ref_linear(u, T, F, wd, D, bd);
  for (bool update : {false, true}) {
    BlockOptions opts;
    opts.rms_prescale = kPrescale;
    opts.update_only = update;
    BlockProgram b;
    ASSERT_TRUE(build_ln_ffn_block(kShapes, {{wo, bo}, g, nb, {wu, bu}, {wd, bd}}, opts, &b).ok());
    EXPECT_LE(tolerance_ratio(run_block(b, in, T), add(update ? o : h, f)), 1.0) << "update " << update;
  }
}

// The tanh-GELU alone, over [-12, 12] and where u^2 overflows fp16 (|u| > 255): finite, and
// within the fp16 rounding of u and of the sigmoid.
TEST(FamilyBlocks, GeluTanhFromSigmoidMatchesTanhFormEverywhere) {
  const int C = 64;
  BlockOptions opts;
  BlockProgram b;
  b.source.name = "gelu";
  detail::BlockEmitter e("gelu", opts);
  MilVar x = e.fn().input("x", detail::act(C, 32));
  e.fn().output(e.gelu_tanh(x, ""));
  ASSERT_TRUE(e.finish(&b).ok());
  b.inputs = {IoDesc{"x", detail::act(C, 32), {{"x", 0, C}}}};
  b.outputs = {IoDesc{"gelu", detail::act(C, 32), {{"y", 0, C}}}};
  Vec x_rows(static_cast<std::size_t>(2) * C);
  for (int i = 0; i < C; ++i) x_rows[i] = -12.0f + 24.0f * static_cast<float>(i) / (C - 1);
  for (int i = 0; i < C; ++i) x_rows[C + i] = (i % 2 ? -1.0f : 1.0f) * (200.0f + 40.0f * static_cast<float>(i));
  const Vec y = run_block(b, x_rows, 2);
  ASSERT_EQ(y.size(), x_rows.size());
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    ASSERT_TRUE(std::isfinite(y[i])) << x_rows[i];
    const double ref = ref_gelu(x_rows[i]);
    worst = std::max(worst, std::fabs(y[i] - ref) / (2e-3 + 2e-3 * std::fabs(ref)));
  }
  std::printf("  gelu tolerance ratio %.4f\n", worst);
  EXPECT_LE(worst, 1.0);
}

TEST(FamilyBlocks, LayerNormHeadChunkCarriesTheNormBias) {
  const int vocab = 300;
  const Vec head = seeded_values(static_cast<std::size_t>(vocab) * D, 21, 0.125f);
  const Vec g = gains(22), nb = seeded_values(D, 23, 0.5f);
  const Vec x = tokens();
  const Vec n = ref_layer_norm(x, T, D, g, nb, kShapes.rms_eps);
  for (const LmHeadChunk& ch : plan_lm_head_chunks(vocab, 128)) {
    BlockOptions o;
    o.rms_prescale = kPrescale;
    BlockProgram b;
    ASSERT_TRUE(build_ln_lm_head_chunk(kShapes, head, vocab, ch, g, nb, o, &b).ok());
    const Vec rows(head.begin() + ch.row_begin * D, head.begin() + (ch.row_begin + ch.rows) * D);
    EXPECT_LE(tolerance_ratio(run_block(b, x, T), ref_linear(n, T, D, rows, static_cast<int>(ch.rows), {})), 1.0);
  }
}

// Gemma 3's B: the attention projection's output ~50x the residual's size and the FFN's ~1/20 of
// it, each post-norm with its own prescale (one prescale for all three would flush or overflow).
TEST(FamilyBlocks, PostNormGegluFfnMatchesReference) {
  const Vec g_pa = gains(41), g_ffn = gains(42), g_pf = gains(43);
  const Vec wo = seeded_values(D * Q, 44, 6.0f);
  const Vec wg = seeded_values(F * D, 45, 0.25f), wu = seeded_values(F * D, 46, 0.25f);
  const Vec wd = seeded_values(D * F, 47, 0.004f);
  const Vec a = seeded_values(static_cast<std::size_t>(T) * Q, 48, 1.0f);
  Vec r = seeded_values(static_cast<std::size_t>(T) * D, 49, 1.7f);
  Vec in;
  for (int t = 0; t < T; ++t) {
    in.insert(in.end(), a.begin() + t * Q, a.begin() + (t + 1) * Q);
    in.insert(in.end(), r.begin() + t * D, r.begin() + (t + 1) * D);
  }
  const Vec o = ref_linear(a, T, Q, wo, D, {});
  const Vec on = ref_rms_norm(o, T, D, g_pa, kShapes.rms_eps);
  const Vec h = add(r, on);
  const Vec hn = ref_rms_norm(h, T, D, g_ffn, kShapes.rms_eps);
  Vec gg = ref_linear(hn, T, D, wg, F, {});
  const Vec uu = ref_linear(hn, T, D, wu, F, {});
  for (std::size_t i = 0; i < gg.size(); ++i) gg[i] = static_cast<float>(ref_gelu(gg[i]) * uu[i]);
  const Vec fn = ref_rms_norm(ref_linear(gg, T, F, wd, D, {}), T, D, g_pf, kShapes.rms_eps);
  BlockOptions opts;
  opts.rms_prescale = 1.0 / 4;
  const PostNormFfnBlockWeights w{{wo, {}}, g_pa, g_ffn, {wg, {}}, {wu, {}}, {wd, {}}, g_pf};
  BlockProgram b;
  ASSERT_TRUE(build_post_norm_ffn_block(kShapes, w, {1.0 / 32, 64}, opts, &b).ok());
  EXPECT_LE(tolerance_ratio(run_block(b, in, T), add(h, fn)), 1.0);
  opts.update_only = true;
  ASSERT_TRUE(build_post_norm_ffn_block(kShapes, w, {1.0 / 32, 64}, opts, &b).ok());
  EXPECT_LE(tolerance_ratio(run_block(b, in, T), add(on, fn)), 1.0);
  // The post-norms' scale bands are real: with the FFN's post-norm at the residual's prescale its
  // small outputs' squares flush, and the block misses the reference by far.
  opts.update_only = false;
  ASSERT_TRUE(build_post_norm_ffn_block(kShapes, w, {1.0 / 32, 1.0 / 4096}, opts, &b).ok());
  EXPECT_GT(tolerance_ratio(run_block(b, in, T), add(h, fn)), 1.0);
  for (float v : run_block(b, Vec(static_cast<std::size_t>(32) * (Q + D), 0.0f), 32)) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace anelm::ane
