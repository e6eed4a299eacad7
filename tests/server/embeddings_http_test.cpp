// POST /v1/embeddings over HTTP on real tiny models made by `anelm make-model` with the real Qwen2.5
// tokenizer: cosine >= 0.9999 against llama.cpp (tests/server/peer_embed.mjs over ../shared/peers, same GGUF and
// texts) for one, several and an ~8k-token input, with last (Qwen3-Embedding-like) and mean pooling;
// request validation, base64, dimensions, usage; --embeddings on a generative model; 16 concurrent
// embedding requests beside 4 chat streams.
#include <gtest/gtest.h>

#include <httplib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "peer_embed.h"
#include "real_model_server.h"
#include "server/embeddings_api.h"
#include "test_server.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kLongCtx = 8448;

// A tiny f16 model with Qwen2.5's tokenizer made by this build's anelm.
std::string make_model(const fs::path& dir, const std::string& name, const std::string& args) {
  return anelm::testing::make_model_with_qwen25_tokenizer(dir, name,
                                                          "--shape tiny --dtype f16 --format gguf --seed 7 " + args);
}

using anelm::testing::cosine;
using anelm::testing::l2_norm;
using anelm::testing::peer_embed;

// ~8k tokens of varied prose (numbers and words, so the BPE does not merge it into a few tokens).
std::string long_text() {
  static const char* words[] = {"river", "stone", "lantern", "quietly", "harbor", "seven", "garden", "orbit",
                                "copper", "meadow", "whisper", "engine", "violet", "thunder", "ledger", "maple"};
  std::string s;
  for (int i = 0; i < 3600; ++i) {
    s += words[(i * 7 + i / 16) % 16];
    s += (i % 5 == 4) ? ". " : " ";
    if (i % 3 == 0) s += std::to_string(i % 97) + " ";
  }
  return s;
}

httplib::Result post(int port, const std::string& path, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(300, 0);
  return c.Post(path, body.dump(), "application/json");
}

std::vector<std::vector<float>> vectors_of(const httplib::Result& r) { return anelm::testing::embedding_vectors(r); }

class EmbeddingsHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(anelm::testing::make_temp_dir("embeddings-http"));
    last_ = new std::string(make_model(*dir_, "qwen3-embed-last.gguf", "--arch qwen3 --pooling last"));
    mean_ = new std::string(make_model(*dir_, "qwen2-embed-mean.gguf", "--arch qwen2 --pooling mean"));
    plain_ = new std::string(make_model(*dir_, "qwen2-plain.gguf", "--arch qwen2"));
  }
  static void TearDownTestSuite() {
    delete last_, delete mean_, delete plain_, delete dir_;
  }

  void SetUp() override {
    if (!anelm::testing::shared_model("qwen2.5-0.5b-instruct"))
      GTEST_SKIP() << "shared test data not found: ../shared/models/qwen2.5-0.5b-instruct";
    ASSERT_FALSE(last_->empty() || mean_->empty() || plain_->empty());
  }

  void serve(const std::string& model, int ctx = 1024, bool embeddings_flag = false) {
    engine::EngineOptions e;
    e.model_path = model;
    e.threads = 2;
    e.ctx = ctx;
    e.parallel = 4;
    server_.reset();
    server_ = std::make_unique<anelm::testing::RealModelServer>(
        e, "embed", 16, [embeddings_flag](ServerOptions& o) { o.embeddings = embeddings_flag; });
    port_ = server_->port();
  }

  // Our vectors of `texts` (one request) against llama.cpp's, normalised: cosine >= 0.9999 each.
  void expect_matches_peer(const std::string& model, const std::vector<std::string>& texts) {
    const auto ours = vectors_of(post(port_, "/v1/embeddings", {{"input", texts}, {"model", "embed"}}));
    const auto peer = peer_embed(model, texts);
    if (!peer) GTEST_SKIP() << "llama.cpp peer kit not found (../shared/peers)";
    const auto& theirs = *peer;
    ASSERT_EQ(ours.size(), texts.size());
    ASSERT_EQ(theirs.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      ASSERT_EQ(ours[i].size(), theirs[i].size());
      EXPECT_NEAR(l2_norm(ours[i]), 1.0, 1e-5) << "OpenAI vectors are unit length";
      const double c = cosine(ours[i], theirs[i]);
      std::printf("[ cosine   ] %s input %zu (%zu bytes): %.7f\n", fs::path(model).filename().c_str(), i,
                  texts[i].size(), c);
      EXPECT_GE(c, 0.9999) << "input " << i;
    }
  }

  static fs::path* dir_;
  static std::string *last_, *mean_, *plain_;
  std::unique_ptr<anelm::testing::RealModelServer> server_;
  int port_ = 0;
};

fs::path* EmbeddingsHttp::dir_ = nullptr;
std::string* EmbeddingsHttp::last_ = nullptr;
std::string* EmbeddingsHttp::mean_ = nullptr;
std::string* EmbeddingsHttp::plain_ = nullptr;

const std::vector<std::string> kTexts = {
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings map text to vectors; similar texts land close together.",
    "Qwen3-Embedding pools the hidden state of the final end-of-text token, 42 times.",
};

TEST_F(EmbeddingsHttp, LastPoolingMatchesLlamaCppSingleAndBatched) {
  serve(*last_);
  expect_matches_peer(*last_, {kTexts[0]});
  expect_matches_peer(*last_, kTexts);
}

TEST_F(EmbeddingsHttp, MeanPoolingMatchesLlamaCppSingleAndBatched) {
  serve(*mean_);
  expect_matches_peer(*mean_, {kTexts[1]});
  expect_matches_peer(*mean_, kTexts);
}

TEST_F(EmbeddingsHttp, LongInputMatchesLlamaCpp) {
  serve(*last_, kLongCtx);
  const std::string text = long_text();
  const auto r = post(port_, "/v1/embeddings", {{"input", text}});
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
  const int tokens = json::parse(r->body)["usage"]["prompt_tokens"];
  std::printf("[ long     ] %d tokens\n", tokens);
  EXPECT_GE(tokens, 7500);
  EXPECT_LE(tokens, kLongCtx - 16);
  expect_matches_peer(*last_, {text});
}

TEST_F(EmbeddingsHttp, RequestShapesAndUsage) {
  serve(*last_);
  // The same text as a string, as a one-element array and as its token ids.
  const auto a = vectors_of(post(port_, "/v1/embeddings", {{"input", kTexts[0]}}));
  const auto b = vectors_of(post(port_, "/embeddings", {{"input", {kTexts[0]}}, {"user", "ignored"}}));
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_GT(cosine(a[0], b[0]), 0.999999);
  httplib::Client c("127.0.0.1", port_);
  auto tk = c.Post("/tokenize", json{{"content", kTexts[0]}}.dump(), "application/json");
  ASSERT_TRUE(tk && tk->status == 200);
  std::vector<int> ids = json::parse(tk->body)["tokens"];
  ids.push_back(151643);  // the model's EOS (<|endoftext|>), appended to texts: add_eos_token
  const auto r = post(port_, "/v1/embeddings", {{"input", ids}});
  ASSERT_TRUE(r && r->status == 200);
  const json j = json::parse(r->body);
  EXPECT_EQ(j["usage"]["prompt_tokens"], ids.size());
  EXPECT_EQ(j["usage"]["total_tokens"], ids.size());
  EXPECT_EQ(j["model"], "embed");
  EXPECT_GT(cosine(a[0], j["data"][0]["embedding"].get<std::vector<float>>()), 0.999999);
  const auto two = vectors_of(post(port_, "/v1/embeddings", {{"input", {ids, {ids[0], ids[1]}}}}));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_GT(cosine(a[0], two[0]), 0.999999);
  EXPECT_LT(cosine(two[0], two[1]), 0.9999);

  // base64: little-endian float32 of the same vector.
  const auto r64 = post(port_, "/v1/embeddings", {{"input", kTexts[0]}, {"encoding_format", "base64"}});
  ASSERT_TRUE(r64 && r64->status == 200);
  const std::string b64 = json::parse(r64->body)["data"][0]["embedding"];
  ASSERT_EQ(b64, base64_encode(a[0].data(), a[0].size() * sizeof(float)));
  // dimensions: the first k values, normalised again.
  const auto d = vectors_of(post(port_, "/v1/embeddings", {{"input", kTexts[0]}, {"dimensions", 16}}));
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].size(), 16u);
  std::vector<float> head(a[0].begin(), a[0].begin() + 16);
  const double n = l2_norm(head);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(d[0][i], head[i] / n, 1e-6);
}

// Ollama's /api/embed cuts an input longer than the context (truncate, its default) to the context,
// keeping the EOS that last-token pooling reads: the vector of the first ctx - 1 ids and the EOS.
TEST_F(EmbeddingsHttp, OllamaEmbedTruncatesKeepingTheEos) {
  constexpr int kCtx = 64;
  serve(*last_, kCtx);
  const std::string text = long_text().substr(0, 2000);
  httplib::Client c("127.0.0.1", port_);
  auto tk = c.Post("/tokenize", json{{"content", text}}.dump(), "application/json");
  ASSERT_TRUE(tk && tk->status == 200);
  std::vector<int> ids = json::parse(tk->body)["tokens"];
  ASSERT_GT(ids.size(), static_cast<size_t>(kCtx));
  ids.resize(kCtx - 1);
  ids.push_back(151643);  // <|endoftext|>
  const auto want = vectors_of(post(port_, "/v1/embeddings", {{"input", ids}}));
  const auto r = post(port_, "/api/embed", {{"model", "x"}, {"input", {text}}});
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
  const json j = json::parse(r->body);
  EXPECT_EQ(j["prompt_eval_count"], kCtx);
  const std::vector<float> got = j["embeddings"][0].get<std::vector<float>>();
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got.size(), want[0].size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[0][i], 1e-6) << i;
  const auto refused = post(port_, "/api/embed", {{"input", text}, {"truncate", false}});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_TRUE(json::parse(refused->body)["error"].is_string()) << refused->body;
}

TEST(EmbeddingsBase64, Rfc4648Vectors) {
  EXPECT_EQ(base64_encode("", 0), "");
  EXPECT_EQ(base64_encode("f", 1), "Zg==");
  EXPECT_EQ(base64_encode("fo", 2), "Zm8=");
  EXPECT_EQ(base64_encode("foo", 3), "Zm9v");
  EXPECT_EQ(base64_encode("foobar", 6), "Zm9vYmFy");
  const float one = 1.0f;  // 0x3f800000, little-endian 00 00 80 3f
  EXPECT_EQ(base64_encode(&one, 4), "AACAPw==");
}

TEST_F(EmbeddingsHttp, BadRequestsNameTheField) {
  serve(*last_, 256);
  auto expect_400 = [&](const json& body, const std::string& param, const std::string& text = "") {
    const auto r = post(port_, "/v1/embeddings", body);
    ASSERT_TRUE(r) << body.dump();
    EXPECT_EQ(r->status, 400) << body.dump() << " -> " << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["param"], param) << r->body;
    if (!text.empty()) {
      EXPECT_NE(e["message"].get<std::string>().find(text), std::string::npos) << r->body;
    }
  };
  expect_400({{"model", "embed"}}, "input");
  expect_400({{"input", ""}}, "input");
  expect_400({{"input", json::array()}}, "input");
  expect_400({{"input", {"a", ""}}}, "input[1]");
  expect_400({{"input", {"a", 5}}}, "input[1]");
  expect_400({{"input", {{1, 2}, "b"}}}, "input[1]");
  expect_400({{"input", {{1, 2}, json::array()}}}, "input[1]");
  expect_400({{"input", {1, -2}}}, "input");
  expect_400({{"input", {{1, 999999999}}}}, "input[0]");
  expect_400({{"input", "x"}, {"encoding_format", "int8"}}, "encoding_format");
  expect_400({{"input", "x"}, {"dimensions", 0}}, "dimensions");
  expect_400({{"input", "x"}, {"dimensions", 65}}, "dimensions", "64");
  expect_400({{"input", "x"}, {"model", 3}}, "model");
  std::string big;
  for (int i = 0; i < 400; ++i) big += "word" + std::to_string(i) + " ";
  expect_400({{"input", {"short", big}}}, "input[1]", "tokens, more than the context of 256");
  std::vector<std::string> many(2049, "a");
  expect_400({{"input", many}}, "input");
  const auto r = post(port_, "/v1/embeddings", {{"input", "x"}});
  EXPECT_EQ(r->status, 200) << "the server still answers";
}

// A generative model (no pooling_type) serves embeddings only under --embeddings (mean pooling);
// an embedding model still serves chat (as llama-server: both when the model can).
TEST_F(EmbeddingsHttp, GenerativeModelNeedsTheFlagAndEmbeddingModelsStillChat) {
  serve(*plain_);
  auto r = post(port_, "/v1/embeddings", {{"input", "hello"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 501) << r->body;
  EXPECT_NE(r->body.find("--embeddings"), std::string::npos);
  serve(*plain_, 1024, /*embeddings_flag=*/true);
  const auto v = vectors_of(post(port_, "/v1/embeddings", {{"input", {"hello", "world"}}}));
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NEAR(l2_norm(v[0]), 1.0, 1e-5);
  serve(*last_);
  r = post(port_, "/v1/chat/completions",
           {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 4}, {"temperature", 0}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(EmbeddingsHttp, SixteenEmbeddingRequestsBesideFourChatStreams) {
  serve(*last_);
  std::vector<std::vector<std::string>> inputs;
  std::vector<std::vector<std::vector<float>>> alone;
  for (int i = 0; i < 16; ++i) {
    inputs.push_back({kTexts[size_t(i) % 3] + " #" + std::to_string(i), "request " + std::to_string(i)});
    alone.push_back(vectors_of(post(port_, "/v1/embeddings", {{"input", inputs.back()}})));
  }
  std::vector<std::future<std::string>> chats;
  for (int i = 0; i < 4; ++i) {
    chats.push_back(std::async(std::launch::async, [this, i] {
      httplib::Client c("127.0.0.1", port_);
      c.set_read_timeout(300, 0);
      const json b = {{"messages", {{{"role", "user"}, {"content", "Tell story " + std::to_string(i)}}}},
                      {"max_tokens", 32}, {"temperature", 0}, {"stream", true}};
      auto r = c.Post("/v1/chat/completions", b.dump(), "application/json");
      if (!r) return std::string("no response");
      if (r->status != 200) return std::to_string(r->status) + " " + r->body;
      if (r->body.find("[DONE]") == std::string::npos || r->body.find("\"error\"") != std::string::npos)
        return "bad stream: " + r->body.substr(0, 300);
      return std::string();
    }));
  }
  std::vector<std::future<std::vector<std::vector<float>>>> embeds;
  for (int i = 0; i < 16; ++i) {
    embeds.push_back(std::async(std::launch::async, [this, &inputs, i] {
      return vectors_of(post(port_, "/v1/embeddings", {{"input", inputs[size_t(i)]}}));
    }));
  }
  for (int i = 0; i < 16; ++i) {
    const auto got = embeds[size_t(i)].get();
    ASSERT_EQ(got.size(), 2u) << "request " << i;
    for (size_t k = 0; k < 2; ++k) EXPECT_GT(cosine(got[k], alone[size_t(i)][k]), 0.99999) << "request " << i;
  }
  for (auto& f : chats) EXPECT_EQ(f.get(), "") << "a chat stream failed";
  EXPECT_EQ(server_->health()["requests_processing"], 0);
}

}  // namespace
}  // namespace anelm::server
