// Continuous batching seen over HTTP: a real engine (stories260K, --parallel 4) behind the server.
// Concurrent clients, streamed and not, with stop strings and clients that hang up mid-stream, each
// get exactly the text their request gets when it runs alone; /health reports the slots.
#include <gtest/gtest.h>

#include <httplib.h>

#include <atomic>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "real_model_server.h"
#include "test_server.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

using nlohmann::json;

class BatchingHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    auto path = anelm::testing::shared_model("stories260K.gguf");
    if (!path) GTEST_SKIP() << "shared test data not found: stories260K.gguf";
    engine::EngineOptions e;
    e.model_path = path->string();
    e.threads = 2;
    e.ctx = 256;
    e.parallel = 4;
    e.max_batch = 32;  // longer prompts prefill in chunks between the running decodes
    server_ = std::make_unique<anelm::testing::RealModelServer>(e, "stories", 64);
    port_ = server_->port();
  }

  json body(const std::string& prompt, int max_tokens, bool stream, const std::string& stop = "") const {
    json b = {{"model", "stories"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0},
              {"stream", stream}};
    if (!stop.empty()) b["stop"] = stop;
    return b;
  }

  // Text and finish_reason of a completion, streamed or not.
  std::pair<std::string, std::string> complete(const json& b) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    auto r = c.Post("/v1/completions", b.dump(), "application/json");
    if (!r || r->status != 200) {
      ADD_FAILURE() << "request failed: " << (r ? r->body : "no response");
      return {};
    }
    if (!b["stream"].get<bool>()) {
      const json j = json::parse(r->body);
      return {j["choices"][0]["text"], j["choices"][0]["finish_reason"]};
    }
    std::string text, finish;
    for (const std::string& p : anelm::testing::sse_payloads(r->body)) {
      if (p == "[DONE]") continue;
      const json j = json::parse(p);
      if (j["choices"].empty()) continue;
      text += j["choices"][0]["text"].get<std::string>();
      if (!j["choices"][0]["finish_reason"].is_null()) finish = j["choices"][0]["finish_reason"];
    }
    return {text, finish};
  }

  // Streams and hangs up after `chunks` data chunks.
  void hang_up_after(const std::string& prompt, int chunks) const {
    httplib::Client c("127.0.0.1", port_);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = {{"Content-Type", "application/json"}};
    req.body = body(prompt, 200, true).dump();
    int seen = 0;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++seen < chunks; };
    c.send(req);
  }

  json health() const { return server_->health(); }

  std::unique_ptr<anelm::testing::RealModelServer> server_;
  int port_ = 0;
};

const char* kPrompts[] = {
    "Once upon a time there was a little girl named Lily.",
    "The dog ran to the park",
    "Tom had a big red ball. He liked to play with it every day in the garden with his sister and their cat.",
    "One day",
    "The sun was shining and the birds",
    "Sam and Mia went to the beach to",
};

TEST_F(BatchingHttp, ConcurrentClientsWithStopsAndHangUpsGetTheirOwnText) {
  const int n = static_cast<int>(std::size(kPrompts));
  // References: each request alone.
  std::vector<std::pair<std::string, std::string>> ref;
  for (int i = 0; i < n; ++i) ref.push_back(complete(body(kPrompts[i], 24, false)));
  const json h = health();
  EXPECT_EQ(h["parallel"], 4);
  EXPECT_EQ(h["backend_stats"]["parallel"], 4);

  // A stop string from the middle of a reference cuts that request there.
  const std::string& text2 = ref[2].first;
  ASSERT_GT(text2.size(), 12u);
  const std::string stop = text2.substr(text2.size() / 2, 4);
  const std::string cut = text2.substr(0, text2.find(stop));

  std::mt19937 rng(3);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::future<std::pair<std::string, std::string>>> futs;
    std::vector<std::thread> quitters;
    for (int i = 0; i < n; ++i) {
      const bool stream = (i + round) % 2 == 0;
      const std::string s = i == 2 ? stop : "";
      futs.push_back(std::async(std::launch::async, [this, i, stream, s] {
        return complete(body(kPrompts[i], 24, stream, s));
      }));
      if (rng() % 2 == 0) quitters.emplace_back([this, i] { hang_up_after(kPrompts[i], 3 + i); });
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 5));
    }
    for (int i = 0; i < n; ++i) {
      const auto got = futs[static_cast<size_t>(i)].get();
      if (i == 2) {
        EXPECT_EQ(got.first, cut) << "round " << round;
        EXPECT_EQ(got.second, "stop");
      } else {
        EXPECT_EQ(got, ref[static_cast<size_t>(i)]) << "request " << i << " round " << round;
      }
    }
    for (auto& t : quitters) t.join();
  }
  // n = 3 choices take three slots at once; greedy, each equals the request alone.
  json three = body(kPrompts[1], 24, false);
  three["n"] = 3;
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(60, 0);
  auto r = c.Post("/v1/completions", three.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 3u);
  for (const json& choice : j["choices"]) EXPECT_EQ(choice["text"], ref[1].first);

  // Every slot comes back: nothing runs, nothing waits.
  for (int i = 0; i < 200 && health()["requests_processing"] != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const json after = health();
  EXPECT_EQ(after["requests_processing"], 0);
  EXPECT_EQ(after["queue_depth"], 0);
  EXPECT_EQ(complete(body(kPrompts[0], 24, true)), ref[0]);
}

}  // namespace
}  // namespace anelm::server
