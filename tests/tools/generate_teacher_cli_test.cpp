// `anelm generate --json --teacher-ids ... --logits-top K`: the teacher-forced top logits it prints
// are the engine's own forward over prompt + teacher ids (checked here through the engine API), and
// the free-running ids beside them are unchanged. bench/parity_llamacpp.py relies on both.
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CliRun generate(const fs::path& dir, const std::string& args) {
  const std::string cmd = "'" + anelm::testing::anelm_binary().string() + "' generate " + args + " >'" +
                          (dir / "out.txt").string() + "' 2>'" + (dir / "err.txt").string() + "'";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out.txt"), slurp(dir / "err.txt")};
}

class GenerateTeacherCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(anelm::testing::anelm_binary())) GTEST_SKIP() << "anelm binary not built";
    dir_ = anelm::testing::make_temp_dir("generate_teacher");
    tools::MakeModelOptions o;
    o.arch = Arch::kQwen3;
    o.dtype = DType::kF32;
    o.seed = 3;
    model_ = tools::make_model(o, (dir_ / "m.gguf").string()).path;
  }
  fs::path dir_;
  std::string model_;
};

TEST_F(GenerateTeacherCli, TopLogitsAreTheEnginesTeacherForcedForward) {
  const std::vector<int> prompt = {1, 20, 300, 45}, teacher = {7, 400, 12, 99, 250};
  const int k = 3;
  const CliRun r = generate(dir_, "--model '" + model_ + "' --threads 1 --json --temperature 0 --ignore-eos "
                                  "--max-tokens 6 --prompt-ids '1 20 300 45' --teacher-ids '7 400 12 99 250' "
                                  "--logits-top 3");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);

  EngineOptions eo;
  eo.model_path = model_;
  eo.threads = 1;
  auto eng = Engine::load(eo);
  GenerateRequest req;
  req.prompt = prompt;
  req.max_tokens = 6;
  req.sampling.temperature = 0;
  req.ignore_eos = true;
  EXPECT_EQ(out["ids"].get<std::vector<int>>(), eng->generate(req, {}).ids);

  std::vector<int> seq = prompt;
  seq.insert(seq.end(), teacher.begin(), teacher.end() - 1);
  const auto logits = eng->forward(seq, 0, /*all_logits=*/true);
  const size_t vocab = logits.size() / seq.size();
  const auto& steps = out["teacher_forced"];
  ASSERT_EQ(steps.size(), teacher.size());
  for (size_t i = 0; i < teacher.size(); ++i) {
    EXPECT_EQ(steps[i]["forced_id"], teacher[i]);
    const float* row = logits.data() + (prompt.size() - 1 + i) * vocab;
    std::vector<float> sorted(row, row + vocab);
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const auto& top = steps[i]["top"];
    ASSERT_EQ(top.size(), static_cast<size_t>(k));
    for (int j = 0; j < k; ++j) {
      const int id = top[j]["id"];
      // Same forward on the same thread count: the same floats, in descending order.
      EXPECT_FLOAT_EQ(top[j]["logit"].get<float>(), row[id]) << "step " << i << " rank " << j;
      EXPECT_FLOAT_EQ(row[id], sorted[j]) << "step " << i << " rank " << j;
    }
  }
  // Step 0 sees exactly the free-running prompt, so its top id is the first greedy id.
  EXPECT_EQ(steps[0]["top"][0]["id"], out["ids"][0]);
}

// A script pipes `generate --json` into a JSON parser: the ANE backend's start-up log lines (the
// simulator's programs, the plan) must not reach stdout.
TEST_F(GenerateTeacherCli, JsonIsAllThatStdoutCarriesOnTheAneBackend) {
  const CliRun r = generate(dir_, "--model '" + model_ + "' --threads 1 --json --temperature 0 --ignore-eos "
                                  "--max-tokens 3 --prompt-ids '1 20 300 45' --backend ane");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json out;
  ASSERT_NO_THROW(out = nlohmann::json::parse(r.out)) << r.out;
  EXPECT_EQ(out["ids"].size(), 3u);
  EXPECT_FALSE(r.err.empty()) << "the backend's start-up is still logged, on stderr";
}

TEST_F(GenerateTeacherCli, TeacherIdsNeedJsonAndValidIds) {
  const std::string base = "--model '" + model_ + "' --threads 1 --prompt-ids '1 2' ";
  CliRun r = generate(dir_, base + "--teacher-ids '3 4'");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--teacher-ids needs --json"), std::string::npos) << r.err;
  r = generate(dir_, base + "--json --teacher-ids '3 999999'");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("999999"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace anelm::engine
