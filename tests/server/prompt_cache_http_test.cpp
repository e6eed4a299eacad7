// The prompt cache seen over HTTP: a real engine (stories260K) behind the server; chat completions
// sharing a long system prompt report usage.prompt_tokens_details.cached_tokens, and /health shows
// the cache.
#include <gtest/gtest.h>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "real_model_server.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

using nlohmann::json;

class PromptCacheHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    auto path = anelm::testing::shared_model("stories260K.gguf");
    if (!path) GTEST_SKIP() << "shared test data not found: stories260K.gguf";
    engine::EngineOptions e;
    e.model_path = path->string();
    e.threads = 2;
    e.ctx = 512;
    e.prompt_cache_bytes = 8 << 20;
    server_ = std::make_unique<anelm::testing::RealModelServer>(e, "stories");
    port_ = server_->port();
  }
  json chat(const std::string& user) {
    json body = {{"model", "stories"},
                 {"max_tokens", 8},
                 {"temperature", 0},
                 {"messages",
                  {{{"role", "system"},
                    {"content", "Once upon a time there was a little girl named Lily who loved to play in the "
                                "park with her big red ball and her friend the happy dog."}},
                   {{"role", "user"}, {"content", user}}}}};
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30, 0);
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }
  json health() { return server_->health(); }

  std::unique_ptr<anelm::testing::RealModelServer> server_;
  int port_ = 0;
};

TEST_F(PromptCacheHttp, SharedSystemPromptIsReportedAsCached) {
  const json a1 = chat("Tell me about the ball.");
  const json b1 = chat("What did the dog do?");
  const json a2 = chat("Tell me about the ball.");
  const json b2 = chat("What did the dog do?");
  const auto cached = [](const json& r) { return r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(); };
  const auto prompt = [](const json& r) { return r["usage"]["prompt_tokens"].get<int>(); };
  EXPECT_EQ(cached(a1), 0);
  EXPECT_GT(cached(b1), 20);  // the system prompt, still in the active KV
  EXPECT_LT(cached(b1), prompt(b1) - 1);
  // Each client's whole prompt but its last token comes back from the prompt cache.
  EXPECT_EQ(cached(a2), prompt(a2) - 1);
  EXPECT_EQ(cached(b2), prompt(b2) - 1);
  EXPECT_EQ(a2["choices"][0]["message"]["content"], a1["choices"][0]["message"]["content"]);
  EXPECT_EQ(b2["choices"][0]["message"]["content"], b1["choices"][0]["message"]["content"]);
  const json h = health();
  EXPECT_EQ(h["prompt_cache"]["budget_bytes"], 8 << 20);
  EXPECT_EQ(h["prompt_cache"]["entries"], 2);
  EXPECT_EQ(h["prompt_cache"]["hits"], 2);
  EXPECT_GT(h["prompt_cache"]["bytes"].get<int64_t>(), 0);
  EXPECT_LE(h["prompt_cache"]["bytes"].get<int64_t>(), 8 << 20);
}

}  // namespace
}  // namespace anelm::server
