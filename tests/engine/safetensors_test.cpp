// safetensors reader/writer: round trip, sharded index, and every malformed header/offset/dtype path.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/error.h"
#include "engine/json_depth.h"
#include "engine/safetensors.h"
#include "tests/engine/loader_fixtures.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;
using anelm::testing::make_temp_dir;
using namespace anelm::testing::loader;

// A safetensors file from a raw header text and `data` bytes.
std::string st_bytes(const std::string& header, size_t data, std::optional<uint64_t> len = std::nullopt) {
  std::string b;
  uint64_t n = len.value_or(header.size());
  b.append(reinterpret_cast<const char*>(&n), 8);
  b += header;
  b.append(data, '\0');
  return b;
}

Error open_error(const std::string& bytes) {
  fs::path dir = make_temp_dir("st");
  fs::path p = dir / "model.safetensors";
  write_file(p, bytes);
  try {
    SafetensorsFile::open(p.string());
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos) << e.what();
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorKind::kInternal, "none");
}

void expect_all(const Error& e, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << p << " not in: " << e.what();
}

TEST(Safetensors, WriterReaderRoundTrip) {
  fs::path dir = make_temp_dir("st");
  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  std::vector<uint16_t> b = {f32_to_f16(0.5f), f32_to_f16(-2.0f)};
  {
    SafetensorsWriter w((dir / "x.safetensors").string(),
                        {{"a", DType::kF32, {2, 3}}, {"b", DType::kF16, {2}}, {"c", DType::kBF16, {1, 1}}},
                        {{"format", "pt"}});
    w.append_data(a.data(), 8);
    w.append_data(reinterpret_cast<char*>(a.data()) + 8, 16);
    w.append_data(b.data(), 4);
    uint16_t c = f32_to_bf16(3.0f);
    w.append_data(&c, 2);
    w.finish();
  }
  auto st = SafetensorsFile::open((dir / "x.safetensors").string());
  EXPECT_EQ(st->names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(st->metadata().at("format"), "pt");
  TensorView va = st->tensor_view("a");
  EXPECT_EQ(va.dtype, DType::kF32);
  EXPECT_EQ(va.rows(), 2);
  EXPECT_EQ(va.cols(), 3);
  EXPECT_EQ(std::memcmp(va.data, a.data(), 24), 0);
  TensorView vb = st->tensor_view("b");
  EXPECT_EQ(vb.ndim, 1);
  EXPECT_EQ(f16_to_f32(static_cast<const uint16_t*>(vb.data)[1]), -2.0f);
  EXPECT_EQ(bf16_to_f32(*static_cast<const uint16_t*>(st->tensor_view("c").data)), 3.0f);
  try {
    st->tensor_view("zz");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
}

TEST(Safetensors, WriterChecksByteCounts) {
  fs::path dir = make_temp_dir("st");
  SafetensorsWriter w((dir / "x.safetensors").string(), {{"a", DType::kF32, {2}}});
  float x[3] = {1, 2, 3};
  EXPECT_THROW(w.append_data(x, 12), Error);
  w.append_data(x, 4);
  EXPECT_THROW(w.finish(), Error);
  EXPECT_THROW(SafetensorsWriter((dir / "y.safetensors").string(), {{"q", DType::kQ8_0, {32}}}), Error);
}

TEST(Safetensors, HeaderLengthSanity) {
  expect_all(open_error(std::string("\x01\x02\x03", 3)), {"too short"});
  expect_all(open_error(st_bytes("{}", 0, 1ull << 40)), {"header length 1099511627776"});
  expect_all(open_error(st_bytes("{}", 0, 500)), {"header length 500"});
  expect_all(open_error(st_bytes("{}", 0, 1)), {"header length 1"});
}

TEST(Safetensors, BadJson) {
  expect_all(open_error(st_bytes("{\"a\": [1, 2", 0)), {"invalid JSON in the header"});
  expect_all(open_error(st_bytes("[1, 2, 3]", 0)), {"not a JSON object"});
  expect_all(open_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [2]}})", 8)), {"tensor 'a'", "data_offsets"});
  expect_all(open_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8)),
             {"tensor 'a'", "bad shape"});
  expect_all(open_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", 8)),
             {"tensor 'a'", "two non-negative integers"});
}

TEST(JsonDepth, ScanSkipsStringsAndStopsEarly) {
  EXPECT_EQ(json_nesting_depth("{}"), 1);
  EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": "[[[[\"[[["}]})"), 3);
  EXPECT_EQ(json_nesting_depth("[[[]]] [[]]"), 3);
  EXPECT_EQ(json_nesting_depth("]]]][[", 64), 2);
  EXPECT_EQ(json_nesting_depth(std::string(100000, '['), 64), 65);
  EXPECT_EQ(json_nesting_depth(std::string(64, '[') + std::string(64, ']'), 64), 64);
}

// A 1 MB header whose __metadata__ nests 100k levels used to overflow the stack (SIGSEGV) in
// nlohmann::json's recursive dump.
TEST(Safetensors, DeeplyNestedHeaderIsRefused) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Error e = open_error(st_bytes(R"({"__metadata__": {"a": )" + deep + "}}", 0));
  EXPECT_EQ(e.kind(), ErrorKind::kFormat);
  expect_all(e, {"the header nests deeper than 64 levels"});
  // 64 levels are still fine.
  fs::path dir = make_temp_dir("st");
  write_file(dir / "model.safetensors",
             st_bytes(R"({"__metadata__": {"a": )" + std::string(62, '[') + std::string(62, ']') + "}}", 0));
  EXPECT_EQ(SafetensorsFile::open(dir.string())->metadata().size(), 1u);
}

TEST(Safetensors, ParseErrorsQuoteNoFileBytes) {
  Error e = open_error(st_bytes("{\"a\": secret-bytes-here}", 0));
  expect_all(e, {"invalid JSON in the header"});
  EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
}

TEST(Safetensors, BadOffsets) {
  expect_all(open_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", 8)),
             {"tensor 'a'", "[8, 0]", "inverted"});
  expect_all(open_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", 8)),
             {"tensor 'a'", "past the data section (8 bytes)"});
  expect_all(open_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8)),
             {"tensor 'a'", "8 bytes of data", "[3]", "needs 12"});
  expect_all(open_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 8]}})", 8)),
             {"tensor 'a'", "overflows"});
}

TEST(Safetensors, UnsupportedDtypeNamedAtView) {
  fs::path dir = make_temp_dir("st");
  write_file(dir / "model.safetensors",
             st_bytes(R"({"ids": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}, "w": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [16, 20]}})", 20));
  auto st = SafetensorsFile::open(dir.string());
  for (const char* name : {"ids", "w"}) {
    try {
      st->tensor_view(name);
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
      expect_all(e, {name, name == std::string("ids") ? "I64" : "F8_E4M3"});
    }
  }
}

TEST(Safetensors, ShardedIndex) {
  fs::path dir = make_temp_dir("st-shard");
  for (int s = 0; s < 2; ++s) {
    SafetensorsWriter w((dir / ("model-0000" + std::to_string(s + 1) + "-of-00002.safetensors")).string(),
                        {{"t" + std::to_string(s), DType::kF32, {2}}});
    float x[2] = {static_cast<float>(s), 7};
    w.append_data(x, 8);
    w.finish();
  }
  write_file(dir / "model.safetensors.index.json",
             R"({"metadata": {}, "weight_map": {"t0": "model-00001-of-00002.safetensors", "t1": "model-00002-of-00002.safetensors"}})");
  auto st = SafetensorsFile::open(dir.string());
  EXPECT_EQ(st->names().size(), 2u);
  EXPECT_EQ(st->files().size(), 2u);
  EXPECT_EQ(static_cast<const float*>(st->tensor_view("t1").data)[0], 1.0f);

  // The index names a tensor that its shard lacks.
  write_file(dir / "model.safetensors.index.json",
             R"({"weight_map": {"t0": "model-00001-of-00002.safetensors", "t9": "model-00002-of-00002.safetensors"}})");
  try {
    SafetensorsFile::open(dir.string());
    FAIL();
  } catch (const Error& e) {
    expect_all(e, {"'t9'", "model-00002-of-00002.safetensors"});
  }
  // The index points at a missing shard.
  write_file(dir / "model.safetensors.index.json", R"({"weight_map": {"t0": "model-00003-of-00003.safetensors"}})");
  try {
    SafetensorsFile::open(dir.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    expect_all(e, {"model-00003-of-00003.safetensors", "does not exist", "'t0'"});
  }
  write_file(dir / "model.safetensors.index.json", R"({"weight_map": 5})");
  EXPECT_THROW(SafetensorsFile::open(dir.string()), Error);
  write_file(dir / "model.safetensors.index.json", "{oops");
  try {
    SafetensorsFile::open(dir.string());
    FAIL();
  } catch (const Error& e) {
    expect_all(e, {"index.json", "invalid JSON"});
  }
}

// The index may only name shards inside the model directory: no absolute paths, no '..', no symlink
// leading out (except a HuggingFace cache snapshot's links into its repository's blobs/).
TEST(Safetensors, ShardPathsAreConfinedToTheModelDirectory) {
  fs::path root = make_temp_dir("st-confine");
  fs::path dir = root / "model";
  fs::create_directories(dir);
  auto write_shard = [](const fs::path& p) {
    SafetensorsWriter w(p.string(), {{"t0", DType::kF32, {2}}});
    float x[2] = {1, 2};
    w.append_data(x, 8);
    w.finish();
  };
  write_shard(root / "outside.safetensors");
  write_file(root / "secret.txt", "root:x:0:0:secret-line\n");
  auto index_error = [&](const std::string& shard) {
    write_file(dir / "model.safetensors.index.json", R"({"weight_map": {"t0": ")" + shard + R"("}})");
    try {
      SafetensorsFile::open(dir.string());
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find("secret-line"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("root:x"), std::string::npos) << e.what();
      return std::string(e.what());
    }
    ADD_FAILURE() << "no error for shard " << shard;
    return std::string();
  };
  EXPECT_NE(index_error((root / "secret.txt").string()).find("absolute path"), std::string::npos);
  EXPECT_NE(index_error("/etc/passwd").find("absolute path"), std::string::npos);
  EXPECT_NE(index_error("../outside.safetensors").find("'..'"), std::string::npos);
  EXPECT_NE(index_error("sub/../../secret.txt").find("'..'"), std::string::npos);
  EXPECT_NE(index_error("a\\u001b[2Jb").find("not a plain file name"), std::string::npos);
  EXPECT_NE(index_error("").find("not a plain file name"), std::string::npos);
  fs::create_symlink(root / "outside.safetensors", dir / "link.safetensors");
  EXPECT_NE(index_error("link.safetensors").find("outside the model directory"), std::string::npos);
  fs::create_symlink(root, dir / "up");
  EXPECT_NE(index_error("up/secret.txt").find("outside the model directory"), std::string::npos);

  // Inside the directory (also through a subfolder or a link that stays inside): fine.
  fs::create_directories(dir / "shards");
  write_shard(dir / "shards" / "a.safetensors");
  fs::create_symlink(dir / "shards" / "a.safetensors", dir / "inner.safetensors");
  for (const char* ok : {"shards/a.safetensors", "inner.safetensors"}) {
    write_file(dir / "model.safetensors.index.json", std::string(R"({"weight_map": {"t0": ")") + ok + R"("}})");
    EXPECT_EQ(SafetensorsFile::open(dir.string())->names().size(), 1u) << ok;
  }

  // huggingface_hub's cache: snapshots/<commit>/<file> -> ../../blobs/<hash>.
  fs::path repo = root / "models--org--name";
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "snapshots" / "abc123");
  write_shard(repo / "blobs" / "0123abcd");
  fs::create_symlink("../../blobs/0123abcd", repo / "snapshots" / "abc123" / "model-00001-of-00001.safetensors");
  write_file(repo / "snapshots" / "abc123" / "model.safetensors.index.json",
             R"({"weight_map": {"t0": "model-00001-of-00001.safetensors"}})");
  EXPECT_EQ(SafetensorsFile::open((repo / "snapshots" / "abc123").string())->names().size(), 1u);
}

TEST(Safetensors, MissingAndEmptyFiles) {
  fs::path dir = make_temp_dir("st");
  try {
    SafetensorsFile::open(dir.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
  write_file(dir / "model.safetensors", "");
  try {
    SafetensorsFile::open(dir.string());
    FAIL();
  } catch (const Error& e) {
    expect_all(e, {"empty"});
  }
}

}  // namespace
}  // namespace anelm::engine
