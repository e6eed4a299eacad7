// MIL emitter tests: spec printing conventions, golden text of fused blocks, blob headers byte by
// byte.
#include "ane_bridge/mil_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "ane_bridge/mil_blocks.h"
#include "ane_bridge/program_cache.h"
#include "ane_bridge/sim/mil_parser.h"
#include "ane_bridge/weight_blob.h"
#include "tests/ane_bridge/ane_test_util.h"

namespace anelm::ane {
namespace {

using testing::check_golden;
using testing::seeded_values;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(MilWriter, ReproducesTheSpecSwiGLUExampleLineForLine) {
  // §2.8: fused SwiGLU FFN, dim 64, hidden 128, S 32, weights in one file at 64 / 16512 / 32960.
  MilProgramBuilder p;
  MilFunctionBuilder& f = p.add_function();
  MilVar x = f.input("x", MilType::tensor(DType::kFp16, {1, 64, 1, 32}));
  ConvConsts c = f.conv_consts();
  const std::string wb = "@model_path/weights/weight.bin";
  MilVar wg = f.const_blob("Wg", MilType::tensor(DType::kFp16, {128, 64, 1, 1}), {wb, 64});
  MilVar wu = f.const_blob("Wu", MilType::tensor(DType::kFp16, {128, 64, 1, 1}), {wb, 16512});
  MilVar wd = f.const_blob("Wd", MilType::tensor(DType::kFp16, {64, 128, 1, 1}), {wb, 32960});
  MilVar g = f.conv("g", "cg", c, wg, x);
  MilVar sg = f.unary("sigmoid", "sg", "sg", g);
  MilVar si = f.binary("mul", "si", "si", g, sg);
  MilVar u = f.conv("u", "cu", c, wu, x);
  MilVar h = f.binary("mul", "h", "hm", si, u);
  MilVar y = f.conv("y", "cd", c, wd, h);
  f.output(y);
  std::string text;
  ASSERT_TRUE(p.build(&text).ok()) << p.build(&text).to_string();
  const auto l = lines_of(text);
  ASSERT_GE(l.size(), 20u);
  EXPECT_EQ(l[0], "program(1.3)");
  EXPECT_EQ(l[1],
            "[buildInfo = dict<string, string>({{\"coremlc-component-MIL\", \"3510.2.1\"}, "
            "{\"coremlc-version\", "
            "\"3505.4.1\"}, {\"coremltools-component-milinternal\", \"\"}, "
            "{\"coremltools-version\", \"9.0\"}})]");
  EXPECT_EQ(l[2], "{");
  EXPECT_EQ(l[3], "    func main<ios18>(tensor<fp16, [1, 64, 1, 32]> x) {");
  EXPECT_EQ(l[4], "        string pt = const()[name = string(\"pt\"), val = string(\"valid\")];");
  EXPECT_EQ(l[5],
            "        tensor<int32, [2]> st = const()[name = string(\"st\"), val = tensor<int32, "
            "[2]>([1, 1])];");
  EXPECT_EQ(l[6],
            "        tensor<int32, [4]> pd = const()[name = string(\"pd\"), val = tensor<int32, "
            "[4]>([0, 0, 0, 0])];");
  EXPECT_EQ(l[7],
            "        tensor<int32, [2]> dl = const()[name = string(\"dl\"), val = tensor<int32, "
            "[2]>([1, 1])];");
  EXPECT_EQ(l[8], "        int32 gr = const()[name = string(\"gr\"), val = int32(1)];");
  EXPECT_EQ(
      l[9],
      "        tensor<fp16, [128, 64, 1, 1]> Wg = const()[name = string(\"Wg\"), val = "
      "tensor<fp16, [128, 64, 1, "
      "1]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];");
  EXPECT_EQ(l[12],
            "        tensor<fp16, [1, 128, 1, 32]> g = conv(dilations = dl, groups = gr, pad = pd, "
            "pad_type = pt, "
            "strides = st, weight = Wg, x = x)[name = string(\"cg\")];");
  EXPECT_EQ(l[13],
            "        tensor<fp16, [1, 128, 1, 32]> sg = sigmoid(x = g)[name = string(\"sg\")];");
  EXPECT_EQ(
      l[14],
      "        tensor<fp16, [1, 128, 1, 32]> si = mul(x = g, y = sg)[name = string(\"si\")];");
  EXPECT_EQ(l[l.size() - 2], "    } -> (y);");
  EXPECT_EQ(l.back(), "}");
  EXPECT_EQ(text.back(), '\n');
}

TEST(MilWriter, ScalarFormatsNeverUseAnExponent) {
  EXPECT_EQ(format_float(1.0 / 768, FloatFormat::kFixed6), "0.001302");
  EXPECT_EQ(format_float(0.125, FloatFormat::kFixed6), "0.125000");
  EXPECT_EQ(format_float(0.13363062095621219, FloatFormat::kExact), "0.1336306209562122");
  EXPECT_EQ(format_float(0.125, FloatFormat::kExact), "0.125");
  EXPECT_EQ(format_float(1024, FloatFormat::kExact), "1024");
  EXPECT_EQ(format_float(-0.5, FloatFormat::kExact), "-0.5");
  EXPECT_EQ(format_float(1e-6, FloatFormat::kExact), "0.000001");
  EXPECT_EQ(format_float(std::ldexp(1.0, -14), FloatFormat::kExact), "0.00006103515625");
  EXPECT_EQ(format_float(std::ldexp(1.0, -24), FloatFormat::kExact),
            "0.000000059604644775390625");  // the smallest fp16 subnormal, exactly
}

// Every block the engine emits, at the extreme prescales the calibration may pick (the norm's eps
// const is then 2^-14 or D * eps * p^2) and with int8 weights (the affine scale): no float literal
// carries an exponent ("1e-06", "6.1e-05") or is a hex float ("0x1p-3").
TEST(MilWriter, EmittedBlocksHaveNoExponentInAnyLiteral) {
  const LayerShapes sh{64, 4, 2, 16, 128, 1e-6};
  const std::vector<float> g(64, 1.0f), wq(64 * 64, 0.01f), wkv(32 * 64, 0.01f), b(64, 0.1f),
      bkv(32, 0.1f), wo(64 * 64, 0.01f), wf(128 * 64, 0.01f), head(100 * 64, 0.01f);
  const std::regex exponent(R"(([0-9.]|\b)[eE][-+]?[0-9])"), hex(R"(0[xX][0-9a-fA-F.]+[pP])");
  const std::regex literal(R"((fp16|fp32)\(([^)]*)\))");
  int literals = 0;
  for (double p : {1.0 / 4096, 1.0 / 16, 1.0, 1024.0})
    for (WeightFormat fmt : {WeightFormat::kFp16, WeightFormat::kInt8}) {
      BlockOptions o;
      o.rms_prescale = p;
      o.format = fmt;
      BlockProgram a, f, h, n;
      ASSERT_TRUE(build_attn_input_block(sh, {g, {wq, b}, {wkv, bkv}, {wkv, bkv}}, o, &a).ok());
      ASSERT_TRUE(build_ffn_block(sh, {{wo, {}}, g, {wf, {}}, {wf, {}}, {wf, {}}}, o, &f).ok());
      ASSERT_TRUE(build_lm_head_chunk(sh, head, 100, {0, 100}, g, o, &h).ok());
      ASSERT_TRUE(build_final_norm(sh, g, o, &n).ok());
      for (const BlockProgram* bp : {&a, &f, &h, &n}) {
        const std::string& text = bp->source.mil_text;
        for (auto it = std::sregex_iterator(text.begin(), text.end(), literal);
             it != std::sregex_iterator(); ++it) {
          const std::string v = (*it)[2].str();
          if (v.rfind("BLOBFILE", 0) == 0) continue;
          ++literals;
          EXPECT_FALSE(std::regex_search(v, exponent)) << bp->source.name << ": " << v;
          EXPECT_FALSE(std::regex_search(v, hex)) << bp->source.name << ": " << v;
        }
        EXPECT_FALSE(std::regex_search(text, hex)) << bp->source.name;
      }
    }
  EXPECT_GT(literals, 20);  // psc, eps and nhalf of every norm at least
}

TEST(MilWriter, InfersTypesAndReportsBuilderErrors) {
  MilProgramBuilder p;
  MilFunctionBuilder& f = p.add_function();
  MilVar x = f.input("x", MilType::tensor(DType::kFp16, {1, 8, 1, 32}));
  MilVar y = f.input("y", MilType::tensor(DType::kFp16, {1, 1, 1, 32}));
  MilVar s = f.binary("add", "s", "s", x, y);  // broadcast [1,1,1,32] over channels
  EXPECT_EQ(s.type, MilType::tensor(DType::kFp16, {1, 8, 1, 32}));
  MilVar z = f.input("z", MilType::tensor(DType::kFp16, {1, 3, 1, 31}));
  f.binary("add", "bad", "bad", x, z);
  f.output(s);
  std::string text;
  const Status st = p.build(&text);
  EXPECT_EQ(st.code(), StatusCode::kInvalidMILProgram);
  EXPECT_NE(st.message().find("do not broadcast"), std::string::npos) << st.message();
}

TEST(MilWriter, AffineDequantizeUsesTheIos16AttributeForm) {
  MilProgramBuilder p;
  MilFunctionBuilder& f = p.add_function();
  f.input("x", MilType::tensor(DType::kFp16, {1, 64, 1, 32}));
  const BlobRef scale{"@model_path/weights/s.bin", 64};
  MilVar w = f.affine_dequantize("W0", MilType::tensor(DType::kInt8, {32, 64, 1, 1}),
                                 {"@model_path/weights/q.bin", 64}, &scale, 1.0, 0);
  MilVar w1 = f.affine_dequantize("W1", MilType::tensor(DType::kInt8, {32, 64, 1, 1}),
                                  {"@model_path/weights/q.bin", 64}, nullptr, 0.125, 0);
  EXPECT_EQ(w.type, MilType::tensor(DType::kFp16, {32, 64, 1, 1}));
  f.output(w1);
  std::string text;
  ASSERT_TRUE(p.build(&text).ok());
  EXPECT_NE(
      text.find(
          "tensor<fp16, [32, 64, 1, 1]> W1 = constexpr_affine_dequantize()[axis = int32(0), name = "
          "string(\"W1\"), quantized_data = tensor<int8, [32, 64, 1, 1]>(BLOBFILE(path = "
          "string(\"@model_path/weights/q.bin\"), offset = uint64(64))), scale = fp16(0.125), "
          "zero_point = int8(0)];"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("scale = tensor<fp16, [32]>(BLOBFILE(path = string(\"@model_path/weights/s.bin\")"),
      std::string::npos);
}

// ---- golden blocks ----

struct SmallLayer {
  LayerShapes shapes{64, 2, 1, 32, 128, 1e-6};
  std::vector<float> g1 = seeded_values(64, 1, 0.5f), wq = seeded_values(64 * 64, 2, 0.1f),
                     wk = seeded_values(32 * 64, 3, 0.1f), wv = seeded_values(32 * 64, 4, 0.1f),
                     bq = seeded_values(64, 5, 0.1f), bk = seeded_values(32, 6, 0.1f),
                     bv = seeded_values(32, 7, 0.1f), wo = seeded_values(64 * 64, 8, 0.1f),
                     g2 = seeded_values(64, 9, 0.5f), wg = seeded_values(128 * 64, 10, 0.1f),
                     wu = seeded_values(128 * 64, 11, 0.1f), wd = seeded_values(64 * 128, 12, 0.1f);
  AttnInputWeights attn() const { return {g1, {wq, bq}, {wk, bk}, {wv, bv}}; }
  FfnBlockWeights ffn() const { return {{wo, {}}, g2, {wg, {}}, {wu, {}}, {wd, {}}}; }
};

// Checks every header and record field of a single-tensor file produced by the block builders.
void expect_single_tensor_blob(const WeightFile& w, std::uint32_t dtype, std::uint64_t size) {
  SCOPED_TRACE(w.path);
  const auto& b = w.bytes;
  ASSERT_EQ(b.size(), 128 + size);
  EXPECT_EQ(read_u32_le(&b[0]), 1u);  // count
  EXPECT_EQ(read_u32_le(&b[4]), 2u);  // version
  for (int i = 8; i < 64; ++i) ASSERT_EQ(b[i], 0) << "reserved header byte " << i;
  EXPECT_EQ(b[64], 0xEF);
  EXPECT_EQ(b[65], 0xBE);
  EXPECT_EQ(b[66], 0xAD);
  EXPECT_EQ(b[67], 0xDE);
  EXPECT_EQ(read_u32_le(&b[68]), dtype);  // 1 = Float16, 4 = Int8
  EXPECT_EQ(read_u64_le(&b[72]), size);   // sizeInBytes
  EXPECT_EQ(read_u64_le(&b[80]), 128u);   // absolute payload offset = record + 64
  EXPECT_EQ(read_u64_le(&b[88]), 0u);     // padding_size_in_bits
  for (int i = 96; i < 128; ++i) ASSERT_EQ(b[i], 0) << "reserved record byte " << i;
}

std::string weights_listing(const ProgramSource& s) {
  std::string out;
  for (const WeightFile& w : s.weights)
    out += w.path + " " + std::to_string(w.bytes.size()) + " fnv1a64=" + key_hex(fnv1a64(w.bytes)) +
           "\n";
  return out;
}

void expect_parses(const std::string& mil) {
  sim::ProgramAst ast;
  const Status s = sim::parse_mil(mil, &ast);
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(MilBlocksGolden, AttentionInputBlockFp16) {
  SmallLayer L;
  BlockOptions o;
  o.name = "L00_attn_in_s32";
  BlockProgram b;
  ASSERT_TRUE(build_attn_input_block(L.shapes, L.attn(), o, &b).ok());
  EXPECT_EQ(check_golden("attn_in_d64_s32_fp16.mil", b.source.mil_text), "");
  EXPECT_EQ(check_golden("attn_in_d64_s32_fp16.weights.txt", weights_listing(b.source)), "");
  ASSERT_EQ(b.source.weights.size(), 2u);
  expect_single_tensor_blob(b.source.weights[0], 1, 128 * 64 * 2);  // wqkv
  expect_single_tensor_blob(b.source.weights[1], 1, 128 * 2);       // bqkv
  expect_parses(b.source.mil_text);
}

TEST(MilBlocksGolden, FfnBlockFp16) {
  SmallLayer L;
  BlockOptions o;
  o.name = "L00_ffn_s32";
  BlockProgram b;
  ASSERT_TRUE(build_ffn_block(L.shapes, L.ffn(), o, &b).ok());
  EXPECT_EQ(check_golden("ffn_d64_f128_s32_fp16.mil", b.source.mil_text), "");
  EXPECT_EQ(check_golden("ffn_d64_f128_s32_fp16.weights.txt", weights_listing(b.source)), "");
  ASSERT_EQ(b.source.weights.size(), 4u);
  expect_single_tensor_blob(b.source.weights[0], 1, 64 * 64 * 2);
  expect_single_tensor_blob(b.source.weights[1], 1, 128 * 64 * 2);
  expect_single_tensor_blob(b.source.weights[2], 1, 128 * 64 * 2);
  expect_single_tensor_blob(b.source.weights[3], 1, 64 * 128 * 2);
  expect_parses(b.source.mil_text);
}

TEST(MilBlocksGolden, FfnBlockInt8) {
  SmallLayer L;
  BlockOptions o;
  o.name = "L00_ffn_s32";
  o.format = WeightFormat::kInt8;
  BlockProgram b;
  ASSERT_TRUE(build_ffn_block(L.shapes, L.ffn(), o, &b).ok());
  EXPECT_EQ(check_golden("ffn_d64_f128_s32_int8.mil", b.source.mil_text), "");
  EXPECT_EQ(check_golden("ffn_d64_f128_s32_int8.weights.txt", weights_listing(b.source)), "");
  ASSERT_EQ(b.source.weights.size(), 8u);
  expect_single_tensor_blob(b.source.weights[0], 1, 64 * 64);  // wo int8, tagged as the seeds do
  expect_single_tensor_blob(b.source.weights[1], 1, 64 * 2);   // wo_scale fp16 [64]
  expect_single_tensor_blob(b.source.weights[6], 1, 64 * 128);
  expect_single_tensor_blob(b.source.weights[7], 1, 64 * 2);
  expect_parses(b.source.mil_text);
  // The CT code is one switch away and the simulator takes both.
  o.int8_blob_dtype_code = kInt8BlobDtypeCodeCt;
  BlockProgram ct;
  ASSERT_TRUE(build_ffn_block(L.shapes, L.ffn(), o, &ct).ok());
  expect_single_tensor_blob(ct.source.weights[0], 4, 64 * 64);
  expect_single_tensor_blob(ct.source.weights[1], 1, 64 * 2);
  EXPECT_EQ(ct.source.mil_text, b.source.mil_text);
  for (const BlockProgram* p : {&b, &ct}) {
    std::unique_ptr<Program> prog;
    EXPECT_TRUE(make_simulator({})->compile(p->source, &prog).ok());
  }
  // A simulator that takes only CT's code refuses the default (and says why).
  RuntimeOptions strict;
  strict.sim.int8_blob_dtype_codes = {kInt8BlobDtypeCodeCt};
  std::unique_ptr<Program> prog;
  const Status s = make_simulator(strict)->compile(b.source, &prog);
  EXPECT_EQ(s.code(), StatusCode::kCompileFailed);
  EXPECT_NE(s.message().find("dtype code 1"), std::string::npos) << s.message();
}

TEST(MilBlocksGolden, IdenticalLayersGetDistinctTagsAndBytes) {
  SmallLayer L;
  BlockProgram a, b;
  BlockOptions o;
  o.name = block_name("attn_in", 0, 32);
  ASSERT_TRUE(build_attn_input_block(L.shapes, L.attn(), o, &a).ok());
  o.name = block_name("attn_in", 1, 32);
  ASSERT_TRUE(build_attn_input_block(L.shapes, L.attn(), o, &b).ok());
  EXPECT_EQ(a.source.name, "L00_attn_in_s32");
  EXPECT_EQ(b.source.name, "L01_attn_in_s32");
  EXPECT_NE(a.source.mil_text, b.source.mil_text);  // prog-tag differs (§1.11)
  EXPECT_NE(a.source.mil_text.find("{\"prog-tag\", \"L00_attn_in_s32\"}"), std::string::npos);
}

}  // namespace
}  // namespace anelm::ane
