// SmolLM3 (llama.cpp arch smollm3: Llama with no RoPE in every 4th layer): a random tiny file from
// `anelm make-model --arch smollm3` (4 layers: the last is NoPE) gives llama.cpp's greedy ids
// (recorded fixture: tests/data/engine/make_family_llamacpp_fixture.py) as f32, f16 and q8_0 (the
// last two up to llama.cpp's near ties); the same weights run as Llama (RoPE everywhere) do not.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/engine/family_parity.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;

const nlohmann::json& fixture() {
  static const nlohmann::json fx = load_family_fixture("smollm3_tiny_llamacpp.json");
  return fx;
}

std::string tiny(DType type) { return made_tiny(Arch::kSmolLM3, type, fixture()["seed"].get<uint64_t>()); }

TEST(SmolLM3, EveryFourthLayerIsNoPE) {
  auto eng = load_engine(tiny(DType::kF32));
  const ModelConfig& c = eng->config();
  EXPECT_EQ(c.arch, Arch::kSmolLM3);
  EXPECT_EQ(c.n_layers, 4);
  EXPECT_EQ(c.nope_layers, (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(c.rope_layout, RopeLayout::kInterleaved);
  EXPECT_FLOAT_EQ(c.attn_scale(), 1.0f / 8);  // 1/sqrt(head_dim 64)
}

// f32: every id and (teacher-forced) every top logit equal llama.cpp's.
TEST(SmolLM3, F32IdsAndLogitsEqualLlamaCpp) {
  auto eng = load_engine(tiny(DType::kF32));
  expect_f32_equal(*eng, fixture(), 4e-3f);
}

// f16 and q8_0 round the activations (llama.cpp's f16 matmul rounds them to f16): ids up to
// llama.cpp's near ties, teacher-forced agreement as its own with flash attention on and off.
class SmolLM3Rounded : public ::testing::TestWithParam<DType> {};

TEST_P(SmolLM3Rounded, MatchesLlamaCppUpToItsNearTies) {
  auto eng = load_engine(tiny(GetParam()));
  expect_rounded_parity(*eng, fixture(), dtype_name(GetParam()), 1.0f, "smollm3");
}

INSTANTIATE_TEST_SUITE_P(Types, SmolLM3Rounded, ::testing::Values(DType::kF16, DType::kQ8_0));

// The same file relabelled as Llama (smollm3.* keys renamed llama.*): RoPE in every layer, and the
// ids leave llama.cpp's, on the long prompt as on the short one.
TEST(SmolLM3, TheNoPELayerIsLoadBearing) {
  const nlohmann::json& fx = fixture();
  const std::string out = (anelm::testing::make_temp_dir("smollm3-as-llama") / "as-llama.gguf").string();
  copy_gguf(tiny(DType::kF32), out, [](const std::string& k) -> std::optional<std::string> {
    return k.rfind("smollm3.", 0) == 0 ? "llama." + k.substr(8) : k;
  }, "llama");
  auto eng = load_engine(out);
  EXPECT_EQ(eng->config().arch, Arch::kLlama);
  for (const char* name : {"short", "long"}) {
    const auto want = fx["generated"]["f32"][name].get<std::vector<int>>();
    EXPECT_NE(greedy_ids(*eng, fixture_prompt(fx, name), static_cast<int>(want.size())), want) << name;
  }
}

}  // namespace

// The ANE programs implement none of this family's differences: --backend ane declines and the
// CPU serves the same ids.
TEST(SmolLM3, AneDeclinesAndServesOnTheCpu) {
  auto eng = load_engine(tiny(DType::kF32), Backend::kAne);
  EXPECT_NE(eng->stats().backend.find("ane declined"), std::string::npos) << eng->stats().backend;
  expect_f32_equal(*eng, fixture(), 4e-3f);
}

}  // namespace anelm::engine
