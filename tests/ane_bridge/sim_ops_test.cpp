// Per-op simulator tests against naive scalar references (fp64 math, one fp16 rounding), plus fp16
// edge cases: overflow to inf, subnormals, rounding ties, NaN propagation, accumulator width.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ane_bridge/fp16.h"
#include "ane_bridge/mil_writer.h"
#include "ane_bridge/weight_blob.h"
#include "tests/ane_bridge/ane_test_util.h"

namespace anelm::ane {
namespace {

using testing::run_program;
using testing::seeded_values;

MilType f16(std::vector<std::int64_t> s) { return MilType::tensor(DType::kFp16, std::move(s)); }

// Values already representable in fp16 (so the reference sees exactly what the surface holds).
std::vector<float> halfs(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  auto v = seeded_values(n, seed, scale);
  for (float& x : v) x = round_to_fp16(x);
  return v;
}

float ref16(double v) { return fp16_to_fp32(fp64_to_fp16(v)); }

// Distance in fp16 ulps (at the larger magnitude); inf/NaN must match exactly.
double ulps(float got, float want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : 1e9;
  if (std::isinf(want) || std::isinf(got)) return got == want ? 0 : 1e9;
  const double m = std::max(std::fabs(want), std::fabs(got));
  const double ulp =
      m < 6.103515625e-05 ? 5.9604644775390625e-08 : std::ldexp(1.0, std::ilogb(m) - 10);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

void expect_ulps(const std::vector<float>& got, const std::vector<float>& want, double max_ulps) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(ulps(got[i], want[i]), max_ulps)
        << "index " << i << ": got " << got[i] << ", want " << want[i];
}

// Builds main(inputs...) -> body(...) and runs it.
struct OneOp {
  MilProgramBuilder prog;
  MilFunctionBuilder& f = prog.add_function();
  std::vector<WeightFile> weights;
  SimulatorOptions opts = testing::test_options();

  testing::RunResult run(const MilVar& out, const std::vector<std::vector<float>>& inputs) {
    f.output(out);
    ProgramSource src;
    src.name = "op";
    EXPECT_TRUE(prog.build(&src.mil_text).ok()) << prog.build(&src.mil_text).to_string();
    src.weights = weights;
    return run_program(src, inputs, opts);
  }
};

TEST(SimOps, AddSubMulAreCorrectlyRoundedWithBroadcasting) {
  for (const std::string op : {"add", "sub", "mul"}) {
    OneOp t;
    MilVar x = t.f.input("a0_x", f16({1, 4, 1, 32}));
    MilVar y = t.f.input("a1_y", f16({1, 1, 1, 32}));
    MilVar r = t.f.binary(op, "r", "r", x, y);
    const auto xv = halfs(128, 1, 4.0f), yv = halfs(32, 2, 4.0f);
    t.opts.multi_io_equal_alloc_required = true;
    auto res = t.run(r, {xv, yv});
    ASSERT_TRUE(res.status.ok()) << res.status.to_string();
    std::vector<float> want(128);
    for (int c = 0; c < 4; ++c)
      for (int s = 0; s < 32; ++s) {
        const double a = xv[c * 32 + s], b = yv[s];
        want[c * 32 + s] = ref16(op == "add" ? a + b : op == "sub" ? a - b : a * b);
      }
    expect_ulps(res.outputs[0], want,
                0);  // exact: fp32 then one rounding == correctly rounded fp16
  }
}

TEST(SimOps, ElementwiseEdgeCases) {
  OneOp t;
  t.opts.fp16_ftz = false;  // subnormal semantics of the op itself; FTZ has its own test
  MilVar x = t.f.input("a0_x", f16({1, 1, 1, 32}));
  MilVar y = t.f.input("a1_y", f16({1, 1, 1, 32}));
  MilVar s = t.f.binary("add", "s", "s", x, y);
  MilVar p = t.f.binary("mul", "p", "p", x, y);
  MilVar c = t.f.concat("c", "c", t.f.const_int32("ax", 1), t.f.const_bool("il", false), {s, p});
  std::vector<float> xv(32, 0.0f), yv(32, 0.0f);
  xv[0] = 60000;
  yv[0] = 60000;  // overflow -> +inf (sum), +inf (product)
  xv[1] = 1e-4f;
  yv[1] = 1e-3f;  // product 1e-7 is an fp16 subnormal
  xv[2] = 1.0f;
  yv[2] = 1.0f / 2048;  // tie: 1 + 2^-11 -> 1.0 (even)
  xv[3] = 1.0f;
  yv[3] = 3.0f / 2048;  // tie -> 1 + 2^-9
  xv[4] = NAN;
  yv[4] = 1.0f;  // NaN propagates
  xv[5] = INFINITY;
  yv[5] = -INFINITY;  // inf - inf = NaN
  xv[6] = -65504;
  yv[6] = -32;  // -65536 rounds to -inf? no: 65536 is past the midpoint 65520
  xv[7] = 3e-5f;
  yv[7] = 3e-5f;  // subnormal + subnormal stays subnormal
  for (auto* v : {&xv, &yv})
    for (float& e : *v) e = std::isnan(e) ? e : round_to_fp16(e);
  auto res = t.run(c, {xv, yv});
  ASSERT_TRUE(res.status.ok()) << res.status.to_string();
  const auto& o = res.outputs[0];  // [sum lanes 0..31 | product lanes 0..31]
  EXPECT_TRUE(std::isinf(o[0]) && o[0] > 0);
  EXPECT_TRUE(std::isinf(o[32]) && o[32] > 0);
  EXPECT_EQ(o[33], ref16(static_cast<double>(xv[1]) * yv[1]));
  EXPECT_GT(o[33], 0.0f);
  EXPECT_LT(o[33], kFp16MinNormal);
  EXPECT_EQ(o[2], 1.0f);
  EXPECT_EQ(o[3], 1.0f + 1.0f / 512);
  EXPECT_TRUE(std::isnan(o[4]));
  EXPECT_TRUE(std::isnan(o[36]));
  EXPECT_TRUE(std::isnan(o[5]));
  EXPECT_TRUE(std::isinf(o[6]) && o[6] < 0);
  EXPECT_EQ(o[7], ref16(static_cast<double>(xv[7]) + yv[7]));
}

TEST(SimOps, FtzSwitchFlushesSubnormalResults) {
  OneOp t;
  t.opts.fp16_ftz = true;
  MilVar x = t.f.input("x", f16({1, 1, 1, 32}));
  MilVar r = t.f.binary("mul", "r", "r", x, t.f.const_fp16("k", 0.001, FloatFormat::kExact));
  std::vector<float> xv(32, round_to_fp16(0.01f));
  auto res = t.run(r, {xv});
  ASSERT_TRUE(res.status.ok());
  EXPECT_EQ(res.outputs[0][0], 0.0f);  // 1e-5 is subnormal in fp16 -> flushed
}

double naive_conv1x1(const std::vector<float>& w, const std::vector<float>& x, int o, int s,
                     int cin, int S) {
  double acc = 0;
  for (int i = 0; i < cin; ++i) acc += static_cast<double>(w[o * cin + i]) * x[i * S + s];
  return acc;
}

TEST(SimOps, PointwiseConvMatchesNaiveReference) {
  OneOp t;
  t.opts.fp16_ftz = false;  // subnormal semantics of the op itself; FTZ has its own test
  const int cin = 96, cout = 40, S = 32;
  const auto wv = halfs(cout * cin, 3, 0.2f), xv = halfs(cin * S, 4, 2.0f);
  WeightBlobWriter blob;
  const auto off = blob.add_fp16_from_fp32(wv);
  t.weights.push_back({"@model_path/weights/w.bin", blob.take()});
  MilVar x = t.f.input("x", f16({1, cin, 1, S}));
  ConvConsts c = t.f.conv_consts();
  MilVar w = t.f.const_blob("W", f16({cout, cin, 1, 1}), {"@model_path/weights/w.bin", off});
  auto res = t.run(t.f.conv("y", "y", c, w, x), {xv});
  ASSERT_TRUE(res.status.ok()) << res.status.to_string();
  std::vector<float> want(cout * S);
  for (int o = 0; o < cout; ++o)
    for (int s = 0; s < S; ++s) want[o * S + s] = ref16(naive_conv1x1(wv, xv, o, s, cin, S));
  expect_ulps(res.outputs[0], want,
              1);  // fp32 accumulation vs fp64: at most one ulp after rounding
}

TEST(SimOps, GeneralConvWithPaddingStridesAndGroups) {
  OneOp t;
  const int cin = 4, cout = 6, groups = 2, H = 5, W = 64, k = 3;
  const auto wv = halfs(cout * (cin / groups) * k * k, 5, 0.5f), xv = halfs(cin * H * W, 6, 1.0f);
  WeightBlobWriter blob;
  const auto off = blob.add_fp16_from_fp32(wv);
  t.weights.push_back({"@model_path/weights/w.bin", blob.take()});
  MilVar x = t.f.input("x", f16({1, cin, H, W}));
  MilVar w =
      t.f.const_blob("W", f16({cout, cin / groups, k, k}), {"@model_path/weights/w.bin", off});
  MilVar y = t.f.op("conv", "y", "y",
                    {{"dilations", {t.f.const_int32_vec("dl", {1, 1})}},
                     {"groups", {t.f.const_int32("gr", groups)}},
                     {"pad", {t.f.const_int32_vec("pd", {1, 1, 1, 1})}},
                     {"pad_type", {t.f.const_string("pt", "custom")}},
                     {"strides", {t.f.const_int32_vec("st", {1, 2})}},
                     {"weight", {w}},
                     {"x", {x}}});
  ASSERT_EQ(y.type, f16({1, cout, 5, 32}));
  auto res = t.run(y, {xv});
  ASSERT_TRUE(res.status.ok()) << res.status.to_string();
  std::vector<float> want;
  const int cpg = cin / groups, opg = cout / groups;
  for (int o = 0; o < cout; ++o)
    for (int oy = 0; oy < 5; ++oy)
      for (int ox = 0; ox < 32; ++ox) {
        double acc = 0;
        for (int i = 0; i < cpg; ++i)
          for (int ky = 0; ky < k; ++ky)
            for (int kx = 0; kx < k; ++kx) {
              const int iy = oy + ky - 1, ix = ox * 2 + kx - 1;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              acc += static_cast<double>(wv[((o * cpg + i) * k + ky) * k + kx]) *
                     xv[((o / opg * cpg + i) * H + iy) * W + ix];
            }
        want.push_back(ref16(acc));
      }
  expect_ulps(res.outputs[0], want, 1);
}

TEST(SimOps, ConvAccumulatesInFp32UnlessTheFp16KnobIsSet) {
  for (const bool fp16_acc : {false, true}) {
    OneOp t;
    if (fp16_acc) t.opts.accumulate = Accumulate::kFp16;
    WeightBlobWriter blob;
    const auto off = blob.add_fp16_from_fp32(std::vector<float>(3, 1.0f));
    t.weights.push_back({"@model_path/weights/w.bin", blob.take()});
    MilVar x = t.f.input("x", f16({1, 3, 1, 32}));
    ConvConsts c = t.f.conv_consts();
    MilVar w = t.f.const_blob("W", f16({1, 3, 1, 1}), {"@model_path/weights/w.bin", off});
    std::vector<float> xv(96, 0.0f);
    xv[0] = 2048;
    xv[32] = 1;
    xv[64] = 1;  // lane 0: 2048 + 1 + 1
    auto res = t.run(t.f.conv("y", "y", c, w, x), {xv});
    ASSERT_TRUE(res.status.ok());
    // fp32: 2050 exactly; fp16 running sum: 2048 + 1 ties back to 2048 twice.
    EXPECT_EQ(res.outputs[0][0], fp16_acc ? 2048.0f : 2050.0f);
  }
}

TEST(SimOps, MatmulWithTransposesAndBroadcast) {
  for (int variant = 0; variant < 4; ++variant) {
    const bool tx = variant & 1, ty = variant & 2;
    OneOp t;
    const int H = 3, M = 8, K = 40, N = 32;
    MilVar x = t.f.input("a0_x", f16(tx ? std::vector<std::int64_t>{1, H, K, M}
                                        : std::vector<std::int64_t>{1, H, M, K}));
    MilVar y = t.f.input("a1_y", f16(ty ? std::vector<std::int64_t>{1, 1, N, K}
                                        : std::vector<std::int64_t>{1, 1, K, N}));
    t.opts.multi_io_equal_alloc_required = false;
    MilVar r = t.f.matmul("r", "r", t.f.const_bool("tx", tx), t.f.const_bool("ty", ty), x, y);
    ASSERT_EQ(r.type, f16({1, H, M, N}));
    const auto xv = halfs(H * M * K, 7, 1.0f), yv = halfs(K * N, 8, 1.0f);
    auto res = t.run(r, {xv, yv});
    ASSERT_TRUE(res.status.ok()) << res.status.to_string();
    std::vector<float> want;
    for (int h = 0; h < H; ++h)
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          double acc = 0;
          for (int k = 0; k < K; ++k) {
            const float a = tx ? xv[(h * K + k) * M + m] : xv[(h * M + m) * K + k];
            const float b = ty ? yv[n * K + k] : yv[k * N + n];
            acc += static_cast<double>(a) * b;
          }
          want.push_back(ref16(acc));
        }
    expect_ulps(res.outputs[0], want, 1);
  }
}

TEST(SimOps, ReduceSumOverChannelsAndLanesWithOverflow) {
  OneOp t;
  MilVar x = t.f.input("x", f16({1, 64, 1, 32}));
  MilVar rc =
      t.f.reduce_sum("rc", "rc", x, t.f.const_int32_vec("a1", {1}), t.f.const_bool("kd", true));
  ASSERT_EQ(rc.type, f16({1, 1, 1, 32}));
  auto xv = halfs(64 * 32, 9, 3.0f);
  for (int c = 0; c < 64; ++c) xv[c * 32 + 31] = 2048;  // lane 31: 64 * 2048 = 131072 -> +inf
  auto res = t.run(rc, {xv});
  ASSERT_TRUE(res.status.ok()) << res.status.to_string();
  std::vector<float> want(32);
  for (int s = 0; s < 32; ++s) {
    double acc = 0;
    for (int c = 0; c < 64; ++c) acc += xv[c * 32 + s];
    want[s] = ref16(acc);
  }
  expect_ulps(res.outputs[0], want, 1);
  EXPECT_TRUE(std::isinf(res.outputs[0][31]));
  // Over the last axis, keep_dims false is not an I/O shape we can return, so keep dims here too.
  OneOp t2;
  MilVar x2 = t2.f.input("x", f16({1, 4, 1, 64}));
  MilVar rl =
      t2.f.reduce_sum("rl", "rl", x2, t2.f.const_int32_vec("a", {-1}), t2.f.const_bool("kd", true));
  const auto x2v = halfs(256, 10, 1.0f);
  auto r2 = t2.run(rl, {x2v});
  ASSERT_TRUE(r2.status.ok()) << r2.status.to_string();
  for (int c = 0; c < 4; ++c) {
    double acc = 0;
    for (int s = 0; s < 64; ++s) acc += x2v[c * 64 + s];
    EXPECT_LE(ulps(r2.outputs[0][c], ref16(acc)), 1);
  }
}

TEST(SimOps, SoftmaxAlongEitherAxisWithMaskAndNaN) {
  for (const int axis : {-1, 1}) {
    OneOp t;
    MilVar x = t.f.input("x", f16({1, 6, 1, 32}));
    MilVar r = t.f.softmax("r", "r", t.f.const_int32("ax", axis), x);
    auto xv = halfs(6 * 32, 11, 4.0f);
    xv[5] = -65504;  // causal-mask value
    auto res = t.run(r, {xv});
    ASSERT_TRUE(res.status.ok()) << res.status.to_string();
    std::vector<float> want(xv.size());
    const int len = axis == -1 ? 32 : 6, stride = axis == -1 ? 1 : 32, outer = axis == -1 ? 6 : 32;
    for (int o = 0; o < outer; ++o) {
      const int base = axis == -1 ? o * 32 : o;
      double mx = -1e300, sum = 0;
      for (int i = 0; i < len; ++i) mx = std::max(mx, static_cast<double>(xv[base + i * stride]));
      for (int i = 0; i < len; ++i) sum += std::exp(xv[base + i * stride] - mx);
      for (int i = 0; i < len; ++i)
        want[base + i * stride] = ref16(std::exp(xv[base + i * stride] - mx) / sum);
    }
    expect_ulps(res.outputs[0], want, 2);
    EXPECT_EQ(res.outputs[0][5], 0.0f);
  }
  OneOp t;
  MilVar x = t.f.input("x", f16({1, 2, 1, 32}));
  MilVar r = t.f.softmax("r", "r", t.f.const_int32("ax", -1), x);
  std::vector<float> xv(64, 0.0f);
  xv[3] = NAN;
  auto res = t.run(r, {xv});
  ASSERT_TRUE(res.status.ok());
  for (int i = 0; i < 32; ++i) EXPECT_TRUE(std::isnan(res.outputs[0][i]));  // NaN poisons its row
  for (int i = 32; i < 64; ++i) EXPECT_EQ(res.outputs[0][i], ref16(1.0 / 32));
}

TEST(SimOps, PowSigmoidIdentityTranscendentals) {
  OneOp t;
  t.opts.fp16_ftz = false;  // subnormal semantics of the op itself; FTZ has its own test
  MilVar x = t.f.input("x", f16({1, 1, 1, 64}));
  MilVar pw = t.f.binary("pow", "pw", "pw", x, t.f.const_fp16("nh", -0.5, FloatFormat::kExact));
  MilVar sg = t.f.unary("sigmoid", "sg", "sg", x);
  MilVar id = t.f.unary("identity", "id", "id", x);
  MilVar c =
      t.f.concat("c", "c", t.f.const_int32("ax", 1), t.f.const_bool("il", false), {pw, sg, id});
  auto xv = halfs(64, 12, 8.0f);
  for (int i = 0; i < 32; ++i) xv[i] = std::fabs(xv[i]);  // pow on non-negatives
  xv[0] = 0.0f;                                           // pow(0, -0.5) = +inf
  xv[1] = fp16_to_fp32(0x0011);                           // subnormal eps 1e-6
  xv[40] = -20.0f;                                        // sigmoid underflow region
  xv[41] = NAN;
  auto res = t.run(c, {xv});
  ASSERT_TRUE(res.status.ok()) << res.status.to_string();
  const auto& o = res.outputs[0];
  EXPECT_TRUE(std::isinf(o[0]));
  for (int i = 1; i < 32; ++i)
    EXPECT_LE(ulps(o[i], ref16(std::pow(static_cast<double>(xv[i]), -0.5))), 1) << i;
  for (int i = 0; i < 64; ++i) {
    if (i == 41) continue;
    EXPECT_LE(ulps(o[64 + i], ref16(1.0 / (1.0 + std::exp(-static_cast<double>(xv[i]))))), 1) << i;
    EXPECT_EQ(o[128 + i], xv[i]);
  }
  EXPECT_TRUE(std::isnan(o[64 + 41]));
  EXPECT_TRUE(std::isnan(o[128 + 41]));
}

TEST(SimOps, DataMovementIsExact) {
  // reshape [1,64,1,32] -> [1,2,32,32], transpose [0,1,3,2], slice, concat back on axis 1.
  OneOp t;
  MilVar x = t.f.input("x", f16({1, 64, 1, 32}));
  MilVar r = t.f.reshape("r", "r", t.f.const_int32_vec("sh", {1, 2, 32, 32}), x);
  MilVar tr = t.f.transpose("tr", "tr", t.f.const_int32_vec("pm", {0, 1, 3, 2}), r);
  MilVar sl = t.f.slice_by_size("sl", "sl", tr, t.f.const_int32_vec("b", {0, 1, 0, 0}),
                                t.f.const_int32_vec("s", {1, 1, -1, 32}));
  MilVar cat =
      t.f.concat("cat", "cat", t.f.const_int32("ax", 1), t.f.const_bool("il", false), {sl, tr});
  ASSERT_EQ(cat.type, f16({1, 3, 32, 32}));
  const auto xv = halfs(64 * 32, 13, 100.0f);
  auto res = t.run(cat, {xv});
  ASSERT_TRUE(res.status.ok()) << res.status.to_string();
  const auto& o = res.outputs[0];
  // reshape: element (h, d, s) = x[c = h*32 + d][s]; transpose: tr[h][s][d].
  auto trv = [&](int h, int s, int d) { return xv[(h * 32 + d) * 32 + s]; };
  for (int s = 0; s < 32; ++s)
    for (int d = 0; d < 32; ++d) {
      ASSERT_EQ(o[(0 * 32 + s) * 32 + d], trv(1, s, d));
      ASSERT_EQ(o[(1 * 32 + s) * 32 + d], trv(0, s, d));
      ASSERT_EQ(o[(2 * 32 + s) * 32 + d], trv(1, s, d));
    }
}

TEST(SimOps, CastBetweenFp32AndFp16) {
  OneOp t;
  t.opts.allow_fp32_io = true;
  MilVar x = t.f.input("x", MilType::tensor(DType::kFp32, {1, 2, 1, 16}));
  MilVar h = t.f.cast("h", "h", t.f.const_string("to16", "fp16"), x);
  MilVar y = t.f.cast("y", "y", t.f.const_string("to32", "fp32"), h);
  std::vector<float> xv = seeded_values(32, 14, 10.0f);
  xv[0] = 1e6f;  // saturates to inf
  xv[1] = 1.0f + 1.0f / 2048 + 1e-6f;
  auto res = t.run(y, {xv});
  ASSERT_TRUE(res.status.ok()) << res.status.to_string();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(res.outputs[0][i], round_to_fp16(xv[i])) << i;
  EXPECT_TRUE(std::isinf(res.outputs[0][0]));
}

TEST(SimOps, QuantizeDequantizeRoundHalfEvenAndClip) {
  OneOp t;
  MilVar x = t.f.input("x", f16({1, 1, 1, 32}));
  MilVar sc = t.f.const_fp16("sc", 0.125, FloatFormat::kExact);
  MilVar q =
      t.f.op("quantize", "q", "q",
             {{"input", {x}}, {"output_dtype", {t.f.const_string("od", "int8")}}, {"scale", {sc}}});
  MilVar d = t.f.op("dequantize", "d", "d", {{"input", {q}}, {"scale", {sc}}});
  std::vector<float> xv(32, 0.0f);
  xv[0] = 0.0625f;   // 0.5 -> 0 (even)
  xv[1] = 0.1875f;   // 1.5 -> 2
  xv[2] = 100.0f;    // 800 -> clip 127
  xv[3] = -100.0f;   // -> -128
  xv[4] = -0.3125f;  // -2.5 -> -2
  auto res = t.run(d, {xv});
  ASSERT_TRUE(res.status.ok()) << res.status.to_string();
  const auto& o = res.outputs[0];
  EXPECT_EQ(o[0], 0.0f);
  EXPECT_EQ(o[1], 0.25f);
  EXPECT_EQ(o[2], 127 * 0.125f);
  EXPECT_EQ(o[3], -128 * 0.125f);
  EXPECT_EQ(o[4], -0.25f);
}

TEST(SimOps, ConstexprAffineDequantizeFoldsPerChannelScales) {
  OneOp t;
  const int cout = 8, cin = 32;
  std::vector<std::int8_t> q(cout * cin);
  for (int i = 0; i < cout * cin; ++i) q[i] = static_cast<std::int8_t>((i * 37) % 255 - 127);
  std::vector<float> scale(cout);
  for (int o = 0; o < cout; ++o) scale[o] = round_to_fp16(0.01f * (o + 1));
  WeightBlobWriter qb, sb;
  const auto qo = qb.add_int8(q);
  const auto so = sb.add_fp16_from_fp32(scale);
  t.weights.push_back({"@model_path/weights/q.bin", qb.take()});
  t.weights.push_back({"@model_path/weights/s.bin", sb.take()});
  MilVar x = t.f.input("x", f16({1, cin, 1, 32}));
  ConvConsts c = t.f.conv_consts();
  const BlobRef sref{"@model_path/weights/s.bin", so};
  MilVar w = t.f.affine_dequantize("W", MilType::tensor(DType::kInt8, {cout, cin, 1, 1}),
                                   {"@model_path/weights/q.bin", qo}, &sref, 1.0, 0);
  // Identity-like input: lane s carries the unit vector e_s, so y[o][s] = W[o][s].
  std::vector<float> xv(cin * 32, 0.0f);
  for (int s = 0; s < 32; ++s) xv[s * 32 + s] = 1.0f;
  auto res = t.run(t.f.conv("y", "y", c, w, x), {xv});
  ASSERT_TRUE(res.status.ok()) << res.status.to_string();
  for (int o = 0; o < cout; ++o)
    for (int s = 0; s < 32; ++s)
      ASSERT_EQ(res.outputs[0][o * 32 + s], ref16(static_cast<double>(scale[o]) * q[o * cin + s]));
}

}  // namespace
}  // namespace anelm::ane
