// /v1/completions with `suffix` (fill-in-the-middle, what code-completion clients send) on a random
// tiny Qwen2 with Qwen2.5's vocabulary, against llama.cpp given the same FIM prompt written out with
// its marker tokens (`llamacpp-generate --special`): the same prompt ids and the same middle.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "engine/engine.h"
#include "real_model_server.h"
#include "test_server.h"
#include "tests/support/shared_data.h"

namespace anelm::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kPrefix = "def add(a, b):\n    return ";
const std::string kSuffix = "\n\n\nprint(add(1, 2))  # <|fim_middle|> stays text\n";
constexpr int kTokens = 16;

class FimCompletion : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto shared = shared_dir();
    generate_ = shared ? *shared / "peers/bin/llamacpp-generate" : fs::path();
    tokenizer_ = shared_model("qwen2.5-0.5b-instruct");
    if (!tokenizer_) GTEST_SKIP() << "shared test data not found: ../shared/models/qwen2.5-0.5b-instruct";
    dir_ = make_temp_dir("fim");
    model_ = (dir_ / "qwen2-fim.gguf").string();
    const std::string cmd = anelm_binary().string() + " make-model --arch qwen2 --shape tiny --dtype f32 --seed 7 " +
                            "--tokenizer-from " + tokenizer_->string() + " --out " + model_ + " >/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  // llamacpp-generate on the FIM model, `args` naming the prompt: its JSON line.
  json peer(const std::string& args, int n) const {
    const fs::path out = dir_ / "peer.json";
    const std::string cmd = shell_quote(generate_.string()) + " " + shell_quote(model_) + " " + args + " --n " +
                            std::to_string(n) + " --threads 2 2>/dev/null | tail -n 1 > " + shell_quote(out.string());
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return json::parse(std::ifstream(out));
  }

  // An in-process server of the FIM model (or `path`), greedy-ready.
  std::unique_ptr<RealModelServer> serve(const std::string& path, int ctx) const {
    engine::EngineOptions e;
    e.model_path = path;
    e.threads = 2;
    e.ctx = ctx;
    return std::make_unique<RealModelServer>(e, "m");
  }

  fs::path generate_, dir_;
  std::optional<fs::path> tokenizer_;
  std::string model_;
};

std::vector<int> tokenize(httplib::Client& c, const std::string& text) {
  auto r = c.Post("/tokenize", json{{"content", text}}.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200);
  return json::parse(r->body)["tokens"].get<std::vector<int>>();
}

TEST_F(FimCompletion, SuffixGivesLlamaCppsMiddle) {
  if (!fs::exists(generate_)) GTEST_SKIP() << "../shared/peers/bin/llamacpp-generate not found";
  const auto server = serve(model_, 512);
  httplib::Client c("127.0.0.1", server->port());
  c.set_read_timeout(60, 0);
  // The prompt the markers frame, the markers' ids taken from Qwen2.5's own added_tokens.json; the
  // code's own marker text stays text (the ids go to llama.cpp as ids).
  const json added = json::parse(std::ifstream(tokenizer_->string() + "/added_tokens.json"));
  const std::vector<int> prefix_ids = tokenize(c, kPrefix), suffix_ids = tokenize(c, kSuffix);
  std::vector<int> want_prompt = {added.at("<|fim_prefix|>").get<int>()};
  want_prompt.insert(want_prompt.end(), prefix_ids.begin(), prefix_ids.end());
  want_prompt.push_back(added.at("<|fim_suffix|>").get<int>());
  want_prompt.insert(want_prompt.end(), suffix_ids.begin(), suffix_ids.end());
  want_prompt.push_back(added.at("<|fim_middle|>").get<int>());
  std::string ids;
  for (int id : want_prompt) ids += (ids.empty() ? "" : " ") + std::to_string(id);
  const json ref = peer("--prompt-ids '" + ids + "'", kTokens);
  ASSERT_EQ(ref["generated_ids"].size(), static_cast<size_t>(kTokens)) << ref.dump();
  // One check that /tokenize, which parses no special tokens, splits the code as llama.cpp splits it
  // inside its special-parsed FIM prompt.
  const auto peer_ids =
      peer("--special --prompt " + shell_quote("<|fim_prefix|>" + kPrefix + "<|fim_suffix|>\n\n\nx<|fim_middle|>"), 1)
          ["prompt_ids"].get<std::vector<int>>();
  const auto framed = static_cast<std::ptrdiff_t>(prefix_ids.size() + 2);  // <|fim_prefix|> ... <|fim_suffix|>
  ASSERT_GT(peer_ids.size(), static_cast<size_t>(framed));
  EXPECT_EQ(std::vector<int>(peer_ids.begin(), peer_ids.begin() + framed),
            std::vector<int>(want_prompt.begin(), want_prompt.begin() + framed));

  const json body = {{"prompt", kPrefix}, {"suffix", kSuffix}, {"max_tokens", kTokens}, {"temperature", 0}};
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
  const json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["text"], ref["text"]);
  EXPECT_EQ(j["usage"]["prompt_tokens"].get<size_t>(), want_prompt.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], kTokens);

  json streamed = body;
  streamed["stream"] = true;
  auto s = c.Post("/v1/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(s && s->status == 200);
  std::string text;
  for (const std::string& p : sse_payloads(s->body))
    if (p != "[DONE]") text += json::parse(p)["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, ref["text"]);

  json by_ids = body;  // the prefix as token ids
  by_ids["prompt"] = prefix_ids;
  auto i = c.Post("/v1/completions", by_ids.dump(), "application/json");
  ASSERT_TRUE(i && i->status == 200) << i->body;
  EXPECT_EQ(json::parse(i->body)["choices"][0]["text"], ref["text"]);
}

TEST_F(FimCompletion, RefusedWhereItCannotRunAndEmptyIsPlain) {
  const auto server = serve(model_, 512);
  httplib::Client c("127.0.0.1", server->port());
  c.set_read_timeout(60, 0);
  auto post = [&](const json& b) { return c.Post("/v1/completions", b.dump(), "application/json"); };
  auto bad = [&](const json& b, const std::string& words) {
    auto r = post(b);
    ASSERT_TRUE(r && r->status == 400) << (r ? r->body : "no response");
    const json err = json::parse(r->body)["error"];
    EXPECT_EQ(err["param"], "suffix");
    EXPECT_NE(err["message"].get<std::string>().find(words), std::string::npos) << err.dump();
  };
  bad({{"prompt", "x"}, {"suffix", 3}}, "must be a string");
  bad({{"prompt", "x"}, {"suffix", "y"}, {"system", "s"}}, "cannot be combined with system");
  // An empty suffix (some SDKs send it) is a plain completion.
  const json plain = {{"prompt", kPrefix}, {"max_tokens", 4}, {"temperature", 0}};
  json empty = plain;
  empty["suffix"] = "";
  auto a = post(plain), b = post(empty);
  ASSERT_TRUE(a && a->status == 200 && b && b->status == 200);
  EXPECT_EQ(json::parse(a->body)["choices"][0]["text"], json::parse(b->body)["choices"][0]["text"]);
  EXPECT_EQ(json::parse(a->body)["usage"]["prompt_tokens"], json::parse(b->body)["usage"]["prompt_tokens"]);

  // A vocabulary without FIM markers (stories260K): a 400 that says why.
  auto stories = shared_model("stories260K.gguf");
  if (!stories) GTEST_SKIP() << "shared test data not found: stories260K.gguf";
  const auto plain_server = serve(stories->string(), 256);
  httplib::Client pc("127.0.0.1", plain_server->port());
  auto r = pc.Post("/v1/completions", json{{"prompt", "Once"}, {"suffix", " upon"}}.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 400) << (r ? r->body : "no response");
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "suffix");
  EXPECT_NE(r->body.find("FIM tokens"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace anelm::testing
