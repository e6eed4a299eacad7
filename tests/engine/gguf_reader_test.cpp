// GGUF reader: every malformed-file path throws anelm::Error naming file and field; real files parse.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "engine/error.h"
#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "tests/engine/loader_fixtures.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;
using anelm::testing::make_temp_dir;
using namespace anelm::testing::loader;

// Opens `bytes` as a GGUF and returns the error, failing the test when none is thrown.
Error open_error(const std::string& bytes, const std::string& tag = "gguf") {
  fs::path dir = make_temp_dir(tag);
  fs::path p = dir / "bad.gguf";
  write_file(p, bytes);
  try {
    GgufFile::open(p.string());
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << "message must name the file: " << e.what();
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "non-anelm exception: " << e.what();
    return Error(ErrorKind::kInternal, e.what());
  }
  ADD_FAILURE() << "no error thrown";
  return Error(ErrorKind::kInternal, "none");
}

void expect_msg(const Error& e, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' not in: " << e.what();
}

RawGguf one_tensor(uint32_t type = 0, std::vector<int64_t> ne = {32, 2}) {
  RawGguf g;
  g.kv.push_back({"general.architecture", kv_str("llama")});
  g.tensors.push_back({"w", ne, type, 0});
  g.data_bytes = 32 * 2 * 4;
  return g;
}

TEST(GgufReader, ValidRawFileOpens) {
  fs::path dir = make_temp_dir("gguf");
  write_file(dir / "ok.gguf", one_tensor().bytes());
  auto g = GgufFile::open((dir / "ok.gguf").string());
  ASSERT_EQ(g->tensors().size(), 1u);
  TensorView v = g->tensor_view(g->tensors()[0]);
  EXPECT_EQ(v.ndim, 2);
  EXPECT_EQ(v.shape[0], 2);
  EXPECT_EQ(v.shape[1], 32);
  EXPECT_EQ(v.nbytes, 256);
  EXPECT_EQ(g->get_string("general.architecture"), "llama");
}

TEST(GgufReader, BadMagic) {
  RawGguf g = one_tensor();
  g.magic = "GGUX";
  Error e = open_error(g.bytes());
  EXPECT_EQ(e.kind(), ErrorKind::kFormat);
  expect_msg(e, {"magic", "GGUX"});
}

TEST(GgufReader, Version1Rejected) {
  RawGguf g = one_tensor();
  g.version = 1;
  Error e = open_error(g.bytes());
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  expect_msg(e, {"version 1"});
}

TEST(GgufReader, FutureVersionRejected) {
  RawGguf g = one_tensor();
  g.version = 7;
  Error e = open_error(g.bytes());
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  expect_msg(e, {"version 7"});
}

TEST(GgufReader, Version2Accepted) {
  RawGguf g = one_tensor();
  g.version = 2;
  fs::path dir = make_temp_dir("gguf");
  write_file(dir / "v2.gguf", g.bytes());
  EXPECT_EQ(GgufFile::open((dir / "v2.gguf").string())->version(), 2u);
}

TEST(GgufReader, EmptyFileMissingFileAndDirectory) {
  fs::path dir = make_temp_dir("gguf");
  write_file(dir / "empty.gguf", "");
  try {
    GgufFile::open((dir / "empty.gguf").string());
    FAIL();
  } catch (const Error& e) {
    expect_msg(e, {"empty"});
  }
  try {
    GgufFile::open((dir / "nope.gguf").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
  try {
    GgufFile::open(dir.string());
    FAIL();
  } catch (const Error& e) {
    expect_msg(e, {"directory"});
  }
}

// Every strict prefix of a valid file is malformed somewhere; each must give an anelm::Error.
TEST(GgufReader, TruncatedAtEveryByte) {
  RawGguf g = one_tensor();
  g.kv.push_back({"tokenizer.ggml.tokens", kv_str_array({"a", "bb", "ccc"})});
  g.kv.push_back({"x.eps", kv_f32(1e-5f)});
  std::string full = g.bytes();
  fs::path dir = make_temp_dir("gguf-trunc");
  int errors = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    fs::path p = dir / ("t" + std::to_string(n) + ".gguf");
    write_file(p, full.substr(0, n));
    try {
      GgufFile::open(p.string());
      ADD_FAILURE() << "prefix of " << n << " bytes opened";
    } catch (const Error& e) {
      ++errors;
      if (n >= 8 && n < 300) {
        std::string m = e.what();
        EXPECT_TRUE(m.find("truncated") != std::string::npos || m.find("past the end") != std::string::npos ||
                    m.find("impossible") != std::string::npos || m.find("needs at least") != std::string::npos)
            << n << ": " << m;
      }
    }
  }
  EXPECT_EQ(errors, static_cast<int>(full.size()));
}

TEST(GgufReader, AbsurdCounts) {
  RawGguf g = one_tensor();
  g.n_tensors = 1ull << 60;
  expect_msg(open_error(g.bytes()), {"tensor count", "1152921504606846976"});
  g = one_tensor();
  g.n_kv = std::numeric_limits<uint64_t>::max();
  expect_msg(open_error(g.bytes()), {"metadata count"});
}

TEST(GgufReader, StringLengthPastEnd) {
  RawGguf g = one_tensor();
  std::string v;
  uint32_t type = 8;
  uint64_t len = 1ull << 40;
  v.append(reinterpret_cast<char*>(&type), 4).append(reinterpret_cast<char*>(&len), 8);
  g.kv.push_back({"general.name", v});
  expect_msg(open_error(g.bytes()), {"string length 1099511627776", "general.name"});
}

TEST(GgufReader, ArrayCountOverflowAndPastEnd) {
  RawGguf g = one_tensor();
  g.kv.push_back({"big", kv_array_raw(5, 1ull << 62, "")});  // 2^62 int32: count * 4 overflows
  expect_msg(open_error(g.bytes()), {"'big'", "4611686018427387904"});
  g = one_tensor();
  g.kv.push_back({"short", kv_array_raw(11, 1000, std::string(16, '\0'))});  // 1000 int64, 16 bytes given
  expect_msg(open_error(g.bytes()), {"'short'", "1000"});
  g = one_tensor();
  g.kv.push_back({"strs", kv_array_raw(8, 1ull << 61, "")});
  expect_msg(open_error(g.bytes()), {"'strs'"});
}

TEST(GgufReader, UnknownValueTypes) {
  RawGguf g = one_tensor();
  std::string v;
  uint32_t type = 13;
  v.append(reinterpret_cast<char*>(&type), 4);
  g.kv.push_back({"weird", v});
  expect_msg(open_error(g.bytes()), {"'weird'", "unknown value type 13"});
  g = one_tensor();
  g.kv.push_back({"weird_arr", kv_array_raw(42, 1, "")});
  expect_msg(open_error(g.bytes()), {"'weird_arr'", "42"});
}

TEST(GgufReader, DuplicateKeyAndTensor) {
  RawGguf g = one_tensor();
  g.kv.push_back({"general.architecture", kv_str("qwen2")});
  expect_msg(open_error(g.bytes()), {"duplicate metadata key 'general.architecture'"});
  g = one_tensor();
  g.tensors.push_back({"w", {32, 2}, 0, 256});
  g.data_bytes = 512;
  expect_msg(open_error(g.bytes()), {"duplicate tensor name 'w'"});
}

TEST(GgufReader, BadDimensions) {
  expect_msg(open_error(one_tensor(0, {32, 0}).bytes()), {"tensor 'w'", "non-positive", "= 0"});
  expect_msg(open_error(one_tensor(0, {32, -4}).bytes()), {"tensor 'w'", "-4"});
  expect_msg(open_error(one_tensor(0, {1ll << 40, 1ll << 40}).bytes()), {"tensor 'w'", "overflow"});
  // 2^62 f32 elements: 2^64 bytes wraps to 0 in uint64 (found by fuzz_gguf; must not pass as empty).
  expect_msg(open_error(one_tensor(0, {1ll << 31, 1ll << 31}).bytes()), {"tensor 'w'", "past the end"});
  expect_msg(open_error(one_tensor(0, {1, 1, 1, 1, 1}).bytes()), {"tensor 'w'", "5 dimensions"});
  // Q8_0 rows must hold whole blocks of 32.
  expect_msg(open_error(one_tensor(8, {20, 2}).bytes()), {"tensor 'w'", "q8_0", "20"});
}

TEST(GgufReader, OffsetsMisalignedOrPastEnd) {
  RawGguf g = one_tensor();
  g.tensors[0].offset = 4;
  expect_msg(open_error(g.bytes()), {"tensor 'w'", "offset 4", "aligned to 32"});
  g = one_tensor();
  g.tensors[0].offset = 1ull << 40;
  expect_msg(open_error(g.bytes()), {"tensor 'w'", "past the end"});
  g = one_tensor();
  g.data_bytes = 100;  // needs 256
  expect_msg(open_error(g.bytes()), {"tensor 'w'", "+256", "past the end"});
  g = one_tensor();
  g.tensors[0].offset = std::numeric_limits<uint64_t>::max() - 31;  // aligned, and offset + size wraps
  expect_msg(open_error(g.bytes()), {"tensor 'w'", "past the end"});
}

TEST(GgufReader, AlignmentKey) {
  RawGguf g = one_tensor();
  g.kv.push_back({"general.alignment", kv_u32(3)});
  expect_msg(open_error(g.bytes()), {"general.alignment", "3"});
  g = one_tensor();
  g.kv.push_back({"general.alignment", kv_u32(64)});
  g.alignment = 64;
  g.tensors[0].offset = 0;
  fs::path dir = make_temp_dir("gguf");
  write_file(dir / "a64.gguf", g.bytes());
  auto f = GgufFile::open((dir / "a64.gguf").string());
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  g.tensors[0].offset = 32;  // aligned to 32 but not to 64
  g.data_bytes = 512;
  expect_msg(open_error(g.bytes()), {"offset 32", "aligned to 64"});
}

TEST(GgufReader, UnknownGgmlTypeNamedAtOpen) {
  Error e = open_error(one_tensor(99).bytes());
  EXPECT_EQ(e.kind(), ErrorKind::kFormat);
  expect_msg(e, {"tensor 'w'", "unknown ggml type id 99"});
}

TEST(GgufReader, KnownButUnsupportedTypeNamedAtView) {
  RawGguf g = one_tensor(16, {256, 2});  // iq2_xxs: 66 bytes per 256
  g.data_bytes = 132;
  fs::path dir = make_temp_dir("gguf");
  write_file(dir / "iq2.gguf", g.bytes());
  auto f = GgufFile::open((dir / "iq2.gguf").string());
  try {
    f->tensor_view(f->tensors()[0]);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    expect_msg(e, {(dir / "iq2.gguf").string().c_str(), "tensor 'w'", "iq2_xxs", "id 16"});
  }
}

// The block types beyond Q8_0/Q4_0 open as their stored type with GGUF's sizes; rows that are not
// whole blocks and data past the end are named with file, tensor, type and value.
TEST(GgufReader, BlockTypesOpenAndAreChecked) {
  struct Case {
    uint32_t id;
    DType dtype;
    int64_t row, row_bytes;
    const char* name;
  };
  const Case cases[] = {{3, DType::kQ4_1, 32, 20, "q4_1"},     {6, DType::kQ5_0, 32, 22, "q5_0"},
                        {7, DType::kQ5_1, 32, 24, "q5_1"},     {20, DType::kIQ4_NL, 32, 18, "iq4_nl"},
                        {10, DType::kQ2_K, 256, 84, "q2_K"},   {11, DType::kQ3_K, 256, 110, "q3_K"},
                        {12, DType::kQ4_K, 256, 144, "q4_K"},  {13, DType::kQ5_K, 256, 176, "q5_K"},
                        {14, DType::kQ6_K, 256, 210, "q6_K"},  {23, DType::kIQ4_XS, 256, 136, "iq4_xs"}};
  fs::path dir = make_temp_dir("gguf");
  for (const Case& c : cases) {
    RawGguf g = one_tensor(c.id, {2 * c.row, 3});
    g.data_bytes = static_cast<uint64_t>(6 * c.row_bytes);
    write_file(dir / "ok.gguf", g.bytes());
    auto f = GgufFile::open((dir / "ok.gguf").string());
    TensorView v = f->tensor_view(f->tensors()[0]);
    EXPECT_EQ(v.dtype, c.dtype) << c.name;
    EXPECT_EQ(v.nbytes, 6 * c.row_bytes) << c.name;
    EXPECT_EQ(dtype_row_bytes(c.dtype, 2 * c.row), 2 * c.row_bytes) << c.name;

    RawGguf ragged = one_tensor(c.id, {c.row + 16, 3});  // a row of one block and a half
    ragged.data_bytes = static_cast<uint64_t>(6 * c.row_bytes);
    expect_msg(open_error(ragged.bytes()), {"tensor 'w'", c.name, std::to_string(c.row + 16).c_str(),
                                            std::to_string(c.row).c_str()});

    RawGguf cut = one_tensor(c.id, {2 * c.row, 3});
    cut.data_bytes = static_cast<uint64_t>(6 * c.row_bytes - 1);
    expect_msg(open_error(cut.bytes()), {"tensor 'w'", ("+" + std::to_string(6 * c.row_bytes)).c_str(), "past the end"});
  }
}

TEST(GgufReader, TypedGetterErrors) {
  RawGguf g = one_tensor();
  g.kv.push_back({"n", kv_u32(7)});
  fs::path dir = make_temp_dir("gguf");
  write_file(dir / "k.gguf", g.bytes());
  auto f = GgufFile::open((dir / "k.gguf").string());
  EXPECT_EQ(f->get_int("n"), 7);
  EXPECT_DOUBLE_EQ(f->get_float("n"), 7.0);
  try {
    f->get_string("n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFormat);
    expect_msg(e, {"'n'", "uint32", "expected string"});
  }
  try {
    f->get_int("missing.key");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    expect_msg(e, {"missing.key"});
  }
  EXPECT_FALSE(f->find_int("missing.key").has_value());
  EXPECT_THROW(f->get_string_array("n"), Error);
}

TEST(GgufWriterRoundTrip, AllTypesAndTensors) {
  fs::path dir = make_temp_dir("gguf-rt");
  GgufWriter w(64);
  w.add_u8("u8", 200);
  w.add_i8("i8", -100);
  w.add_u16("u16", 60000);
  w.add_i16("i16", -30000);
  w.add_u32("u32", 4000000000u);
  w.add_i32("i32", -2000000000);
  w.add_u64("u64", 1ull << 50);
  w.add_i64("i64", -(1ll << 50));
  w.add_f32("f32", 0.25f);
  w.add_f64("f64", 1e-300);
  w.add_bool("b", true);
  w.add_string("s", "héllo");
  w.add_string_array("sa", {"x", "", "zz"});
  w.add_i32_array("ia", {1, -2, 3});
  w.add_f32_array("fa", {0.5f, -1.5f});
  w.add_bool_array("ba", {true, false});
  std::vector<float> f32(32 * 3);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<float>(i);
  std::vector<uint16_t> f16(64, 0x3c00);
  w.add_tensor("a", DType::kF32, {3, 32});
  w.add_tensor("b", DType::kF16, {64});
  std::vector<uint8_t> q8(34 * 2, 7);
  w.add_tensor("c", DType::kQ8_0, {2, 32});
  std::vector<uint8_t> q4(18 * 3, 0x5a);
  w.add_tensor("d", DType::kQ4_0, {96});
  w.add_tensor("e", DType::kBF16, {2, 2, 2});
  std::vector<uint16_t> bf(8, f32_to_bf16(1.5f));
  w.begin((dir / "rt.gguf").string());
  w.write_data(f32.data(), 100);  // in pieces
  w.write_data(reinterpret_cast<uint8_t*>(f32.data()) + 100, f32.size() * 4 - 100);
  w.write_data(f16.data(), f16.size() * 2);
  w.write_data(q8.data(), q8.size());
  w.write_data(q4.data(), q4.size());
  w.write_data(bf.data(), bf.size() * 2);
  w.finish();

  auto g = GgufFile::open((dir / "rt.gguf").string());
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->alignment(), 64u);
  EXPECT_EQ(g->get_int("u8"), 200);
  EXPECT_EQ(g->get_int("i8"), -100);
  EXPECT_EQ(g->get_int("u16"), 60000);
  EXPECT_EQ(g->get_int("i16"), -30000);
  EXPECT_EQ(g->get_int("u32"), 4000000000ll);
  EXPECT_EQ(g->get_int("i32"), -2000000000);
  EXPECT_EQ(g->get_int("u64"), 1ll << 50);
  EXPECT_EQ(g->get_int("i64"), -(1ll << 50));
  EXPECT_FLOAT_EQ(g->get_float("f32"), 0.25);
  EXPECT_DOUBLE_EQ(g->get_float("f64"), 1e-300);
  EXPECT_TRUE(g->get_bool("b"));
  EXPECT_EQ(g->get_string("s"), "héllo");
  EXPECT_EQ(g->get_string_array("sa"), (std::vector<std::string>{"x", "", "zz"}));
  EXPECT_EQ(g->get_int_array("ia"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(g->get_float_array("fa"), (std::vector<double>{0.5, -1.5}));
  EXPECT_EQ(g->get_int_array("ba"), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(g->type_of("sa"), GgufType::kArray);
  EXPECT_EQ(g->array_type_of("sa"), GgufType::kString);
  EXPECT_EQ(g->array_size("ia"), 3u);

  ASSERT_EQ(g->tensors().size(), 5u);
  TensorView d = g->tensor_view(*g->find_tensor("d"));
  EXPECT_EQ(d.dtype, DType::kQ4_0);
  EXPECT_EQ(d.ndim, 1);
  EXPECT_EQ(d.nbytes, 54);
  EXPECT_EQ(std::memcmp(d.data, q4.data(), 54), 0);
  TensorView e = g->tensor_view(*g->find_tensor("e"));
  EXPECT_EQ(e.dtype, DType::kBF16);
  EXPECT_EQ(e.ndim, 3);
  EXPECT_EQ(e.numel(), 8);
  EXPECT_EQ(bf16_to_f32(static_cast<const uint16_t*>(e.data)[7]), 1.5f);
  EXPECT_EQ(ggml_type_nbytes(8, 64), 68);
  EXPECT_EQ(ggml_type_nbytes(12, 512), 288);
  EXPECT_EQ(ggml_type_nbytes(4, 32), -1);  // removed id
  EXPECT_STREQ(ggml_type_name(14), "q6_K");
  TensorView a = g->tensor_view(*g->find_tensor("a"));
  EXPECT_EQ(a.dtype, DType::kF32);
  EXPECT_EQ(a.rows(), 3);
  EXPECT_EQ(a.cols(), 32);
  EXPECT_EQ(std::memcmp(a.data, f32.data(), f32.size() * 4), 0);
  TensorView b = g->tensor_view(*g->find_tensor("b"));
  EXPECT_EQ(b.ndim, 1);
  EXPECT_EQ(b.dtype, DType::kF16);
  EXPECT_EQ(std::memcmp(b.data, f16.data(), 128), 0);
  TensorView c = g->tensor_view(*g->find_tensor("c"));
  EXPECT_EQ(c.dtype, DType::kQ8_0);
  EXPECT_EQ(c.nbytes, 68);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.data) % 64, reinterpret_cast<uintptr_t>(a.data) % 64);

  // Copying keys verbatim through raw_value reproduces them exactly.
  GgufWriter w2;
  for (const std::string& k : g->keys()) w2.copy_key(*g, k);
  w2.begin((dir / "copy.gguf").string());
  w2.finish();
  auto g2 = GgufFile::open((dir / "copy.gguf").string());
  for (const std::string& k : g->keys()) EXPECT_EQ(g2->raw_value(k), g->raw_value(k)) << k;
}

TEST(GgufWriterRoundTrip, WriterRejectsMisuse) {
  fs::path dir = make_temp_dir("gguf-rt");
  GgufWriter w;
  w.add_u32("k", 1);
  EXPECT_THROW(w.add_u32("k", 2), Error);
  w.add_tensor("t", DType::kF32, {4});
  EXPECT_THROW(w.add_tensor("t", DType::kF32, {4}), Error);
  EXPECT_THROW(w.add_tensor("q", DType::kQ8_0, {2, 20}), Error);
  w.begin((dir / "m.gguf").string());
  float x[2] = {1, 2};
  w.write_data(x, sizeof(x));
  EXPECT_THROW(w.finish(), Error);  // 8 of 16 bytes
}

TEST(GgufRealFiles, Stories260K) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  auto g = GgufFile::open(path.string());
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->tensors().size(), 48u);
  EXPECT_EQ(g->get_string("general.architecture"), "llama");
  EXPECT_EQ(g->get_int("llama.block_count"), 5);
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens").size(), 512u);
  EXPECT_EQ(g->get_float_array("tokenizer.ggml.scores").size(), 512u);
  TensorView e = g->tensor_view(*g->find_tensor("token_embd.weight"));
  EXPECT_EQ(e.shape[0], 512);
  EXPECT_EQ(e.shape[1], 64);
  EXPECT_EQ(e.dtype, DType::kF32);
}

TEST(GgufRealFiles, LlamaTinyRandomAndQwenVocab) {
  ANELM_REQUIRE_SHARED_MODEL(path, "llama-2-tiny-random.gguf");
  auto g = GgufFile::open(path.string());
  EXPECT_EQ(g->tensors().size(), 12u);
  EXPECT_EQ(g->tensor_view(*g->find_tensor("blk.0.attn_q.weight")).dtype, DType::kF16);
  EXPECT_EQ(g->tensor_view(*g->find_tensor("output_norm.weight")).dtype, DType::kF32);
  ANELM_REQUIRE_SHARED_MODEL(vocab, "ggml-vocab-qwen2.gguf");
  auto v = GgufFile::open(vocab.string());
  EXPECT_EQ(v->tensors().size(), 0u);
  EXPECT_EQ(v->array_size("tokenizer.ggml.tokens"), 151936u);
  EXPECT_EQ(v->array_size("tokenizer.ggml.merges"), 151387u);
  EXPECT_EQ(v->get_string("tokenizer.ggml.pre"), "qwen2");
}

}  // namespace
}  // namespace anelm::engine
