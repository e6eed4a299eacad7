// Gemma 3's sliding-window layers keep a ring of window + max_batch - 1 positions per sequence
// (KvCache), not a cache of the whole context: llama.cpp's ids and logits on the tiny file (window
// 64) with rings that wrap many times, the memory it saves, and the prompt cache across the window
// (a prefix is continued only while the ring still holds the window before its end).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "engine/error.h"
#include "engine/kv_cache.h"
#include "tests/engine/family_parity.h"

namespace anelm::engine {
namespace {

const nlohmann::json& fixture() {
  static const nlohmann::json fx = load_family_fixture("gemma3_tiny_llamacpp.json");
  return fx;
}

std::string tiny() { return made_tiny(Arch::kGemma3, DType::kF32, fixture()["seed"].get<uint64_t>()); }
std::vector<int> want(const char* prompt) { return fixture()["generated"]["f32"][prompt].get<std::vector<int>>(); }

std::unique_ptr<Engine> load(int ctx, int max_batch, int64_t prompt_cache_bytes = 0) {
  EngineOptions eo;
  eo.model_path = tiny();
  eo.threads = 2;
  eo.ctx = ctx;
  eo.max_batch = max_batch;
  eo.prompt_cache_bytes = prompt_cache_bytes;
  return Engine::load(eo);
}

GenerateResult run(Engine& eng, const std::vector<int>& prompt, int n) {
  GenerateRequest req;
  req.prompt = prompt;
  req.max_tokens = n;
  req.sampling.temperature = 0;
  req.ignore_eos = true;
  return eng.generate(req, {});
}

// Passes of 16 tokens: rings of 64 + 15 = 79 positions, which the 732-token 'long' prompt wraps 9
// times; prefill and decode give llama.cpp's ids and logits.
TEST(Gemma3Ring, SmallRingsGiveLlamaCppsIdsAndLogits) {
  auto eng = load(1024, 16);
  expect_f32_equal(*eng, fixture(), 4e-3f);
}

// The same passes over a ring and over a full cache read the same positions: the logits are
// bitwise equal (ctx 1024 holds the 575-position rings of max_batch 512 twice over, ctx 1100 does not).
TEST(Gemma3Ring, RingAndFullCacheAreBitwiseEqual) {
  auto full = load(1100, 512), ring = load(4096, 512);
  std::vector<int> seq = fixture_prompt(fixture(), "long");
  const auto gen = want("long");
  seq.insert(seq.end(), gen.begin(), gen.end() - 1);
  const auto a = full->forward(seq, 0, /*all_logits=*/true);
  const std::vector<float> fl(a.begin(), a.end());
  const auto b = ring->forward(seq, 0, /*all_logits=*/true);
  ASSERT_EQ(fl.size(), b.size());
  EXPECT_EQ(std::memcmp(fl.data(), b.data(), fl.size() * sizeof(float)), 0);
}

// /health's kv_bytes: the global layer keeps ctx positions, each of the 6 local ones 2 x 79 rows.
TEST(Gemma3Ring, LocalLayersTakeRingMemoryNotTheContext) {
  auto eng = load(8192, 16);
  const ModelConfig& c = eng->config();
  ASSERT_EQ(c.n_layers, 7);
  const int64_t row = int64_t{2} * c.head_dim * c.n_kv_heads * 2;  // f16, K and V
  EXPECT_EQ(eng->stats().kv_bytes, (8192 + 6 * 2 * 79) * row);
  EXPECT_EQ(kv_ring_positions(c, 0, 8192, 16), 79);
  EXPECT_EQ(kv_ring_positions(c, 5, 8192, 16), 0) << "the global layer";
}

// The prompt cache and the slot's own rows continue a prefix only while the rings still hold the
// window before its end (at most 16 tokens back here); otherwise the prompt is prefilled again. Every
// answer is llama.cpp's.
TEST(Gemma3Ring, CachedPrefixesContinueOnlyWhileTheRingHoldsTheirWindow) {
  auto eng = load(1024, 16, 64 << 20);
  const auto prompt = fixture_prompt(fixture(), "long");
  const auto gen = want("long");
  const int n_gen = static_cast<int>(gen.size());
  GenerateResult r = run(*eng, prompt, n_gen);
  EXPECT_EQ(r.ids, gen);
  // The slot holds prompt + gen[0, n - 1): continuing it from its end reuses all of it.
  std::vector<int> longer = prompt;
  longer.insert(longer.end(), gen.begin(), gen.end() - 1);
  r = run(*eng, longer, 1);
  EXPECT_EQ(r.cached_tokens, static_cast<int>(longer.size()) - 1);
  EXPECT_EQ(r.ids.front(), gen.back());
  // 31 tokens before the slot's end: its rings have moved past that window; prefilled again.
  r = run(*eng, prompt, n_gen);
  EXPECT_EQ(r.cached_tokens, 0);
  EXPECT_EQ(r.ids, gen);
  // From the prompt cache after another prompt used the slot: an entry of prompt + gen serves a
  // continuation from its end, not the bare prompt.
  run(*eng, fixture_prompt(fixture(), "short"), 4);
  r = run(*eng, longer, 1);
  EXPECT_EQ(r.cached_tokens, static_cast<int>(longer.size()) - 1);
  EXPECT_EQ(r.ids.front(), gen.back());
  EXPECT_GE(eng->stats().prompt_cache_hits, 1);
  const auto other = fixture_prompt(fixture(), "short");
  run(*eng, other, 4);
  r = run(*eng, prompt, n_gen);
  const auto shared = std::mismatch(other.begin(), other.end(), prompt.begin(), prompt.end()).first - other.begin();
  EXPECT_EQ(r.cached_tokens, shared) << "only what the other prompt shares (its BOS)";
  EXPECT_EQ(r.ids, gen);
  // forward() refuses a start the rings cannot continue from, and takes one they can.
  const std::vector<int> next = {gen.back()};
  eng->forward(longer, 0, false);
  EXPECT_THROW(eng->forward(next, static_cast<int>(prompt.size()), false), Error);
  EXPECT_NO_THROW(eng->forward(next, static_cast<int>(longer.size()), false));
}

}  // namespace
}  // namespace anelm::engine
