// anelm render-template against the reference renderings: stdout byte for byte, exit 3 with the
// template's message when it raises, exit 2 for other errors.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/shared_data.h"

namespace {

using json = nlohmann::ordered_json;

struct CliRun {
  int code = -1;
  std::string out, err;
};

using ::anelm::testing::read_file;

using ::anelm::testing::shell_quote;

CliRun run(const std::string& args, const std::filesystem::path& dir) {
  const auto err_path = dir / "stderr.txt";
  const std::string cmd = shell_quote(anelm::testing::anelm_binary().string()) + " render-template " + args + " 2>" + shell_quote(err_path.string());
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err_path);
  return r;
}

TEST(RenderTemplateCli, MatchesReferenceRenderingsAndExitCodes) {
  ANELM_REQUIRE_SHARED_MODEL(goldens, "chat-templates/goldens.json");
  const json g = json::parse(read_file(goldens));
  const auto dir = anelm::testing::make_temp_dir("render_template_cli");
  std::map<std::string, json> cases;
  for (const auto& c : g["cases"]) cases[c["name"].get<std::string>()] = c;
  int texts = 0, raised = 0, qwen35 = 0;
  for (const auto& row : g["goldens"]) {
    const std::string t = row["template"], c = row["case"];
    // A sample across syntaxes; the library test covers all 770. Qwen3.5 by name: issue 24 asks for
    // `anelm render-template` itself to equal transformers on its cases.
    if (t.find("Qwen-Qwen3") == std::string::npos && t.find("Qwen3.5") == std::string::npos &&
        t.find("Llama-3.1") == std::string::npos &&
        t.find("gemma-2") == std::string::npos && t.find("Mistral-Nemo") == std::string::npos)
      continue;
    const auto case_path = dir / (c + ".json");
    std::ofstream(case_path) << cases.at(c).dump();
    const std::string args = "--template " + shell_quote((goldens.parent_path() / t).string()) + " --case " +
                             shell_quote(case_path.string()) + " --bos-token " + shell_quote(row["specials"]["bos_token"]) +
                             " --eos-token " + shell_quote(row["specials"]["eos_token"]);
    const CliRun r = run(args, dir);
    if (row.contains("text")) {
      ++texts;
      if (t == "Qwen3.5-4B.jinja") ++qwen35;
      EXPECT_EQ(r.code, 0) << t << " / " << c << ": " << r.err;
      EXPECT_EQ(r.out, row["text"].get<std::string>()) << t << " / " << c;
    } else {
      const std::string want = row["error"];
      if (want.rfind("raise_exception: ", 0) != 0) continue;
      ++raised;
      EXPECT_EQ(r.code, 3) << t << " / " << c;
      EXPECT_EQ(r.err, want.substr(17) + "\n") << t << " / " << c;
      EXPECT_EQ(r.out, "");
    }
  }
  EXPECT_GT(texts, 30);
  EXPECT_GT(raised, 5);
  EXPECT_EQ(qwen35, 11) << "every case of cases.json rendered with the Qwen3.5 template";
  EXPECT_EQ(run("--template " + shell_quote((dir / "missing.jinja").string()) + " --case " + shell_quote((dir / "user_only.json").string()), dir).code, 2);
  std::ofstream(dir / "bad.jinja") << "{% if %}";
  const CliRun bad = run("--template " + shell_quote((dir / "bad.jinja").string()) + " --case " + shell_quote((dir / "user_only.json").string()), dir);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("TemplateSyntaxError"), std::string::npos) << bad.err;
  EXPECT_EQ(run("--template x.jinja", dir).code, 2);
}

}  // namespace
