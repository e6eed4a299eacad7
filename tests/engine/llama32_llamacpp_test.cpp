// Llama-3.2 (tied embeddings, the Llama-3 BPE vocabulary, rope theta 500000 and Llama-3 rope
// scaling): a generated model as GGUF (rope_freqs.weight) and as an HF directory (rope_scaling in
// config.json) gives llama.cpp's greedy ids (recorded fixture); without the scaling it would not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/error.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

using namespace anelm::tools;

namespace fs = std::filesystem;

std::vector<int> greedy(const std::string& path, const std::vector<int>& prompt, int n) {
  EngineOptions eo;
  eo.model_path = path;
  eo.threads = 2;
  auto eng = Engine::load(eo);
  GenerateRequest req;
  req.prompt = prompt;
  req.max_tokens = n;
  req.sampling.temperature = 0;
  req.ignore_eos = true;
  return eng->generate(req, {}).ids;
}

TEST(Llama32, RopeScaledGreedyIdsEqualLlamaCppInBothFormats) {
  ANELM_REQUIRE_SHARED_MODEL(vocab, "ggml-vocab-llama-bpe.gguf");
  std::ifstream in(fs::path(ANELM_SOURCE_DIR) / "tests/data/engine/llama32_tiny_seed5_llamacpp.json");
  const nlohmann::json fx = nlohmann::json::parse(in);
  const auto prompt = fx["prompt_ids"].get<std::vector<int>>();
  const auto expected = fx["generated_ids"].get<std::vector<int>>();
  const int n = static_cast<int>(expected.size());

  const fs::path dir = anelm::testing::make_temp_dir("llama32");
  MakeModelOptions o;
  o.arch = Arch::kLlama;
  o.shape = "llama-3.2-tiny";
  o.dtype = DType::kF32;
  o.seed = 5;
  o.tokenizer = vocab.string();
  const MadeModel gguf = make_model(o, (dir / "l.gguf").string());
  EXPECT_TRUE(gguf.config.tie_embeddings);
  EXPECT_EQ(gguf.config.rope_freq_factors.size(), static_cast<size_t>(gguf.config.rope_dim / 2));
  o.format = ModelFormat::kHf;
  const std::string hf = make_model(o, (dir / "l-hf").string()).path;

  EXPECT_EQ(greedy(gguf.path, prompt, n), expected);
  EXPECT_EQ(greedy(hf, prompt, n), expected);

  // The same checkpoint without rope_scaling: the scaling is what made the ids match.
  std::ifstream cin(fs::path(hf) / "config.json");
  nlohmann::json cfg = nlohmann::json::parse(cin);
  cin.close();
  ASSERT_EQ(cfg["rope_scaling"]["rope_type"], "llama3");
  cfg["rope_scaling"] = nullptr;
  std::ofstream(fs::path(hf) / "config.json") << cfg.dump();
  EXPECT_NE(greedy(hf, prompt, n), expected);
  cfg["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4}};
  std::ofstream(fs::path(hf) / "config.json") << cfg.dump();
  EXPECT_THROW(greedy(hf, prompt, 1), Error);  // unsupported scaling: refused by name, never ignored
}

}  // namespace
}  // namespace anelm::engine
