// Granite 3.x (llama.cpp arch granite: embedding, residual, attention and logit multipliers): a
// random tiny file from `anelm make-model --arch granite` gives llama.cpp's greedy ids (recorded
// fixture: tests/data/engine/make_family_llamacpp_fixture.py) as f32, f16 and q8_0 (the last two up
// to llama.cpp's near ties), and its logits (divided by the logit scale); each multiplier is
// load-bearing; a file missing the required key is refused by name.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/error.h"
#include "tests/engine/family_parity.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;

const nlohmann::json& fixture() {
  static const nlohmann::json fx = load_family_fixture("granite_tiny_llamacpp.json");
  return fx;
}

std::string tiny(DType type) { return made_tiny(Arch::kGranite, type, fixture()["seed"].get<uint64_t>()); }

TEST(Granite, ReadsTheMultipliersLlamaCppReads) {
  auto eng = load_engine(tiny(DType::kF32));
  const ModelConfig& c = eng->config();
  EXPECT_EQ(c.arch, Arch::kGranite);
  EXPECT_FLOAT_EQ(c.embedding_scale, 12.0f);
  EXPECT_FLOAT_EQ(c.residual_scale, 0.22f);
  EXPECT_FLOAT_EQ(c.attention_scale, 1.0f / 64);
  EXPECT_FLOAT_EQ(c.logit_scale, 8.0f);
  EXPECT_EQ(c.rope_layout, RopeLayout::kInterleaved);
  EXPECT_TRUE(c.rope(0));
}

// f32: every id and (teacher-forced) every top logit (~1 after the / 8) equal llama.cpp's.
TEST(Granite, F32IdsAndLogitsEqualLlamaCpp) {
  auto eng = load_engine(tiny(DType::kF32));
  expect_f32_equal(*eng, fixture(), 4e-3f);
}

// f16 and q8_0 round the activations (llama.cpp's f16 matmul rounds them to f16): ids up to
// llama.cpp's near ties, teacher-forced agreement as its own with flash attention on and off.
class GraniteRounded : public ::testing::TestWithParam<DType> {};

TEST_P(GraniteRounded, MatchesLlamaCppUpToItsNearTies) {
  auto eng = load_engine(tiny(GetParam()));
  expect_rounded_parity(*eng, fixture(), dtype_name(GetParam()), eng->config().logit_scale, "granite");
}

INSTANTIATE_TEST_SUITE_P(Types, GraniteRounded, ::testing::Values(DType::kF16, DType::kQ8_0));

// The same weights with one multiplier key dropped (llama.cpp: no multiplier) compute something
// else: each of the three moves the ids away from llama.cpp's (the logit scale, which ids cannot see,
// is held by F32IdsAndLogitsEqualLlamaCpp).
TEST(Granite, EveryMultiplierIsLoadBearing) {
  const nlohmann::json& fx = fixture();
  const fs::path dir = anelm::testing::make_temp_dir("granite-drop");
  const std::string src = tiny(DType::kF32);
  const auto prompt = fixture_prompt(fx, "mid");
  const auto want = fx["generated"]["f32"]["mid"].get<std::vector<int>>();
  for (const std::string key : {"granite.embedding_scale", "granite.residual_scale", "granite.attention.scale"}) {
    const std::string out = (dir / (key + ".gguf")).string();
    copy_gguf(src, out, [&](const std::string& k) -> std::optional<std::string> {
      if (k == key) return std::nullopt;
      return k;
    });
    auto eng = load_engine(out);
    EXPECT_NE(greedy_ids(*eng, prompt, static_cast<int>(want.size())), want) << "without " << key;
  }
  // logit_scale is required (llama.cpp refuses a granite file without it): refused by name.
  const std::string out = (dir / "no-logit-scale.gguf").string();
  copy_gguf(src, out, [](const std::string& k) -> std::optional<std::string> {
    if (k == "granite.logit_scale") return std::nullopt;
    return k;
  });
  try {
    load_engine(out);
    ADD_FAILURE() << "a granite file without granite.logit_scale loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("granite.logit_scale"), std::string::npos) << e.what();
  }
}

}  // namespace

// The ANE programs implement none of this family's differences: --backend ane declines and the
// CPU serves the same ids.
TEST(Granite, AneDeclinesAndServesOnTheCpu) {
  auto eng = load_engine(tiny(DType::kF32), Backend::kAne);
  EXPECT_NE(eng->stats().backend.find("ane declined"), std::string::npos) << eng->stats().backend;
  expect_f32_equal(*eng, fixture(), 4e-3f);
}

}  // namespace anelm::engine
