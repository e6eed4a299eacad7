// Qwen3.5 (hybrid: Gated DeltaNet layers with a recurrent state, gated attention every 4th layer,
// partial RoPE): random files from the peer kit's make_random_qwen35_gguf.py give llama.cpp's greedy
// ids (recorded fixture) as f32, f16 and q8_0; chunked prefill equals token-by-token prefill; every
// sequence of a batch gives the ids it gives alone, also beside a cancelled one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/error.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;

nlohmann::json fixture() {
  std::ifstream in(fs::path(ANELM_SOURCE_DIR) / "tests/data/engine/qwen35_tiny_llamacpp.json");
  return nlohmann::json::parse(in);
}

std::vector<int> prompt_ids(const nlohmann::json& fx, const std::string& name) {
  const nlohmann::json& p = fx["prompts"][name];
  if (p.is_array()) return p.get<std::vector<int>>();
  std::vector<int> ids;
  for (int64_t i = 1; i <= p["count"].get<int64_t>(); ++i) {
    ids.push_back(static_cast<int>((i * p["mul"].get<int64_t>() + p["add"].get<int64_t>()) % p["mod"].get<int64_t>()));
  }
  return ids;
}

// The peer kit's generator writes the file (deterministic: same arguments, same bytes); one per type
// for the whole suite. Empty when shared/ or python3 is missing.
std::string tiny_model(const std::string& type) {
  static std::map<std::string, std::string> made;
  if (auto it = made.find(type); it != made.end()) return it->second;
  const auto shared = anelm::testing::shared_dir();
  if (!shared) return "";
  static const fs::path dir = anelm::testing::make_temp_dir("qwen35");
  const fs::path out = dir / ("tiny-" + type + ".gguf");
  const std::string cmd = "python3 '" + (*shared / "peers/make_random_qwen35_gguf.py").string() +
                          "' --shape tiny --type " + type + " --out '" + out.string() + "' > /dev/null";
  if (std::system(cmd.c_str()) != 0) return "";
  return made[type] = out.string();
}

std::unique_ptr<Engine> load(const std::string& path, int parallel = 1, int max_batch = 0) {
  EngineOptions eo;
  eo.model_path = path;
  eo.threads = 2;
  eo.ctx = 4096;
  eo.parallel = parallel;
  eo.max_batch = max_batch;
  return Engine::load(eo);
}

GenerateRequest greedy_request(std::vector<int> prompt, int n) {
  GenerateRequest req;
  req.prompt = std::move(prompt);
  req.max_tokens = n;
  req.sampling.temperature = 0;
  req.ignore_eos = true;
  return req;
}

#define REQUIRE_TINY(var, type)                                                              \
  const std::string var = tiny_model(type);                                                  \
  if (var.empty()) GTEST_SKIP() << "needs ../shared (peers/make_random_qwen35_gguf.py) and python3"

class Qwen35Greedy : public ::testing::TestWithParam<const char*> {};

TEST_P(Qwen35Greedy, IdsEqualLlamaCpp) {
  REQUIRE_TINY(path, GetParam());
  const nlohmann::json fx = fixture();
  auto eng = load(path);
  EXPECT_EQ(eng->config().arch, Arch::kQwen35);
  EXPECT_EQ(eng->config().n_attention_layers(), 1);
  for (const auto& [name, expected] : fx["generated"][GetParam()].items()) {
    const auto want = expected.get<std::vector<int>>();
    const auto got = eng->generate(greedy_request(prompt_ids(fx, name), static_cast<int>(want.size())), {}).ids;
    EXPECT_EQ(got, want) << GetParam() << " prompt '" << name << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Types, Qwen35Greedy, ::testing::Values("f32", "f16", "q8_0"));

// The recurrence over a prefill chunk equals the recurrence one token at a time: the logits of every
// position of a 2048-token prompt, chunks of 512 against single tokens.
TEST(Qwen35, ChunkedPrefillEqualsTokenByToken) {
  REQUIRE_TINY(path, "f32");
  std::vector<int> prompt;
  for (int i = 0; i < 2048; ++i) prompt.push_back((i * 104729 + 7) % 151000);
  auto chunked = load(path, 1, 512);
  const std::span<const float> all = chunked->forward(prompt, 0, true);
  const std::vector<float> want(all.begin(), all.end());
  auto single = load(path, 1, 1);
  const int vocab = single->config().vocab_size;
  float worst = 0;
  for (size_t t = 0; t < prompt.size(); ++t) {
    const std::span<const float> got = single->forward(std::span<const int>(&prompt[t], 1), static_cast<int>(t), false);
    for (int v = 0; v < vocab; ++v) worst = std::max(worst, std::abs(got[v] - want[t * vocab + v]));
  }
  EXPECT_LT(worst, 2e-3f) << "max |logit difference| over 2048 positions";
  // A recurrent state cannot be cut back to a shorter prefix: refused by name.
  EXPECT_THROW(single->forward(std::span<const int>(prompt.data(), 1), 5, false), Error);
}

// Sequences sharing passes (decodes beside chunked prefills) give their ids alone; a cancelled one
// leaves the others unchanged.
TEST(Qwen35, BatchedSequencesMatchTheirRunsAlone) {
  REQUIRE_TINY(path, "q8_0");
  const nlohmann::json fx = fixture();
  std::vector<GenerateRequest> reqs;
  for (const char* name : {"fox", "chat_think", "long"}) reqs.push_back(greedy_request(prompt_ids(fx, name), 24));
  std::vector<std::vector<int>> alone;
  {
    auto eng = load(path);
    for (const auto& r : reqs) alone.push_back(eng->generate(r, {}).ids);
  }
  auto eng = load(path, 4, 64);
  std::vector<std::vector<int>> got(reqs.size());
  std::vector<int> done(reqs.size() + 1, 0);
  std::atomic<bool> cancel{false};
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(eng->start(reqs[i], [&, i](const TokenStep& s) { got[i].push_back(s.id); return true; },
                           [&, i](const GenerateResult&, const Error*) { done[i] = 1; }));
  }
  GenerateRequest doomed = greedy_request(prompt_ids(fx, "long"), 24);
  doomed.cancel = &cancel;
  int doomed_tokens = 0;
  ASSERT_TRUE(eng->start(doomed, [&](const TokenStep&) { if (++doomed_tokens == 3) cancel = true; return true; },
                         [&](const GenerateResult&, const Error*) { done.back() = 1; }));
  while (eng->step()) {
  }
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i], alone[i]) << "sequence " << i;
  EXPECT_EQ(done, std::vector<int>(reqs.size() + 1, 1));
  EXPECT_LE(doomed_tokens, 4);
  // The slot a sequence ran in continues from its end, and a new prompt in a used slot starts over.
  EXPECT_EQ(eng->generate(reqs[0], {}).ids, alone[0]);
  EXPECT_EQ(eng->generate(reqs[2], {}).ids, alone[2]);
}

}  // namespace
}  // namespace anelm::engine
