// RMSNorm inside the ANE programs under fp16 flush-to-zero (the simulator default): the legacy
// construction (mean, subnormal eps, p from the 16x-headroom calibration), the one-pass sum
// (eps raised to a normal, sqrt(D) folded into the gain, p from the 4x-headroom calibration that
// may exceed 1) and the current two-pass one (the one-pass result rescales every token to
// elements ~1, then an exact second sum), all against an fp64 scalar reference, at D = 896
// (Qwen2.5-0.5B).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "ane_bridge/fp16.h"
#include "ane_bridge/mil_blocks.h"
#include "ane_bridge/mil_writer.h"
#include "tests/ane_bridge/ane_test_util.h"

namespace anelm::ane {
namespace {

constexpr int kD = 896, kS = 32;
constexpr double kEps = 1e-6;
constexpr double kMaxRelL2 = 2e-2;  // the budget for one norm

// Deterministic approximately Gaussian channel values with the given rms (sum of 4 uniforms).
std::vector<double> token(std::uint32_t seed, double rms) {
  std::vector<double> x(kD, 0.0);
  for (int k = 0; k < 4; ++k) {
    const auto u = testing::seeded_values(kD, seed * 4 + k, 1.0f);
    for (int i = 0; i < kD; ++i) x[i] += u[i];
  }
  double ss = 0;
  for (double v : x) ss += v * v;
  for (double& v : x) v *= rms / std::sqrt(ss / kD);
  return x;
}

// Surface image [1, D, 1, S] with the token in lane 0 and zero padding (decode).
std::vector<float> lane0(const std::vector<double>& x) {
  std::vector<float> s(static_cast<std::size_t>(kD) * kS, 0.0f);
  for (int i = 0; i < kD; ++i) s[static_cast<std::size_t>(i) * kS] = static_cast<float>(x[i]);
  return s;
}

// The construction before issue 15, verbatim: mean = ss * fp16(1/D), eps*p^2 raised to 2^-24.
ProgramSource legacy_norm(double p) {
  MilProgramBuilder prog;
  MilFunctionBuilder& f = prog.add_function("main");
  const MilType t = MilType::tensor(DType::kFp16, {1, kD, 1, kS});
  MilVar x = f.input("x", t);
  MilVar rax = f.const_int32_vec("rax", {1});
  MilVar kd = f.const_bool("kd", true);
  MilVar psc = f.const_fp16("psc", p, FloatFormat::kExact);
  MilVar invd = f.const_fp16("invd", 1.0 / kD, FloatFormat::kExact);
  MilVar eps = f.const_fp16("eps", std::max(kEps * p * p, static_cast<double>(kFp16MinSubnormal)),
                            FloatFormat::kExact);
  MilVar nhalf = f.const_fp16("nhalf", -0.5, FloatFormat::kExact);
  MilVar xs = f.binary("mul", "xs", "rms_scale", x, psc);
  MilVar sq = f.binary("mul", "sq", "rms_sq", xs, xs);
  MilVar ss = f.reduce_sum("ss", "rms_sum", sq, rax, kd);
  MilVar ms = f.binary("mul", "ms", "rms_mean", ss, invd);
  MilVar me = f.binary("add", "me", "rms_eps", ms, eps);
  MilVar rr = f.binary("pow", "rr", "rms_rsqrt", me, nhalf);
  f.output(f.binary("mul", "xn", "rms_norm", xs, rr));
  ProgramSource src;
  src.name = "legacy_norm";
  EXPECT_TRUE(prog.build(&src.mil_text).ok());
  return src;
}

// The first issue-15 construction, one pass: rr = (sum((x p)^2) + max(D eps p^2, 2^-14))^-0.5.
ProgramSource one_pass_norm(double p) {
  MilProgramBuilder prog;
  MilFunctionBuilder& f = prog.add_function("main");
  MilVar x = f.input("x", MilType::tensor(DType::kFp16, {1, kD, 1, kS}));
  MilVar rax = f.const_int32_vec("rax", {1});
  MilVar kd = f.const_bool("kd", true);
  MilVar psc = f.const_fp16("psc", p, FloatFormat::kExact);
  MilVar eps = f.const_fp16("eps", std::max(kD * kEps * p * p, static_cast<double>(kFp16MinNormal)),
                            FloatFormat::kExact);
  MilVar nhalf = f.const_fp16("nhalf", -0.5, FloatFormat::kExact);
  MilVar xs = f.binary("mul", "xs", "rms_scale", x, psc);
  MilVar sq = f.binary("mul", "sq", "rms_sq", xs, xs);
  MilVar ss = f.reduce_sum("ss", "rms_sum", sq, rax, kd);
  MilVar me = f.binary("add", "me", "rms_eps", ss, eps);
  MilVar rr = f.binary("pow", "rr", "rms_rsqrt", me, nhalf);
  MilVar xn = f.binary("mul", "xn", "rms_norm", xs, rr);
  // x / (sqrt(D) rms): times sqrt(D) here, as the engine folds it into the next weights.
  f.output(f.binary("mul", "y", "rms_sqrt_d", xn, f.const_fp16("sd", std::sqrt(kD), FloatFormat::kExact)));
  ProgramSource src;
  src.name = "one_pass_norm";
  EXPECT_TRUE(prog.build(&src.mil_text).ok());
  return src;
}

// The shipped construction: build_final_norm with a unit gain gives x / rms(x).
ProgramSource current_norm(double p) {
  LayerShapes s;
  s.d_model = kD;
  s.n_heads = s.n_kv_heads = 1;
  s.head_dim = kD;
  s.d_ff = kD;
  s.rms_eps = kEps;
  BlockOptions o;
  o.seq_len = kS;
  o.rms_prescale = p;
  BlockProgram b;
  EXPECT_TRUE(build_final_norm(s, std::vector<float>(kD, 1.0f), o, &b).ok());
  return b.source;
}

// Relative L2 error of lane 0 against x / sqrt(mean(x^2) + eps) in fp64; +inf when not finite.
double rel_err(const ProgramSource& src, const std::vector<double>& x) {
  auto res = testing::run_program(src, {lane0(x)});
  EXPECT_TRUE(res.status.ok()) << res.status.to_string();
  if (!res.status.ok()) return INFINITY;
  double ss = 0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / kD + kEps);
  double num = 0, den = 0;
  for (int i = 0; i < kD; ++i) {
    const double y = res.outputs[0][static_cast<std::size_t>(i) * kS];
    if (!std::isfinite(y)) return INFINITY;
    num += (y - x[i] * r) * (y - x[i] * r);
    den += (x[i] * r) * (x[i] * r);
  }
  for (int l = 1; l < kS; ++l)  // zero padding lanes must stay finite (0 * rr)
    for (int i = 0; i < kD; ++i)
      if (!std::isfinite(res.outputs[0][static_cast<std::size_t>(i) * kS + l])) return INFINITY;
  return std::sqrt(num / den);
}

TEST(RmsNormNumerics, FtzIsTheDefault) { EXPECT_TRUE(SimulatorOptions{}.fp16_ftz); }

// A massive-activation batch: the first token carries a 1000 in one channel (as real Qwen models
// do at position 0), later tokens are ordinary with rms 0.25..1. The 16x-headroom rule gave
// p = 1/64 (1000 * p * 16 <= 256); the 4x rule gives 1/16. Old: non-finite for rms <= 0.5.
TEST(RmsNormNumerics, MassiveActivationBatchOldFailsNewPasses) {
  std::vector<double> outlier = token(1, 1.0);
  outlier[7] = 1000.0;
  const auto old_prog = legacy_norm(1.0 / 64), new_prog = current_norm(1.0 / 16);
  EXPECT_LE(rel_err(new_prog, outlier), kMaxRelL2);
  // Old: the outlier lane itself is accurate, but eps*p^2 = 2^-24 is flushed, so the zero padding
  // lanes give pow(0, -0.5) * 0 = NaN.
  EXPECT_FALSE(rel_err(old_prog, outlier) <= kMaxRelL2);
  for (double rms : {1.0, 0.5, 0.25}) {
    const auto x = token(2, rms);
    EXPECT_LE(rel_err(new_prog, x), kMaxRelL2) << "rms " << rms;
    if (rms <= 0.5) {
      EXPECT_FALSE(rel_err(old_prog, x) <= kMaxRelL2) << "rms " << rms;
    }
  }
}

// Small residual streams (embeddings ~0.01): the old rule capped p at 1; now p may grow (16 here).
TEST(RmsNormNumerics, SmallActivationsOldFailsNewPasses) {
  const auto x = token(3, 0.01);
  EXPECT_GT(rel_err(legacy_norm(1.0), x), kMaxRelL2);
  EXPECT_LE(rel_err(current_norm(16.0), x), kMaxRelL2);
}

// Tokens far below the calibrated p (an outlier token sets p, ordinary ones sit 100-1000x lower):
// one pass loses the squares that flush; two passes stay at the fp16 floor.
TEST(RmsNormNumerics, TokensFarBelowThePrescaleOnePassFailsTwoPassPasses) {
  struct Case {
    double rms, p;
  };
  for (const Case c : {Case{0.1, 1.0 / 64}, Case{1.0, 1.0 / 256}, Case{0.01, 1.0 / 4}}) {
    const auto x = token(6, c.rms);
    const double one = rel_err(one_pass_norm(c.p), x), two = rel_err(current_norm(c.p), x);
    std::printf("rms %g p %g: one pass %.2e, two passes %.2e\n", c.rms, c.p, one, two);
    EXPECT_GT(one, kMaxRelL2) << "rms " << c.rms << " p " << c.p;
    EXPECT_LE(two, 5e-3) << "rms " << c.rms << " p " << c.p;
  }
  // Inside the old band both are at the fp16 floor.
  const auto x = token(7, 1.0);
  EXPECT_LE(rel_err(one_pass_norm(1.0 / 4), x), 2e-3);
  EXPECT_LE(rel_err(current_norm(1.0 / 4), x), 2e-3);
}

// Same construction, same p: the current one never produces inf/NaN where the legacy one does
// (mean square subnormal -> flushed -> pow(0, -0.5) = inf).
TEST(RmsNormNumerics, NoNonFiniteOutputsAtAnyScale) {
  for (double p : {1.0, 1.0 / 16, 1.0 / 256, 1.0 / 4096})
    for (double rms : {1e-3, 1e-1, 1.0, 1e1, 1e2}) {
      const auto x = token(4, rms);
      const double e = rel_err(current_norm(p), x);
      if (rms * p * 16 <= 256) {
        EXPECT_TRUE(std::isfinite(e)) << "p " << p << " rms " << rms;
      }
    }
}

// The measurement grid of ane_bridge/README.md (printed; the asserts above are the contract).
TEST(RmsNormNumerics, PrintGrid) {
  const double ps[] = {1024, 64, 16, 1, 1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256, 1.0 / 1024,
                       1.0 / 4096};
  const double rmss[] = {1e-3, 1e-2, 1e-1, 1, 1e1, 1e2, 1e3};
  for (int which = 0; which < 2; ++which) {
    std::printf("%s (FTZ on), rel L2 vs fp64, rows rms, columns p\n",
                which ? "current" : "legacy");
    for (double rms : rmss) {
      std::printf("%8g", rms);
      const auto x = token(5, rms);
      for (double p : ps)
        std::printf(" %9.2e", rel_err(which ? current_norm(p) : legacy_norm(p), x));
      std::printf("\n");
    }
  }
}

}  // namespace
}  // namespace anelm::ane
