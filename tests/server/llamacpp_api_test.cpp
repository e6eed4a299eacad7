// llama-server's own /completion and /infill on a random tiny Qwen2 with Qwen2.5's vocabulary (which
// has the repository-level FIM markers): /infill's prompt written out from llama.cpp's documented
// layout and run by llamacpp-generate gives the same middle; the fields editor plugins send (llama.vim's
// and llama.vscode's request bodies) are honoured, refused or ignored as the API reference says; the
// result has llama.cpp's shape.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "engine/engine.h"
#include "real_model_server.h"
#include "server/generation.h"
#include "server/model_bundle.h"
#include "test_server.h"
#include "tests/support/shared_data.h"

namespace anelm::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kPrefix = "def add(a, b):\n";
const std::string kLine = "    return ";
const std::string kSuffix = "\n\n\nprint(add(1, 2))\n";
const std::string kExtraFile = "util.py", kExtraText = "def sub(a, b):\n    return a - b\n";
constexpr int kTokens = 16;

class LlamaCppApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokenizer_ = new std::optional<fs::path>(shared_model("qwen2.5-0.5b-instruct"));
    if (!*tokenizer_) return;
    dir_ = new fs::path(make_temp_dir("llamacpp-api"));
    model_ = new std::string((*dir_ / "qwen2-fim.gguf").string());
    const std::string cmd = anelm_binary().string() + " make-model --arch qwen2 --shape tiny --dtype f32 --seed 7 " +
                            "--tokenizer-from " + (*tokenizer_)->string() + " --out " + *model_ + " >/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    engine::EngineOptions e;
    e.model_path = *model_;
    e.threads = 2;
    e.ctx = 1024;
    server_ = new RealModelServer(e, "m");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!*tokenizer_) GTEST_SKIP() << "shared test data not found: ../shared/models/qwen2.5-0.5b-instruct";
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(60, 0);
  }

  httplib::Result post(const std::string& path, const json& body) { return client_->Post(path, body.dump(), "application/json"); }
  json ok(const std::string& path, const json& body) {
    auto r = post(path, body);
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
    return r && r->status == 200 ? json::parse(r->body) : json();
  }
  void refused(const std::string& path, const json& body, const std::string& param, const std::string& words) {
    auto r = post(path, body);
    ASSERT_TRUE(r && r->status == 400) << body.dump() << " -> " << (r ? r->body : "no response");
    const json err = json::parse(r->body)["error"];
    EXPECT_EQ(err["param"], param) << err.dump();
    EXPECT_NE(err["message"].get<std::string>().find(words), std::string::npos) << err.dump();
  }
  std::vector<int> tokenize(const std::string& text) {
    return ok("/tokenize", {{"content", text}, {"parse_special", false}})["tokens"].get<std::vector<int>>();
  }

  static std::optional<fs::path>* tokenizer_;
  static fs::path* dir_;
  static std::string* model_;
  static RealModelServer* server_;
  std::unique_ptr<httplib::Client> client_;
};

std::optional<fs::path>* LlamaCppApi::tokenizer_ = nullptr;
fs::path* LlamaCppApi::dir_ = nullptr;
std::string* LlamaCppApi::model_ = nullptr;
RealModelServer* LlamaCppApi::server_ = nullptr;

TEST_F(LlamaCppApi, InfillPromptAndMiddleAreLlamaCpps) {
  const fs::path generate = *shared_dir() / "peers/bin/llamacpp-generate";
  if (!fs::exists(generate)) GTEST_SKIP() << "../shared/peers/bin/llamacpp-generate not found";
  // llama.cpp's repository-level layout (tools/server/README.md, /infill): the markers' ids from
  // Qwen2.5's own added_tokens.json, the texts tokenized as plain text.
  const json added = json::parse(std::ifstream((*tokenizer_)->string() + "/added_tokens.json"));
  std::vector<int> want;
  auto text = [&](const std::string& s) {
    const auto t = tokenize(s);
    want.insert(want.end(), t.begin(), t.end());
  };
  auto marker = [&](const char* m) { want.push_back(added.at(m).get<int>()); };
  marker("<|repo_name|>");
  text("myproject\n");
  marker("<|file_sep|>");
  text(kExtraFile + "\n");
  text(kExtraText);
  marker("<|file_sep|>");
  text("filename\n");
  marker("<|fim_prefix|>");
  text(kPrefix);
  text(kLine);
  marker("<|fim_suffix|>");
  text(kSuffix);
  marker("<|fim_middle|>");
  std::string ids;
  for (int id : want) ids += (ids.empty() ? "" : " ") + std::to_string(id);
  const fs::path out = *dir_ / "peer.json";
  const std::string cmd = shell_quote(generate.string()) + " " + shell_quote(*model_) + " --prompt-ids '" + ids +
                          "' --n " + std::to_string(kTokens) + " --threads 2 2>/dev/null | tail -n 1 > " +
                          shell_quote(out.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const json ref = json::parse(std::ifstream(out));

  const json body = {{"input_prefix", kPrefix}, {"input_suffix", kSuffix}, {"prompt", kLine},
                     {"input_extra", {{{"filename", kExtraFile}, {"text", kExtraText}}}},
                     {"n_predict", kTokens}, {"temperature", 0}, {"ignore_eos", true}, {"return_tokens", true}};
  const json j = ok("/infill", body);
  EXPECT_EQ(j["tokens_evaluated"].get<size_t>(), want.size());
  EXPECT_EQ(j["tokens"], ref["generated_ids"]);
  EXPECT_EQ(j["tokens_predicted"], kTokens);
  EXPECT_EQ(j["stop_type"], "limit");
  // The same as token ids in a mixed array, and streamed: the same text.
  json mixed = body;
  mixed["input_prefix"] = tokenize(kPrefix);
  mixed["stream"] = true;
  auto s = post("/infill", mixed);
  ASSERT_TRUE(s && s->status == 200) << (s ? s->body : "");
  std::string streamed;
  const auto events = sse_payloads(s->body);
  ASSERT_FALSE(events.empty());
  for (const std::string& p : events) {
    ASSERT_NE(p, "[DONE]");  // llama.cpp's own stream has none
    streamed += json::parse(p)["content"].get<std::string>();
  }
  EXPECT_EQ(streamed, j["content"]);
  const json last = json::parse(events.back());
  EXPECT_EQ(last["stop"], true);
  EXPECT_EQ(last["content"], "");
  EXPECT_EQ(last["tokens_evaluated"].get<size_t>(), want.size());
}

TEST_F(LlamaCppApi, EditorPluginRequestsGetTheFieldsTheyRead) {
  // llama.vim's completion request (autoload/llama.vim, s:fim_on_... ) and its warm-up (n_predict 0).
  const json vim = {{"id_slot", 0}, {"input_prefix", kPrefix}, {"input_suffix", kSuffix},
                    {"input_extra", {{{"text", kExtraText}, {"filename", kExtraFile}}}}, {"prompt", kLine},
                    {"n_predict", 8}, {"n_indent", 4}, {"top_k", 40}, {"top_p", 0.90},
                    {"samplers", {"top_k", "top_p", "infill"}}, {"stream", false}, {"cache_prompt", true},
                    {"t_max_prompt_ms", 500}, {"t_max_predict_ms", 1000},
                    {"response_fields", {"content", "timings/prompt_n", "timings/prompt_ms", "timings/prompt_per_token_ms",
                                         "timings/prompt_per_second", "timings/predicted_n", "timings/predicted_ms",
                                         "timings/predicted_per_token_ms", "timings/predicted_per_second", "truncated",
                                         "tokens_cached"}}};
  const json j = ok("/infill", vim);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.size(), vim["response_fields"].size()) << j.dump();
  EXPECT_TRUE(j["content"].is_string());
  EXPECT_GE(j["timings/prompt_n"].get<int>(), 1);  // what the prompt cache did not hold
  EXPECT_GT(j["tokens_cached"].get<int>(), 40);
  json warm = vim;
  warm["n_predict"] = 0;
  warm["samplers"] = json::array();
  warm["response_fields"] = {""};
  EXPECT_EQ(ok("/infill", warm), json::object());
  // llama.vscode's (src/llama-server.ts): several completions at once are an array.
  const json vscode = {{"id_slot", 0}, {"input_prefix", kPrefix}, {"input_suffix", kSuffix},
                       {"input_extra", json::array()}, {"prompt", kLine}, {"n_predict", 6}, {"n_cmpl", 2},
                       {"top_k", 40}, {"top_p", 0.99}, {"stream", false}, {"samplers", {"top_k", "top_p", "infill"}},
                       {"cache_prompt", true}, {"t_max_prompt_ms", 500}, {"t_max_predict_ms", 2500}, {"seed", 5}};
  const json v = ok("/infill", vscode);
  ASSERT_TRUE(v.is_array()) << v.dump();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1]["index"], 1);
  const json again = ok("/infill", vscode);  // a given seed gives the same completions
  EXPECT_EQ(again[0]["content"], v[0]["content"]);
  EXPECT_EQ(again[1]["content"], v[1]["content"]);
}

TEST_F(LlamaCppApi, CompletionShapeAndSamplingFields) {
  const json plain = {{"prompt", "Hello world"}, {"n_predict", 6}, {"temperature", 0}};
  const json j = ok("/completion", plain);
  for (const char* k : {"index", "content", "tokens", "id_slot", "stop", "model", "tokens_predicted", "tokens_evaluated",
                        "generation_settings", "prompt", "has_new_line", "truncated", "stop_type", "stopping_word",
                        "tokens_cached", "timings"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["prompt"], "Hello world");
  // The same greedy text as /v1/completions.
  const json v1 = ok("/v1/completions", {{"prompt", "Hello world"}, {"max_tokens", 6}, {"temperature", 0}});
  EXPECT_EQ(j["content"], v1["choices"][0]["text"]);
  // ignore_eos runs to n_predict; return_tokens gives the ids.
  json greedy = plain;
  greedy["ignore_eos"] = true;
  greedy["return_tokens"] = true;
  const json t = ok("/completion", greedy);
  EXPECT_EQ(t["tokens_predicted"], 6);
  ASSERT_EQ(t["tokens"].size(), 6u);
  EXPECT_EQ(t["stop_type"], "limit");
  // logit_bias false bans the first token: the text changes.
  json banned = greedy;
  banned["logit_bias"] = {{t["tokens"][0], false}};
  EXPECT_NE(ok("/completion", banned)["content"], t["content"]);
  // A stop string: stop_type word, the string named and not in the text.
  json stopped = greedy;
  stopped["stop"] = {t["content"]};
  const json w = ok("/completion", stopped);
  EXPECT_EQ(w["stop_type"], "word");
  EXPECT_EQ(w["stopping_word"], t["content"]);
  EXPECT_EQ(w["content"], "");
  // A prompt of text and ids mixed is the text's ids with the ids.
  json mixed = plain;
  mixed["prompt"] = json::array({"Hello"});
  for (int id : tokenize(" world")) mixed["prompt"].push_back(id);
  EXPECT_EQ(ok("/completion", mixed)["content"], j["content"]);
}

// GET /props: the context and slots /health reports, the template /apply-template renders with, and
// as defaults exactly the sampling a /completion that sets nothing runs with.
TEST_F(LlamaCppApi, PropsReportWhatARequestGets) {
  auto r = client_->Get("/props");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
  const json p = json::parse(r->body);
  const json health = server_->health();
  EXPECT_EQ(p["default_generation_settings"]["n_ctx"], health["n_ctx"]);
  EXPECT_EQ(p["total_slots"], health["parallel"]);
  EXPECT_EQ(p["model_alias"], "m");
  EXPECT_EQ(p["eos_token"], "<|im_end|>");
  const json rendered = ok("/apply-template", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
  EXPECT_NE(p["chat_template"].get<std::string>().find("<|im_start|>"), std::string::npos);
  EXPECT_NE(rendered["prompt"].get<std::string>().find("<|im_start|>user\nHi<|im_end|>"), std::string::npos);
  const json done = ok("/completion", {{"prompt", "Hello"}, {"n_predict", 1}});
  const json& want = done["generation_settings"];
  const json& got = p["default_generation_settings"]["params"];
  for (const char* k : {"temperature", "top_k", "top_p", "min_p", "repeat_last_n", "repeat_penalty", "presence_penalty",
                        "frequency_penalty", "samplers", "stop", "ignore_eos"})
    EXPECT_EQ(got[k], want[k]) << k;
}

TEST_F(LlamaCppApi, UnsupportedFieldsAreRefusedByName) {
  const json base = {{"prompt", "Hello"}, {"n_predict", 2}};
  auto with = [&](const char* key, json value) {
    json b = base;
    b[key] = std::move(value);
    return b;
  };
  refused("/completion", with("mirostat", 2), "mirostat", "not supported");
  refused("/completion", with("typical_p", 0.5), "typical_p", "not supported");
  refused("/completion", with("dry_multiplier", 0.8), "dry_multiplier", "not supported");
  refused("/completion", with("n_probs", 65), "n_probs", "n_probs");
  json post_sampling = with("n_probs", 3);
  post_sampling["post_sampling_probs"] = true;
  refused("/completion", post_sampling, "post_sampling_probs", "not supported");
  refused("/completion", with("lora", json::array({{{"id", 0}, {"scale", 0.5}}})), "lora", "not supported");
  refused("/completion", with("grammar_lazy", true), "grammar_lazy", "not supported");
  refused("/completion", with("preserved_tokens", {"<|im_end|>"}), "preserved_tokens", "not supported");
  refused("/completion", with("samplers", {"top_p", "top_k"}), "samplers", "too late");
  refused("/completion", with("samplers", {"mirostat_v2"}), "samplers", "not supported");
  json between = with("samplers", {"top_p", "temperature", "min_p"});
  between["top_p"] = 0.9;
  between["min_p"] = 0.1;
  refused("/completion", between, "samplers", "before or after");
  refused("/completion", with("prompt", json::array({"a", json::array({1, -2})})), "prompt[1]", "token ids");
  refused("/completion", with("prompt", json::array({"a", ""})), "prompt[1]", "empty");
  refused("/infill", {{"input_suffix", ""}}, "input_prefix", "required");
  refused("/infill", {{"input_prefix", ""}, {"input_suffix", ""}, {"input_extra", {{{"filename", "x"}}}}},
          "input_extra[0].text", "text");
  // Accepted with their "off" values, and the fields with no meaning here.
  for (const json& b : {with("mirostat", 0), with("typical_p", 1.0), with("n_probs", 0), with("lora", json::array()),
                        with("n_keep", 10), with("id_slot", 3), with("cache_prompt", false), with("samplers", "kpt"),
                        with("grammar_lazy", false), with("preserved_tokens", json::array())})
    ok("/completion", b);
}

// n_probs: the chosen token's and the n most likely tokens' probabilities of the model (softmax of
// the raw logits), as llama.cpp computes them: checked against llamacpp-logits on the same file (ids
// and ranks exactly; values within 1e-2, the two engines' float differences on this random f32 model
// being up to 6e-3).
TEST_F(LlamaCppApi, NProbsAreLlamaCppsModelProbabilities) {
  const fs::path logits = *shared_dir() / "peers/bin/llamacpp-logits";
  if (!fs::exists(logits)) GTEST_SKIP() << "../shared/peers/bin/llamacpp-logits not found";
  const std::vector<int> prompt = tokenize("Once upon a time, in a land far away");
  std::string ids;
  for (int id : prompt) ids += (ids.empty() ? "" : " ") + std::to_string(id);
  const fs::path out = *dir_ / "logits.json";
  const std::string cmd = shell_quote(logits.string()) + " " + shell_quote(*model_) + " --ids '" + ids +
                          "' --last --top 5 --threads 2 2>/dev/null > " + shell_quote(out.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const json peer = json::parse(std::ifstream(out))["positions"].back()["top"];
  ASSERT_EQ(peer.size(), 5u);

  const json body = {{"prompt", prompt}, {"n_predict", 3}, {"temperature", 0}, {"n_probs", 5}, {"return_tokens", true}};
  const json j = ok("/completion", body);
  ASSERT_EQ(j["completion_probabilities"].size(), 3u) << j.dump();
  EXPECT_EQ(j["generation_settings"]["n_probs"], 5);
  const json& first = j["completion_probabilities"][0];
  EXPECT_EQ(first["id"], j["tokens"][0]);
  EXPECT_EQ(first["id"], peer[0]["id"]) << "greedy: llama.cpp's most likely token";
  EXPECT_NEAR(first["logprob"].get<double>(), std::log(peer[0]["p"].get<double>()), 1e-2);
  ASSERT_EQ(first["top_logprobs"].size(), 5u);
  for (size_t k = 0; k < 5; ++k) {
    const json& t = first["top_logprobs"][k];
    EXPECT_EQ(t["id"], peer[k]["id"]) << k;
    EXPECT_NEAR(t["logprob"].get<double>(), std::log(peer[k]["p"].get<double>()), 1e-2) << k;
    std::string bytes;
    for (const json& b : t["bytes"]) bytes += static_cast<char>(b.get<int>());
    EXPECT_EQ(bytes, peer[k]["piece"].get<std::string>()) << k;
  }
  // Streamed: each event carries its tokens' entries, and together they are the whole list (the
  // prompt now comes from the cache: the last position is computed in another pass, values may
  // differ in the last bits).
  json streamed_body = body;
  streamed_body["stream"] = true;
  auto s = post("/completion", streamed_body);
  ASSERT_TRUE(s && s->status == 200);
  json streamed = json::array();
  for (const std::string& p : sse_payloads(s->body)) {
    const json e = json::parse(p);
    if (e["stop"] == false)
      for (const json& x : e["completion_probabilities"]) streamed.push_back(x);
    else
      EXPECT_FALSE(e.contains("completion_probabilities")) << "not repeated in the last event, as llama.cpp";
  }
  const json& whole = j["completion_probabilities"];
  ASSERT_EQ(streamed.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(streamed[i]["id"], whole[i]["id"]);
    EXPECT_EQ(streamed[i]["bytes"], whole[i]["bytes"]);
    EXPECT_NEAR(streamed[i]["logprob"].get<double>(), whole[i]["logprob"].get<double>(), 1e-4);
    ASSERT_EQ(streamed[i]["top_logprobs"].size(), 5u);
    for (size_t k = 0; k < 5; ++k) EXPECT_EQ(streamed[i]["top_logprobs"][k]["id"], whole[i]["top_logprobs"][k]["id"]);
  }
  EXPECT_FALSE(ok("/completion", {{"prompt", prompt}, {"n_predict", 1}}).contains("completion_probabilities"));
}

// Several prompts (strings or arrays, as llama.cpp reads them): one result per prompt and n_cmpl,
// index = prompt * n_cmpl + i, each the same as the prompt alone.
TEST_F(LlamaCppApi, SeveralPromptsGiveOneResultEach) {
  const std::vector<std::string> texts = {"Once upon a time", "def add(a, b):"};
  std::vector<json> alone;
  for (const std::string& t : texts)
    alone.push_back(ok("/completion", {{"prompt", t}, {"n_predict", 6}, {"temperature", 0}, {"return_tokens", true}}));
  const json both = ok("/completion", {{"prompt", {texts[0], tokenize(texts[1])}}, {"n_predict", 6}, {"temperature", 0},
                                       {"return_tokens", true}});
  ASSERT_TRUE(both.is_array()) << both.dump();
  ASSERT_EQ(both.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(both[i]["index"], i);
    EXPECT_EQ(both[i]["tokens"], alone[i]["tokens"]) << i;
    EXPECT_EQ(both[i]["content"], alone[i]["content"]) << i;
    EXPECT_EQ(both[i]["tokens_evaluated"], alone[i]["tokens_evaluated"]) << i;
    EXPECT_EQ(both[i]["prompt"], alone[i]["prompt"]) << i;
  }
  const json four = ok("/completion", {{"prompt", texts}, {"n_predict", 4}, {"n_cmpl", 2}, {"seed", 3}});
  ASSERT_EQ(four.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(four[i]["index"], i);
    EXPECT_EQ(four[i]["prompt"], alone[i / 2]["prompt"]) << i;
  }
  // Streamed: each event names its result; every result ends with its stop event.
  auto s = post("/completion", {{"prompt", texts}, {"n_predict", 6}, {"temperature", 0}, {"stream", true}});
  ASSERT_TRUE(s && s->status == 200);
  std::vector<std::string> content(2);
  int stops = 0;
  for (const std::string& p : sse_payloads(s->body)) {
    const json e = json::parse(p);
    content[e["index"].get<size_t>()] += e["content"].get<std::string>();
    stops += e["stop"].get<bool>();
  }
  EXPECT_EQ(stops, 2);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(content[i], alone[i]["content"]) << i;
}

// n_indent and t_max_predict_ms on the text as it is emitted, over Qwen2.5's tokenizer.
std::string assemble(const tok::Tokenizer& tk, const std::vector<std::string>& parts, server::LineLimits limits,
                     bool* limited, int pause_ms_after_first = 0) {
  server::TextAssembler a(tk, {}, {}, nullptr, {}, limits);
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (int id : tk.encode(parts[i], false)) out += a.push(id);
    if (i == 0 && pause_ms_after_first) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_after_first));
  }
  out += a.finish();
  *limited = a.limited();
  return out;
}

TEST(LineLimits, IndentAndTimeEndTheOutputAsLlamaCppDoes) {
  auto dir = shared_model("qwen2.5-0.5b-instruct");
  if (!dir) GTEST_SKIP() << "shared test data not found";
  const auto tk = server::load_tokenizer(dir->string());
  bool limited = false;
  server::LineLimits indent{4, 0};
  // The first line is never checked; a later line indented less than 4 ends the output at its first
  // character, its indentation kept.
  EXPECT_EQ(assemble(*tk, {"x + 1\n    y = 2\n  z = 3\n    w"}, indent, &limited), "x + 1\n    y = 2\n  ");
  EXPECT_TRUE(limited);
  EXPECT_EQ(assemble(*tk, {"  a\n    b\n\tc"}, indent, &limited), "  a\n    b\n\t");  // a tab counts one
  EXPECT_TRUE(limited);
  EXPECT_EQ(assemble(*tk, {"a\n    b\n\n    c"}, indent, &limited), "a\n    b\n");  // an empty line ends it
  EXPECT_TRUE(limited);
  EXPECT_EQ(assemble(*tk, {"a\n    b\n      c\n   "}, indent, &limited), "a\n    b\n      c\n   ");
  EXPECT_FALSE(limited);
  // The time limit: at the first newline after it has passed, the newline kept.
  server::LineLimits time{0, 20};
  EXPECT_EQ(assemble(*tk, {"a\nb", " c\nd\ne"}, time, &limited, 60), "a\nb c\n");
  EXPECT_TRUE(limited);
  EXPECT_EQ(assemble(*tk, {"a\nb", " c\nd\ne"}, time, &limited, 0), "a\nb c\nd\ne");
  EXPECT_FALSE(limited);
}

}  // namespace
}  // namespace anelm::testing
