// Export tests: program directories + manifest.json as `anelm compile --out DIR` will write them.
#include "ane_bridge/program_export.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ane_bridge/program_cache.h"
#include "tests/ane_bridge/ane_test_util.h"
#include "tests/support/shared_data.h"

namespace anelm::ane {
namespace {

using testing::seeded_values;

TEST(ProgramExport, WritesDirectoriesAndAManifestThatRoundTrip) {
  const LayerShapes s{64, 2, 1, 32, 128, 1e-6};
  const auto g = seeded_values(64, 1), wq = seeded_values(64 * 64, 2, 0.1f),
             wk = seeded_values(32 * 64, 3, 0.1f), wv = seeded_values(32 * 64, 4, 0.1f);
  BlockOptions o;
  o.name = block_name("attn_in", 3, 64);
  o.seq_len = 64;
  o.format = WeightFormat::kInt8;
  BlockProgram b;
  ASSERT_TRUE(build_attn_input_block(s, {g, {wq, {}}, {wk, {}}, {wv, {}}}, o, &b).ok());
  b.layer = 3;
  const auto dir = anelm::testing::make_temp_dir("ane-export");
  ASSERT_TRUE(write_program_dir(dir, b.source).ok());
  ASSERT_TRUE(write_manifest(dir, {manifest_entry(b)}, "tiny").ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "L03_attn_in_s64" / "model.mil"));
  EXPECT_TRUE(std::filesystem::exists(dir / "L03_attn_in_s64" / "weights" / "wqkv.bin"));
  EXPECT_TRUE(std::filesystem::exists(dir / "L03_attn_in_s64" / "weights" / "wqkv_scale.bin"));

  std::ifstream mf(dir / "manifest.json");
  const auto j = nlohmann::json::parse(mf);
  EXPECT_EQ(j["format"], "anelm-ane-programs");
  EXPECT_EQ(j["model"], "tiny");
  ASSERT_EQ(j["programs"].size(), 1u);
  const auto& p = j["programs"][0];
  EXPECT_EQ(p["name"], "L03_attn_in_s64");
  EXPECT_EQ(p["kind"], "attn_in");
  EXPECT_EQ(p["layer"], 3);
  EXPECT_EQ(p["weight_format"], "int8");
  EXPECT_EQ(p["weight_bytes"], b.weight_bytes);
  EXPECT_EQ(p["s_buckets"], nlohmann::json::array({64}));
  EXPECT_EQ(p["inputs"][0]["shape"], nlohmann::json::array({1, 64, 1, 64}));
  EXPECT_EQ(p["outputs"][0]["shape"], nlohmann::json::array({1, 128, 1, 64}));
  EXPECT_EQ(p["outputs"][0]["segments"][1]["name"], "k");
  EXPECT_EQ(p["outputs"][0]["segments"][1]["channel_offset"], 64);

  // Reading the directory back gives the same program (same cache key), which still compiles.
  ProgramSource back;
  ASSERT_TRUE(read_program_dir(dir / "L03_attn_in_s64", &back).ok());
  EXPECT_EQ(back.mil_text, b.source.mil_text);
  ProgramSource sorted = b.source;
  std::sort(sorted.weights.begin(), sorted.weights.end(),
            [](auto& x, auto& y) { return x.path < y.path; });
  EXPECT_EQ(program_key(back, "k"), program_key(sorted, "k"));
  RuntimeOptions ro;
  std::unique_ptr<Program> prog;
  EXPECT_TRUE(make_simulator(ro)->compile(back, &prog).ok());
  std::filesystem::remove_all(dir);
}

TEST(ProgramExport, WritesAWholeModelAndRejectsDuplicateNames) {
  const LayerShapes s{64, 2, 1, 32, 128, 1e-6};
  const auto g = seeded_values(64, 1), wq = seeded_values(64 * 64, 2, 0.1f),
             wk = seeded_values(32 * 64, 3, 0.1f), wv = seeded_values(32 * 64, 4, 0.1f);
  std::vector<BlockProgram> blocks(2);
  for (int layer = 0; layer < 2; ++layer) {
    BlockOptions o;
    o.name = block_name("attn_in", layer, 32);
    ASSERT_TRUE(
        build_attn_input_block(s, {g, {wq, {}}, {wk, {}}, {wv, {}}}, o, &blocks[layer]).ok());
    blocks[layer].layer = layer;
  }
  const auto dir = anelm::testing::make_temp_dir("ane-export-all");
  ASSERT_TRUE(write_programs(dir, blocks, "tiny").ok());
  std::ifstream mf(dir / "manifest.json");
  const auto j = nlohmann::json::parse(mf);
  ASSERT_EQ(j["programs"].size(), 2u);
  EXPECT_EQ(j["programs"][1]["name"], "L01_attn_in_s32");
  blocks[1].source.name = blocks[0].source.name;
  EXPECT_EQ(write_programs(dir, blocks, "tiny").code(), StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST(ProgramExport, RejectsUnsafeNamesAndPaths) {
  ProgramSource bad{"../x", "", {}};
  EXPECT_FALSE(write_program_dir("/tmp", bad).ok());
  ProgramSource bad_path{"ok", "", {{"/etc/passwd", {}}}};
  EXPECT_FALSE(write_program_dir(anelm::testing::make_temp_dir("ane-bad"), bad_path).ok());
  EXPECT_EQ(weight_relative_path("@model_path/weights/../../x.bin"), "");
  EXPECT_EQ(weight_relative_path("@model_path/weights/w.bin"), "weights/w.bin");
}

TEST(ProgramExport, ManifestEscapesStrings) {
  ManifestEntry e;
  e.name = "a\"b\\c";
  const auto j = nlohmann::json::parse(manifest_entry_json(e));
  EXPECT_EQ(j["name"], "a\"b\\c");
}

}  // namespace
}  // namespace anelm::ane
