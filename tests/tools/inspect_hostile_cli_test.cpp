// `anelm inspect` on hostile model directories: a clear error naming the file and exit 1, never a
// crash, and never the bytes of a file outside the model directory.
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/shared_data.h"

namespace {

namespace fs = std::filesystem;

struct CliRun {
  int code = -1;  // -1: killed by a signal
  std::string err;
};

using ::anelm::testing::shell_quote;

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

CliRun inspect(const fs::path& model, const fs::path& dir) {
  const fs::path err_path = dir / "stderr.txt";
  const std::string cmd = shell_quote(anelm::testing::anelm_binary().string()) + " inspect --model " +
                          shell_quote(model.string()) + " >/dev/null 2>" + shell_quote(err_path.string());
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

const char* kConfig = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 1,
  "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 40})";

TEST(InspectCli, DeeplyNestedSafetensorsHeaderExitsOne) {
  if (!fs::exists(anelm::testing::anelm_binary())) GTEST_SKIP() << "anelm binary not built";
  const fs::path dir = anelm::testing::make_temp_dir("inspect_deep");
  write(dir / "config.json", kConfig);
  // ~1 MB header: __metadata__ nests 100k levels (used to end in SIGSEGV).
  const std::string header = R"({"__metadata__": {"a": )" + std::string(500000, '[') + std::string(500000, ']') + "}}";
  const uint64_t n = header.size();
  write(dir / "model.safetensors", std::string(reinterpret_cast<const char*>(&n), 8) + header);
  const CliRun r = inspect(dir, dir);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("model.safetensors"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nests deeper than 64"), std::string::npos) << r.err;
}

TEST(InspectCli, IndexNamingAFileOutsideTheModelExitsOneWithoutItsBytes) {
  if (!fs::exists(anelm::testing::anelm_binary())) GTEST_SKIP() << "anelm binary not built";
  const fs::path root = anelm::testing::make_temp_dir("inspect_index");
  const fs::path dir = root / "model";
  fs::create_directories(dir);
  write(root / "secret.txt", "TOPSECRET-TOKEN {\"a\": 1}\n");
  write(dir / "config.json", kConfig);
  for (const std::string& shard : {(root / "secret.txt").string(), std::string("../secret.txt")}) {
    write(dir / "model.safetensors.index.json", R"({"weight_map": {"w": ")" + shard + R"("}})");
    const CliRun r = inspect(dir, root);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("model.safetensors.index.json"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("TOPSECRET"), std::string::npos) << r.err;
  }
}

}  // namespace
