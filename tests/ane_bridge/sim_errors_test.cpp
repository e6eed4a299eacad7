// Simulator rejection tests: malformed MIL (line:column), malformed blobs, evaluation errors,
// the compile budget, and the on-disk compile cache.
#include <gtest/gtest.h>

#include <filesystem>

#include "ane_bridge/program_cache.h"
#include "ane_bridge/sim/simulator.h"
#include "ane_bridge/surface_layout.h"
#include "ane_bridge/weight_blob.h"
#include "tests/ane_bridge/ane_test_util.h"
#include "tests/support/shared_data.h"

namespace anelm::ane {
namespace {

const std::string kHead =
    "program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n";

// A valid program: y = conv(W, x) with W [8, 64] at weight.bin offset 64 (line numbers below refer
// to this text: the conv statement is line 11).
std::string valid_mil(const std::string& weight_type = "tensor<fp16, [8, 64, 1, 1]>",
                      std::uint64_t offset = 64) {
  return kHead +
         "    func main<ios18>(tensor<fp16, [1, 64, 1, 32]> x) {\n"
         "        string pt = const()[name = string(\"pt\"), val = string(\"valid\")];\n"
         "        tensor<int32, [2]> st = const()[name = string(\"st\"), val = tensor<int32, "
         "[2]>([1, 1])];\n"
         "        tensor<int32, [4]> pd = const()[name = string(\"pd\"), val = tensor<int32, "
         "[4]>([0, 0, 0, 0])];\n"
         "        tensor<int32, [2]> dl = const()[name = string(\"dl\"), val = tensor<int32, "
         "[2]>([1, 1])];\n"
         "        int32 gr = const()[name = string(\"gr\"), val = int32(1)];\n"
         "        " +
         weight_type + " W = const()[name = string(\"W\"), val = " + weight_type +
         "(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(" +
         std::to_string(offset) +
         ")))];\n"
         "        tensor<fp16, [1, 8, 1, 32]> y = conv(dilations = dl, groups = gr, pad = pd, "
         "pad_type = pt, strides = st, weight = W, x = x)[name = string(\"c\")];\n"
         "    } -> (y);\n}\n";
}

std::vector<std::uint8_t> weight_blob(std::size_t n = 8 * 64) {
  WeightBlobWriter w;
  w.add_fp16_from_fp32(std::vector<float>(n, 0.5f));
  return w.take();
}

ProgramSource source(std::string mil, std::vector<std::uint8_t> blob = weight_blob()) {
  return ProgramSource{"t", std::move(mil), {{"@model_path/weights/weight.bin", std::move(blob)}}};
}

Status compile(const ProgramSource& src, SimulatorOptions o = testing::test_options()) {
  RuntimeOptions ro;
  ro.sim = o;
  std::unique_ptr<Program> p;
  return make_simulator(ro)->compile(src, &p);
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

void expect_error(const Status& s, StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message: " << s.message() << "\nwanted: " << needle;
}

TEST(SimErrors, ValidProgramCompiles) { EXPECT_TRUE(compile(source(valid_mil())).ok()); }

TEST(SimErrors, MalformedMilReportsLineAndColumn) {
  const std::string ok = valid_mil();
  // Missing ';' after the conv statement: reported where the next token starts (line 12, col 5).
  expect_error(compile(source(replace(ok, "string(\"c\")];", "string(\"c\")]"))),
               StatusCode::kInvalidMILProgram, "line 12:5: expected ';'");
  // Dialect B header.
  expect_error(compile(source(replace(ok, "program(1.3)", "program(1.0)"))),
               StatusCode::kInvalidMILProgram, "line 1:9: program(1.0) is not dialect A");
  // Dialect-B function opset under a dialect-A header.
  expect_error(compile(source(replace(ok, "main<ios18>", "main<ios16>"))),
               StatusCode::kInvalidMILProgram, "line 4:15: function opset <ios16>");
  // Rank-0 tensor scalar (dialect B spelling) inside dialect A.
  expect_error(compile(source(replace(
                   ok, "int32 gr = const()[name = string(\"gr\"), val = int32(1)]",
                   "tensor<int32, []> gr = const()[name = string(\"gr\"), val = int32(1)]"))),
               StatusCode::kInvalidMILProgram, "line 9:23: rank-0 tensor type is dialect B");
  // Declared type disagrees with the inferred one.
  expect_error(
      compile(
          source(replace(ok, "tensor<fp16, [1, 8, 1, 32]> y", "tensor<fp16, [1, 9, 1, 32]> y"))),
      StatusCode::kInvalidMILProgram, "line 11:9: declared type tensor<fp16, [1, 9, 1, 32]>");
  // Undefined variable.
  expect_error(compile(source(replace(ok, "weight = W, x = x", "weight = W, x = z"))),
               StatusCode::kInvalidMILProgram, "line 11:");
  expect_error(compile(source(replace(ok, "weight = W, x = x", "weight = W, x = z"))),
               StatusCode::kInvalidMILProgram, "undefined variable 'z'");
  // A literal where an argument must be a variable.
  expect_error(compile(source(replace(ok, "groups = gr", "groups = 1"))),
               StatusCode::kInvalidMILProgram, "line 11:71: op arguments must be variables");
  // Unknown op: outside the proven catalog is a compiler (whitelist) failure.
  expect_error(compile(source(replace(ok, "= conv(", "= gelu("))), StatusCode::kCompileFailed,
               "line 11:41: op 'gelu' is not in the supported op catalog");
  // conv bias= is rejected on the ANE.
  expect_error(compile(source(replace(ok, "weight = W, x = x", "weight = W, x = x, bias = W"))),
               StatusCode::kInvalidMILProgram, "conv 'bias' is rejected on the ANE");
  // Missing name attribute.
  expect_error(compile(source(replace(ok, "[name = string(\"c\")]", "[]"))),
               StatusCode::kInvalidMILProgram, "line 11:41: statement 'y' has no name attribute");
  // Duplicate variable.
  expect_error(compile(source(replace(ok, "int32 gr =", "int32 dl ="))),
               StatusCode::kInvalidMILProgram, "line 9:9: variable 'dl' is defined twice");
  // Non-integral int32 literal.
  expect_error(compile(source(replace(ok, "val = int32(1)", "val = int32(1.5)"))),
               StatusCode::kInvalidMILProgram, "line 9:55: value 1.500000 is not a valid int32");
  // Stray character.
  expect_error(compile(source(replace(ok, "-> (y);", "-> (y)$"))), StatusCode::kInvalidMILProgram,
               "line 12:13: unexpected character '$'");
  // Returning an unknown variable.
  expect_error(compile(source(replace(ok, "-> (y);", "-> (q);"))), StatusCode::kInvalidMILProgram,
               "line 12:11: returned variable 'q' is not defined");
  // fp32 function I/O is off by default (contested, §10.8).
  expect_error(compile(source(replace(ok, "tensor<fp16, [1, 64, 1, 32]> x",
                                      "tensor<fp32, [1, 64, 1, 32]> x"))),
               StatusCode::kInvalidMILProgram, "line 4:22: input 'x' has dtype fp32");
}

TEST(SimErrors, MalformedBlobsAreRejectedWithTheirCause) {
  auto bad_magic = weight_blob();
  bad_magic[65] = 0x00;
  expect_error(compile(source(valid_mil(), bad_magic)), StatusCode::kCompileFailed,
               "bad blob record magic 0xDEAD00EF at offset 64");
  expect_error(compile(source(valid_mil("tensor<fp16, [8, 64, 1, 1]>", 4096))),
               StatusCode::kCompileFailed,
               "BLOBFILE offset 4096 is out of range for a 1152-byte blob");
  expect_error(compile(source(valid_mil("tensor<fp16, [8, 64, 1, 1]>", 128))),
               StatusCode::kCompileFailed,
               "bad blob record magic 0x38003800 at offset 128");  // points at the payload, not the
                                                                   // record (§3.3)
  // Size mismatch: the blob holds 8x32 but the MIL says 8x64 ... (and the conv type follows).
  expect_error(compile(source(valid_mil(), weight_blob(8 * 32))), StatusCode::kCompileFailed,
               "has size 512 bytes, the MIL type needs 1024");
  auto bad_version = weight_blob();
  bad_version[4] = 3;
  expect_error(compile(source(valid_mil(), bad_version)), StatusCode::kCompileFailed,
               "version is 3, expected 2");
  ProgramSource missing = source(valid_mil());
  missing.weights[0].path = "@model_path/weights/other.bin";
  expect_error(compile(missing), StatusCode::kCompileFailed,
               "line 10:75: BLOBFILE path \"@model_path/weights/weight.bin\" is not a key of the "
               "weights dictionary");
  // Lenient mode reproduces the device's observed tolerance of a too-large size field (§3.5).
  auto big_size = weight_blob();
  big_size[72 + 2] = 0x08;  // size field 524,288 + 1024
  SimulatorOptions lenient;
  lenient.blob_strict = false;
  EXPECT_FALSE(compile(source(valid_mil(), big_size)).ok());
  EXPECT_TRUE(compile(source(valid_mil(), big_size), lenient).ok());
}

TEST(SimErrors, LimitsFailTheCompile) {
  SimulatorOptions o;
  o.max_conv_in_channels = 32;
  expect_error(compile(source(valid_mil()), o), StatusCode::kCompileFailed,
               "conv input channels 64 exceed the limit 32");
  o = SimulatorOptions{};
  o.max_channels = 4;
  expect_error(compile(source(valid_mil()), o), StatusCode::kCompileFailed, "over the limit 4");
  o = SimulatorOptions{};
  o.max_program_weight_bytes = 100;
  expect_error(compile(source(valid_mil()), o), StatusCode::kCompileFailed,
               "1024 bytes of weights");
}

TEST(SimErrors, EvaluationChecksSurfaces) {
  RuntimeOptions ro;
  auto rt = make_simulator(ro);
  std::unique_ptr<Program> p;
  ASSERT_TRUE(rt->compile(source(valid_mil()), &p).ok());
  std::vector<std::uint8_t> in(49152), out(49152), tiny(4096);
  std::vector<std::span<const std::uint8_t>> ins{in};
  std::vector<std::span<std::uint8_t>> outs{out};
  EXPECT_TRUE(p->evaluate(ins, outs).ok());
  std::vector<std::span<const std::uint8_t>> small_in{tiny};
  expect_error(p->evaluate(small_in, outs), StatusCode::kEvalFailed, "status=0x1d: input 'x'");
  expect_error(p->evaluate(ins, outs, 1), StatusCode::kEvalFailed, "status=0x2: procedure index 1");
  std::vector<std::span<std::uint8_t>> alias{std::span<std::uint8_t>(in)};
  expect_error(p->evaluate(ins, alias), StatusCode::kEvalFailed, "aliases an input");
  ASSERT_TRUE(p->release().ok());
  EXPECT_EQ(p->evaluate(ins, outs).code(), StatusCode::kReleased);
  // With the minimum off, a 4 KiB surface is enough for [1, 64, 1, 32] fp16 (M5 evidence).
  SimulatorOptions o;
  o.min_surface_bytes = 0;
  ro.sim = o;
  auto rt2 = make_simulator(ro);
  ASSERT_TRUE(rt2->compile(source(valid_mil()), &p).ok());
  std::vector<std::uint8_t> out_small(4096);
  std::vector<std::span<std::uint8_t>> outs_small{out_small};
  EXPECT_TRUE(p->evaluate(small_in, outs_small).ok());
}

TEST(SimErrors, MultiInputBindingAndEqualAllocation) {
  const std::string mil =
      kHead +
      "    func main<ios18>(tensor<fp16, [1, 4, 1, 32]> b_in, tensor<fp16, [1, 4, 1, 32]> a_in) {\n"
      "        tensor<fp16, [1, 4, 1, 32]> y = sub(x = b_in, y = a_in)[name = string(\"s\")];\n"
      "    } -> (y);\n}\n";
  ProgramSource src{"multi", mil, {}};
  for (const auto order : {BindingOrder::kSorted, BindingOrder::kDeclaration}) {
    RuntimeOptions ro;
    ro.sim.binding_order = order;
    auto rt = make_simulator(ro);
    std::unique_ptr<Program> p;
    ASSERT_TRUE(rt->compile(src, &p).ok());
    EXPECT_EQ(p->inputs()[0].name, order == BindingOrder::kSorted ? "a_in" : "b_in");
    const auto l = SurfaceLayout::channel_major(4, 32);
    std::vector<std::uint8_t> s0(49152), s1(49152), out(49152);
    ASSERT_TRUE(write_surface(std::vector<float>(128, 1.0f), l, s0).ok());
    ASSERT_TRUE(write_surface(std::vector<float>(128, 5.0f), l, s1).ok());
    std::vector<std::span<const std::uint8_t>> ins{s0, s1};
    std::vector<std::span<std::uint8_t>> outs{out};
    ASSERT_TRUE(p->evaluate(ins, outs).ok());
    std::vector<float> y(128);
    ASSERT_TRUE(read_surface(out, l, y).ok());
    // sorted: surface 0 -> a_in = 1, surface 1 -> b_in = 5: y = 4; declaration order: y = -4.
    EXPECT_EQ(y[0], order == BindingOrder::kSorted ? 4.0f : -4.0f);
    std::vector<std::uint8_t> bigger(65536);
    std::vector<std::span<const std::uint8_t>> uneven{s0, bigger};
    expect_error(p->evaluate(uneven, outs), StatusCode::kEvalFailed, "same allocation size");
  }
}

TEST(SimErrors, ParserIsWhitespaceInsensitive) {
  // MX stories_mil.h style: no spaces around '=' or in dims (§2.2).
  const std::string mil =
      kHead +
      "    func main<ios18>(tensor<fp16,[1,4,1,32]> x){\n"
      "            tensor<fp16,[1,4,1,32]> y=sigmoid(x=x)[name=string(\"sg\")];\n"
      "        }->(y);\n}\n";
  EXPECT_TRUE(compile(ProgramSource{"ws", mil, {}}).ok());
}

TEST(SimErrors, MultiFunctionProgramsDispatchByProcedureIndex) {
  // Two functions with distinct names (§2.7); procedure p runs function p.
  const std::string mil =
      kHead +
      "    func layer0<ios18>(tensor<fp16, [1, 4, 1, 32]> x0) {\n"
      "        fp16 k0 = const()[name = string(\"k0\"), val = fp16(2.0)];\n"
      "        tensor<fp16, [1, 4, 1, 32]> y0 = mul(x = x0, y = k0)[name = string(\"m0\")];\n"
      "    } -> (y0);\n\n"
      "    func layer1<ios18>(tensor<fp16, [1, 4, 1, 32]> x1) {\n"
      "        fp16 k1 = const()[name = string(\"k1\"), val = fp16(3.0)];\n"
      "        tensor<fp16, [1, 4, 1, 32]> y1 = mul(x = x1, y = k1)[name = string(\"m1\")];\n"
      "    } -> (y1);\n}\n";
  RuntimeOptions ro;
  auto rt = make_simulator(ro);
  std::unique_ptr<Program> p;
  ASSERT_TRUE(rt->compile(ProgramSource{"multi", mil, {}}, &p).ok());
  ASSERT_EQ(p->procedure_count(), 2);
  EXPECT_EQ(rt->stats().compiles, 1);  // one compile for both procedures (§1.7)
  EXPECT_EQ(p->inputs(1)[0].name, "x1");
  const auto l = SurfaceLayout::channel_major(4, 32);
  std::vector<std::uint8_t> in(49152), out(49152);
  ASSERT_TRUE(write_surface(std::vector<float>(128, 1.5f), l, in).ok());
  std::vector<std::span<const std::uint8_t>> ins{in};
  std::vector<std::span<std::uint8_t>> outs{out};
  std::vector<float> y(128);
  for (int proc : {0, 1}) {
    ASSERT_TRUE(p->evaluate(ins, outs, proc).ok());
    ASSERT_TRUE(read_surface(out, l, y).ok());
    EXPECT_EQ(y[0], proc == 0 ? 3.0f : 4.5f);
  }
  expect_error(p->evaluate(ins, outs, 2), StatusCode::kEvalFailed, "status=0x2");
}

TEST(SimErrors, CompileBudgetRefusesPastTheLimitAndNeverRefunds) {
  RuntimeOptions ro;
  ro.sim.compile_budget = 3;
  auto rt = make_simulator(ro);
  std::vector<std::unique_ptr<Program>> progs(5);
  ASSERT_TRUE(rt->compile(source(valid_mil()), &progs[0]).ok());
  EXPECT_FALSE(
      rt->compile(source(replace(valid_mil(), "main<ios18>", "main<ios16>")), &progs[1]).ok());
  EXPECT_EQ(rt->stats().compiles, 1);  // failed compiles do not count
  ASSERT_TRUE(rt->compile(source(valid_mil()), &progs[1]).ok());
  ASSERT_TRUE(rt->compile(source(valid_mil()), &progs[2]).ok());
  ASSERT_TRUE(progs[0]->release().ok());  // unloading refunds nothing (§1.10)
  progs[0].reset();
  const Status s = rt->compile(source(valid_mil()), &progs[3]);
  expect_error(s, StatusCode::kBudgetExhausted, "budget of 3 compiles is spent");
  EXPECT_EQ(rt->stats().compiles, 3);
  EXPECT_EQ(rt->stats().live_programs, 2);
}

// The live-program cap is on by default at 60 (issue 15: the harsher reading of "~55 live
// models"): the 61st load fails without spending a compile, and a release frees its slot.
TEST(SimErrors, LiveProgramCapRefusesTheLoadPastIt) {
  RuntimeOptions ro;
  EXPECT_EQ(ro.sim.max_live_programs, 60);
  auto rt = make_simulator(ro);
  std::vector<std::unique_ptr<Program>> progs(61);
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(rt->compile(source(valid_mil()), &progs[i]).ok()) << i;
  EXPECT_EQ(rt->stats().live_programs, 60);
  expect_error(rt->compile(source(valid_mil()), &progs[60]), StatusCode::kCompileFailed,
               "60 programs are loaded and at most 60 may be live at once");
  EXPECT_EQ(progs[60], nullptr);
  EXPECT_EQ(rt->stats().compiles, 60);  // the refusal spent no compile
  ASSERT_TRUE(progs[7]->release().ok());
  EXPECT_EQ(rt->stats().live_programs, 59);
  EXPECT_TRUE(rt->compile(source(valid_mil()), &progs[60]).ok());
  EXPECT_EQ(rt->stats().live_programs, 60);

  ro.sim.max_live_programs = 0;  // off
  auto unlimited = make_simulator(ro);
  std::vector<std::unique_ptr<Program>> many(70);
  for (auto& p : many) ASSERT_TRUE(unlimited->compile(source(valid_mil()), &p).ok());
  EXPECT_EQ(unlimited->stats().live_programs, 70);
}

TEST(SimErrors, CacheHitOnSecondCompileOfAnIdenticalProgram) {
  const auto dir = anelm::testing::make_temp_dir("ane-cache");
  RuntimeOptions ro;
  ro.cache_dir = dir;
  const ProgramSource src = source(valid_mil());
  {
    auto rt = make_simulator(ro);
    std::unique_ptr<Program> p;
    ASSERT_TRUE(rt->compile(src, &p).ok());
    EXPECT_FALSE(p->from_cache());
    EXPECT_EQ(rt->stats().cache_misses, 1);
    EXPECT_EQ(rt->stats().compiles, 1);
    // Same process, same program again: served from the cache, no compile counted.
    std::unique_ptr<Program> again;
    ASSERT_TRUE(rt->compile(src, &again).ok());
    EXPECT_TRUE(again->from_cache());
    EXPECT_EQ(rt->stats().cache_hits, 1);
    EXPECT_EQ(rt->stats().compiles, 1);
    EXPECT_EQ(again->identifier(), p->identifier());
  }
  // "Restart": a new process whose budget is already zero still loads the cached program (§1.13).
  ro.sim.compile_budget = 0;
  auto rt = make_simulator(ro);
  std::unique_ptr<Program> p;
  ASSERT_TRUE(rt->compile(src, &p).ok());
  EXPECT_TRUE(p->from_cache());
  EXPECT_EQ(rt->stats().compiles, 0);
  EXPECT_EQ(rt->stats().cache_hits, 1);
  std::vector<std::uint8_t> in(49152), out(49152);
  std::vector<std::span<const std::uint8_t>> ins{in};
  std::vector<std::span<std::uint8_t>> outs{out};
  EXPECT_TRUE(p->evaluate(ins, outs).ok());
  // A different weight byte is a different key: a miss that needs (and here lacks) budget.
  auto other = weight_blob();
  other[200] ^= 1;
  expect_error(rt->compile(source(valid_mil(), other), &p), StatusCode::kBudgetExhausted,
               "budget of 0");
  EXPECT_EQ(rt->stats().cache_misses, 1);
  // A corrupted entry is detected (hash check), removed, and recompiled.
  const std::uint64_t key = program_key(src, sim::kSimulatorRuntimeId);
  {
    std::vector<std::uint8_t> bytes;
    ASSERT_TRUE(read_file_bytes(dir / key_hex(key) / "weights" / "weight.bin", &bytes).ok());
    bytes[300] ^= 0xff;
    ASSERT_TRUE(write_file_bytes(dir / key_hex(key) / "weights" / "weight.bin", bytes).ok());
  }
  ro.sim.compile_budget = 5;
  auto rt3 = make_simulator(ro);
  ASSERT_TRUE(rt3->compile(src, &p).ok());
  EXPECT_FALSE(p->from_cache());
  EXPECT_EQ(rt3->stats().compiles, 1);
  std::filesystem::remove_all(dir);
}

TEST(SimErrors, FactoryFallsBackToTheSimulatorOffApple) {
  std::unique_ptr<Runtime> rt;
  std::string why;
  RuntimeOptions ro;
  ASSERT_TRUE(make_runtime(ro, &rt, &why).ok());
  if (!ane_runtime_compiled_in()) {
    EXPECT_EQ(rt->kind(), "simulator");
    EXPECT_FALSE(why.empty());
    ro.backend = Backend::kAne;
    EXPECT_EQ(make_runtime(ro, &rt).code(), StatusCode::kUnavailable);
  }
}

}  // namespace
}  // namespace anelm::ane
