// Qwen3 (per-head q/k RMSNorm, head_dim independent of d_model / n_heads, no qkv bias): a generated
// model as GGUF and as an HF directory gives llama.cpp's greedy ids (recorded fixture), and both
// forms agree; --backend ane (simulator) runs it, the q/k head norms on the CPU between the programs,
// within the ANE tests' tolerance of the CPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/error.h"
#include "tests/engine/ane_compare.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

using namespace anelm::tools;

namespace fs = std::filesystem;

nlohmann::json load_fixture() {
  std::ifstream in(fs::path(ANELM_SOURCE_DIR) / "tests/data/engine/qwen3_tiny_seed11_llamacpp.json");
  return nlohmann::json::parse(in);
}

std::unique_ptr<Engine> load(const std::string& path, Backend backend = Backend::kCpu) {
  EngineOptions eo;
  eo.model_path = path;
  eo.threads = 2;
  eo.backend = backend;
  return Engine::load(eo);
}

std::vector<int> greedy(Engine& eng, const std::vector<int>& prompt, int n) {
  GenerateRequest req;
  req.prompt = prompt;
  req.max_tokens = n;
  req.sampling.temperature = 0;
  req.ignore_eos = true;
  return eng.generate(req, {}).ids;
}

TEST(Qwen3, GreedyIdsEqualLlamaCppInBothFormats) {
  ANELM_REQUIRE_SHARED_MODEL(tok, "qwen2.5-0.5b-instruct");
  const nlohmann::json fx = load_fixture();
  const fs::path dir = anelm::testing::make_temp_dir("qwen3");
  MakeModelOptions o;
  o.arch = Arch::kQwen3;
  o.shape = "tiny";
  o.dtype = DType::kF32;
  o.seed = 11;
  o.tokenizer = tok.string();
  const std::string gguf = make_model(o, (dir / "q3.gguf").string()).path;
  o.format = ModelFormat::kHf;
  const std::string hf = make_model(o, (dir / "q3-hf").string()).path;

  const auto prompt = fx["prompt_ids"].get<std::vector<int>>();
  const auto expected = fx["generated_ids"].get<std::vector<int>>();
  auto eng = load(gguf);
  EXPECT_EQ(eng->config().arch, Arch::kQwen3);
  EXPECT_TRUE(eng->config().qk_norm);
  EXPECT_EQ(eng->config().head_dim, 16);
  EXPECT_EQ(greedy(*eng, prompt, static_cast<int>(expected.size())), expected);
  auto from_hf = load(hf);
  EXPECT_EQ(greedy(*from_hf, prompt, static_cast<int>(expected.size())), expected);

  // The ANE path: the same ids up to the CPU's first near tie, logits within the fp16 tolerance.
  auto ane = load(gguf, Backend::kAne);
  EXPECT_EQ(ane->stats().backend, "ane (simulator)");
  const testing::Comparison c = testing::compare_backends(*eng, *ane, prompt, static_cast<int>(expected.size()), "qwen3");
  EXPECT_LE(c.max_diff, c.tol);
  EXPECT_GE(c.first_mismatch, c.first_near_tie);
  EXPECT_GT(c.ane_stats.ane_programs, 0);
}

TEST(Qwen3, MissingHeadNormsAreNamed) {
  ANELM_REQUIRE_SHARED_MODEL(tok, "qwen2.5-0.5b-instruct");
  const fs::path dir = anelm::testing::make_temp_dir("qwen3-bad");
  MakeModelOptions o;
  o.arch = Arch::kQwen3;
  o.format = ModelFormat::kHf;
  o.tokenizer = tok.string();
  const std::string hf = make_model(o, (dir / "m").string()).path;
  // The same checkpoint without its q/k norms: the loader names the missing tensor.
  std::ifstream in(fs::path(hf) / "config.json");
  nlohmann::json cfg = nlohmann::json::parse(in);
  EXPECT_EQ(cfg["architectures"][0], "Qwen3ForCausalLM");
  o.arch = Arch::kQwen2;  // qwen2 tensors (biases, no norms) under a qwen3 config
  const std::string q2 = make_model(o, (dir / "q2").string()).path;
  std::ofstream(fs::path(q2) / "config.json") << cfg.dump();
  try {
    load(q2);
    ADD_FAILURE() << "loaded a qwen3 config without q/k norms";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("self_attn.q_norm.weight"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace anelm::engine
