// Phi-3 / Phi-4-mini (llama.cpp arch phi3: fused QKV and gate/up tensors, LongRoPE factors chosen by
// the run context with an attention factor, NeoX RoPE over 48 of 64 dims in the tiny shape): a random
// tiny file from `anelm make-model --arch phi3` gives llama.cpp's greedy ids and logits (recorded
// fixture: tests/data/engine/make_family_llamacpp_fixture.py --arch phi3) at the context llama.cpp ran
// each prompt with (the 'long' prompt beyond the original context of 512: long factors; the others:
// short), as f32, f16 and q8_0 (the last two up to llama.cpp's near ties); the fused tensors are bound
// as views without a copy; each difference is load-bearing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "engine/error.h"
#include "engine/families.h"
#include "engine/model_loader.h"
#include "tests/engine/family_parity.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;

constexpr float kF32Tol = 4e-3f;

const nlohmann::json& fixture() {
  static const nlohmann::json fx = load_family_fixture("phi3_tiny_llamacpp.json");
  return fx;
}

std::string tiny(DType type) { return made_tiny(Arch::kPhi3, type, fixture()["seed"].get<uint64_t>()); }

// The tiny file's phi3.rope.scaling.original_context_length (tools/model_maker_phi3.cpp).
constexpr int kOrigCtx = 512;

// The fixture cut to the prompts llama.cpp ran with the long (or the short) factors, and the context
// it ran them with.
nlohmann::json prompts_at(bool long_factors, int& ctx) {
  nlohmann::json fx = fixture();
  ctx = 0;
  for (const auto& [name, c] : fixture()["llamacpp_ctx"].items()) {
    const bool is_long = c.get<int>() > kOrigCtx;
    if (is_long == long_factors) {
      ctx = std::max(ctx, c.get<int>());
      continue;
    }
    for (const char* t : {"f32", "f16", "q8_0"}) {
      fx["generated"][t].erase(name);
      fx[std::string("teacher_forced_") + t].erase(name);
    }
  }
  return fx;
}

// Largest |anelm - llama.cpp| of llama.cpp's teacher-forced top logit on one f32 prompt, relative
// to max(1, |logit|).
double f32_logit_distance(Engine& eng, const std::string& name) {
  const nlohmann::json& fx = fixture();
  const auto prompt = fixture_prompt(fx, name);
  const auto gen = fx["generated"]["f32"][name].get<std::vector<int>>();
  const auto top = fx["teacher_forced_f32"][name]["tf_top"].get<std::vector<int>>();
  const auto want = fx["teacher_forced_f32"][name]["top_logit"].get<std::vector<double>>();
  std::vector<int> seq = prompt;
  seq.insert(seq.end(), gen.begin(), gen.end() - 1);
  const auto logits = eng.forward(seq, 0, /*all_logits=*/true);
  const size_t vocab = logits.size() / seq.size();
  double worst = 0;
  for (size_t i = 0; i < gen.size(); ++i) {
    const float got = logits[(prompt.size() - 1 + i) * vocab + static_cast<size_t>(top[i])];
    worst = std::max(worst, std::abs(got - want[i]) / std::max(1.0, std::abs(want[i])));
  }
  return worst;
}

// expect_f32_equal with one allowance: where llama.cpp's own greedy id (decoded a token at a time)
// is not its teacher-forced top (one batch), a near tie its two paths part on (the 'mid' prompt's step
// 5: margin 0.010), free-running ids are compared up to that step; the teacher-forced top ids and
// logits on llama.cpp's path are compared at every step.
void expect_f32_matches(Engine& eng, const nlohmann::json& fx) {
  for (const auto& [name, expected] : fx.at("generated").at("f32").items()) {
    const auto gen = expected.get<std::vector<int>>();
    const nlohmann::json& tf = fx.at("teacher_forced_f32").at(name);
    const auto top = tf["tf_top"].get<std::vector<int>>();
    const auto margin = tf["margin"].get<std::vector<double>>();
    size_t agree = 0;
    while (agree < gen.size() && gen[agree] == top[agree]) ++agree;
    if (agree < gen.size()) {
      EXPECT_LT(margin[agree], 0.05) << name << ": llama.cpp's paths part at step " << agree;
    }
    const auto got = greedy_ids(eng, fixture_prompt(fx, name), static_cast<int>(gen.size()));
    EXPECT_EQ(std::vector<int>(got.begin(), got.begin() + static_cast<long>(agree)),
              std::vector<int>(gen.begin(), gen.begin() + static_cast<long>(agree)))
        << "f32 prompt '" << name << "' up to step " << agree;
    const auto prompt = fixture_prompt(fx, name);
    std::vector<int> seq = prompt;
    seq.insert(seq.end(), gen.begin(), gen.end() - 1);
    const auto logits = eng.forward(seq, 0, /*all_logits=*/true);
    const size_t vocab = logits.size() / seq.size();
    for (size_t i = 0; i < gen.size(); ++i) {
      const float* row = logits.data() + (prompt.size() - 1 + i) * vocab;
      EXPECT_EQ(std::max_element(row, row + vocab) - row, top[i]) << name << " step " << i;
    }
    const double worst = f32_logit_distance(eng, name);
    std::printf("[phi3 f32 %s] ids equal for %zu of %zu (llama.cpp's own decode and batch agree that far); max "
                "relative |anelm - llama.cpp| teacher-forced top logit %.2e\n", name.c_str(), agree, gen.size(), worst);
    EXPECT_LT(worst, kF32Tol) << name;
  }
}

TEST(Phi3, ReadsWhatLlamaCppReads) {
  auto eng = load_engine(tiny(DType::kF32), Backend::kCpu, kOrigCtx);
  const ModelConfig& c = eng->config();
  EXPECT_EQ(c.arch, Arch::kPhi3);
  EXPECT_EQ(c.rope_layout, RopeLayout::kHalf);  // LLAMA_ROPE_TYPE_NEOX
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.rope_dim, 48);  // partial_rotary_factor 0.75, as Phi-4-mini's 96 of 128
  EXPECT_EQ(c.rope_orig_ctx, kOrigCtx);
  // The converter's sqrt(1 + ln(4096 / 512) / ln(512)) = sqrt(4 / 3).
  EXPECT_NEAR(c.rope_attn_factor, std::sqrt(4.0 / 3.0), 1e-6);
  ASSERT_EQ(c.rope_factors_long.size(), 24u);
  ASSERT_EQ(c.rope_factors_short.size(), 24u);
  EXPECT_NE(c.rope_factors_long, c.rope_factors_short);
  EXPECT_FALSE(c.tie_embeddings);
}

// llama.cpp's get_rope_factors: long only for a context beyond the original one.
TEST(Phi3, ChoosesTheLongFactorsOnlyBeyondTheOriginalContext) {
  const std::string path = tiny(DType::kF32);
  auto at = load_engine(path, Backend::kCpu, kOrigCtx);
  auto beyond = load_engine(path, Backend::kCpu, kOrigCtx + 1);
  EXPECT_EQ(at->config().rope_freq_factors, at->config().rope_factors_short);
  EXPECT_EQ(beyond->config().rope_freq_factors, beyond->config().rope_factors_long);
  ModelConfig c = at->config();
  select_rope_factors(c, 1);
  EXPECT_EQ(c.rope_freq_factors, c.rope_factors_short);
  select_rope_factors(c, kOrigCtx + 1);
  EXPECT_EQ(c.rope_freq_factors, c.rope_factors_long);
  select_rope_factors(c, kOrigCtx);
  EXPECT_EQ(c.rope_freq_factors, c.rope_factors_short);
}

// attn_qkv and ffn_up are bound as row views of the mapped tensors: Q, K, V (and gate, up) are
// consecutive row ranges of one tensor, so no weight is copied.
TEST(Phi3, FusedTensorsAreViewsWithoutACopy) {
  for (DType type : {DType::kF32, DType::kQ8_0}) {
    auto m = load_model(tiny(type));
    const ModelConfig& c = m->config;
    for (const LayerWeights& L : m->weights.layers) {
      const int64_t row = dtype_row_bytes(L.wq.dtype, c.d_model);
      const auto* q = static_cast<const uint8_t*>(L.wq.data);
      EXPECT_EQ(L.wq.rows(), c.q_dim());
      EXPECT_EQ(L.wk.rows(), c.kv_dim());
      EXPECT_EQ(L.wv.rows(), c.kv_dim());
      EXPECT_EQ(L.wk.data, q + c.q_dim() * row);
      EXPECT_EQ(L.wv.data, q + (c.q_dim() + c.kv_dim()) * row);
      EXPECT_EQ(L.w_gate.rows(), c.d_ff);
      EXPECT_EQ(L.w_up.rows(), c.d_ff);
      EXPECT_EQ(L.w_up.data, static_cast<const uint8_t*>(L.w_gate.data) + c.d_ff * row);
    }
  }
}

// f32 at llama.cpp's context for each prompt: every id and teacher-forced top logit equal llama.cpp's.
TEST(Phi3, F32IdsAndLogitsEqualLlamaCppWithShortAndLongFactors) {
  for (bool long_factors : {false, true}) {
    int ctx = 0;
    const nlohmann::json fx = prompts_at(long_factors, ctx);
    ASSERT_GT(ctx, 0) << "the fixture has no prompt with the " << (long_factors ? "long" : "short") << " factors";
    SCOPED_TRACE(std::string(long_factors ? "long" : "short") + " factors, ctx " + std::to_string(ctx));
    auto eng = load_engine(tiny(DType::kF32), Backend::kCpu, ctx);
    expect_f32_matches(*eng, fx);
  }
}

class Phi3Rounded : public ::testing::TestWithParam<DType> {};

TEST_P(Phi3Rounded, MatchesLlamaCppUpToItsNearTies) {
  for (bool long_factors : {false, true}) {
    int ctx = 0;
    const nlohmann::json fx = prompts_at(long_factors, ctx);
    auto eng = load_engine(tiny(GetParam()), Backend::kCpu, ctx);
    expect_rounded_parity(*eng, fx, dtype_name(GetParam()), 1.0f, long_factors ? "phi3 long" : "phi3 short");
  }
}

INSTANTIATE_TEST_SUITE_P(Types, Phi3Rounded, ::testing::Values(DType::kF16, DType::kQ8_0));

// Each Phi-3 difference changes the logits far beyond the parity tolerance: the other factor set
// (a context on the other side of the boundary), a file without the factor tensors, one without the
// attention factor, and full instead of partial rotary.
TEST(Phi3, EveryDifferenceIsLoadBearing) {
  const std::string src = tiny(DType::kF32);
  const fs::path dir = anelm::testing::make_temp_dir("phi3-drop");
  auto baseline = load_engine(src, Backend::kCpu, kOrigCtx);
  ASSERT_LT(f32_logit_distance(*baseline, "mid"), kF32Tol);
  auto wrong_factors = load_engine(src, Backend::kCpu, kOrigCtx + 1);  // long factors on a short-context prompt
  EXPECT_GT(f32_logit_distance(*wrong_factors, "mid"), 10 * kF32Tol) << "long factors instead of short";

  auto keep = [](const std::string& k) -> std::optional<std::string> { return k; };
  auto no_factors = [](const std::string& t) { return t.rfind("rope_factors_", 0) != 0; };
  const std::string unscaled = (dir / "no-factors.gguf").string();
  copy_gguf(src, unscaled, keep, "", no_factors);
  auto eng = load_engine(unscaled, Backend::kCpu, kOrigCtx);
  EXPECT_TRUE(eng->config().rope_freq_factors.empty());
  EXPECT_GT(f32_logit_distance(*eng, "mid"), 10 * kF32Tol) << "without rope_factors_long/short";

  const std::string no_attn = (dir / "no-attn-factor.gguf").string();
  copy_gguf(src, no_attn, [](const std::string& k) -> std::optional<std::string> {
    if (k == "phi3.rope.scaling.attn_factor") return std::nullopt;
    return k;
  });
  eng = load_engine(no_attn, Backend::kCpu, kOrigCtx);
  EXPECT_FLOAT_EQ(eng->config().rope_attn_factor, 1.0f);
  EXPECT_GT(f32_logit_distance(*eng, "mid"), 10 * kF32Tol) << "without phi3.rope.scaling.attn_factor";

  // Without rope.dimension_count llama.cpp rotates all head_dim dims (and the 24 factors no longer
  // fit, so they go too): compared with the unscaled file, partial rotary alone moves the logits.
  const std::string full = (dir / "full-rotary.gguf").string();
  copy_gguf(src, full, [](const std::string& k) -> std::optional<std::string> {
    if (k == "phi3.rope.dimension_count") return std::nullopt;
    return k;
  }, "", no_factors);
  auto full_eng = load_engine(full, Backend::kCpu, kOrigCtx);
  auto partial_eng = load_engine(unscaled, Backend::kCpu, kOrigCtx);
  EXPECT_EQ(full_eng->config().rope_dim, 64);
  const auto prompt = fixture_prompt(fixture(), "mid");
  const auto a = full_eng->forward(prompt, 0, true);
  const std::vector<float> full_logits(a.begin(), a.end());
  const auto b = partial_eng->forward(prompt, 0, true);
  double worst = 0;
  for (size_t i = 0; i < full_logits.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(full_logits[i] - b[i])));
  EXPECT_GT(worst, 0.1) << "full rotary (64 dims) vs partial (48)";
}

// Bad fused tensors are refused naming the tensor and the rows expected.
TEST(Phi3, FusedTensorsOfTheWrongSizeAreRefusedByName) {
  ModelConfig c;
  c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 8, c.d_model = 32, c.d_ff = 16;
  std::vector<float> buf(64 * 32);
  auto file = [&](int64_t rows) {
    return [&buf, rows](const std::string& name) -> std::optional<TensorView> {
      if (name != "blk.0.attn_qkv.weight" && name != "blk.0.ffn_up.weight") return std::nullopt;
      TensorView v;
      v.name = name, v.dtype = DType::kF32, v.ndim = 2, v.shape = {rows, 32, 0, 0}, v.data = buf.data();
      v.nbytes = rows * 32 * 4;
      return v;
    };
  };
  const TensorLookup ok = phi3_split_fused(c, file(64));  // q 32 + 2 kv 16 = 64 rows; 2 d_ff = 32 rows
  EXPECT_EQ(ok("blk.0.attn_v.weight")->data, buf.data() + 48 * 32);
  EXPECT_EQ(ok("blk.0.attn_v.weight")->rows(), 16);
  try {
    ok("blk.0.ffn_gate.weight");  // 64 rows, not 2 * d_ff = 32
    ADD_FAILURE() << "an ffn_up of 64 rows split into gate and up";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2 * d_ff = 32"), std::string::npos) << e.what();
  }
  try {
    ok("blk.1.attn_q.weight");
    ADD_FAILURE() << "a missing fused tensor gave a view";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.1.attn_qkv.weight"), std::string::npos) << e.what();
  }
}

// A file without a layer's fused QKV is refused naming the tensor.
TEST(Phi3, AMissingFusedTensorIsNamed) {
  const fs::path dir = anelm::testing::make_temp_dir("phi3-missing");
  const std::string out = (dir / "no-qkv.gguf").string();
  copy_gguf(tiny(DType::kF32), out, [](const std::string& k) -> std::optional<std::string> { return k; }, "",
            [](const std::string& t) { return t != "blk.1.attn_qkv.weight"; });
  try {
    load_engine(out);
    ADD_FAILURE() << "a phi3 file without blk.1.attn_qkv.weight loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.1.attn_qkv.weight"), std::string::npos) << e.what();
  }
}

// The HF directory of the same weights (fused qkv_proj and gate_up_proj, LongRoPE in config.json's
// rope_scaling) reads the same config and gives llama.cpp's ids and logits at both contexts.
TEST(Phi3, HfDirectoryEqualsLlamaCpp) {
  tools::MakeModelOptions o;
  o.arch = Arch::kPhi3;
  o.shape = "tiny";
  o.dtype = DType::kF32;
  o.seed = fixture()["seed"].get<uint64_t>();
  o.format = ModelFormat::kHf;
  const fs::path dir = anelm::testing::make_temp_dir("phi3-hf");
  const std::string hf = tools::make_model(o, (dir / "phi3-tiny").string()).path;
  auto gguf = load_engine(tiny(DType::kF32), Backend::kCpu, kOrigCtx);
  for (bool long_factors : {false, true}) {
    int ctx = 0;
    const nlohmann::json fx = prompts_at(long_factors, ctx);
    auto eng = load_engine(hf, Backend::kCpu, ctx);
    const ModelConfig& c = eng->config();
    EXPECT_EQ(c.rope_dim, gguf->config().rope_dim);
    EXPECT_EQ(c.rope_orig_ctx, gguf->config().rope_orig_ctx);
    EXPECT_FLOAT_EQ(c.rope_attn_factor, gguf->config().rope_attn_factor);
    EXPECT_EQ(c.rope_factors_long, gguf->config().rope_factors_long);
    EXPECT_EQ(c.rope_factors_short, gguf->config().rope_factors_short);
    expect_f32_matches(*eng, fx);
  }
}

// --backend ane declines phi3 (engine.cpp: its fp16 logits were not within the ANE tolerance) and the
// CPU serves llama.cpp's ids.
TEST(Phi3, AneDeclinesAndServesOnTheCpu) {
  int ctx = 0;
  const nlohmann::json fx = prompts_at(true, ctx);
  auto eng = load_engine(tiny(DType::kF32), Backend::kAne, ctx);
  EXPECT_NE(eng->stats().backend.find("ane declined"), std::string::npos) << eng->stats().backend;
  expect_f32_matches(*eng, fx);
}

}  // namespace
}  // namespace anelm::engine
