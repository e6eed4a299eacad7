// Concurrency over loopback: many clients, a full queue, disconnects mid-stream and during prefill.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <future>
#include <random>
#include <sstream>
#include <thread>

#include "test_server.h"

namespace anelm::testing {
namespace {

using nlohmann::json;

bool wait_until(const std::function<bool()>& cond, int ms) {
  for (int i = 0; i < ms; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return cond();
}

std::string completion_text(const TestServer& s, const std::string& prompt, bool stream) {
  json req = {{"prompt", prompt}, {"max_tokens", 64}, {"stream", stream}};
  auto r = s.post("/v1/completions", req);
  if (!r) return "<no response: " + httplib::to_string(r.error()) + ">";
  if (r->status != 200) return "<status " + std::to_string(r->status) + ">";
  if (!stream) return json::parse(r->body)["choices"][0]["text"];
  std::string text;
  for (const std::string& p : sse_payloads(r->body))
    if (p != "[DONE]") text += json::parse(p)["choices"][0]["text"].get<std::string>();
  return text;
}

TEST(HttpConcurrency, SixteenClientsGetTheirOwnAnswers) {
  FakeScript sc;
  sc.token_ms = 1;
  TestServer s(sc);
  std::vector<std::future<std::string>> futs;
  for (int i = 0; i < 16; ++i)
    futs.push_back(std::async(std::launch::async, [&s, i] {
      return completion_text(s, "client " + std::to_string(i) + " says hi", i % 2 == 0);
    }));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(futs[i].get(), "client " + std::to_string(i) + " says hi");
  EXPECT_EQ(s.engine().max_running.load(), 1);
}

// Streams with a receiver that gives up after `n` data chunks (closing the connection).
int stream_and_abort(const TestServer& s, int n, std::atomic<bool>* got_data = nullptr) {
  auto c = s.client();
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = {{"Content-Type", "application/json"}};
  req.body = json{{"prompt", "zz"}, {"max_tokens", 200}, {"stream", true}}.dump();
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
    if (got_data) *got_data = true;
    return ++chunks < n;
  };
  auto res = c.send(req);
  return chunks;
}

TEST(HttpConcurrency, QueueFullGets429WithRetryAfterNeverHangs) {
  FakeScript sc;
  sc.endless = true;
  sc.token_ms = 20;
  auto o = test_options();
  o.max_queue = 1;
  TestServer s(sc, o);
  std::atomic<bool> a_started{false}, b_started{false};
  std::thread a([&] { stream_and_abort(s, 100000, &a_started); });
  ASSERT_TRUE(wait_until([&] { return a_started.load(); }, 3000));
  std::thread b([&] { stream_and_abort(s, 100000, &b_started); });
  ASSERT_TRUE(wait_until([&] { return s.context().worker().queue_depth() == 1; }, 3000));
  auto t0 = std::chrono::steady_clock::now();
  auto r = s.post("/v1/completions", {{"prompt", "c"}, {"max_tokens", 5}});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(r->body)["error"]["type"], "rate_limit_error");
  s.context().drain(std::chrono::milliseconds(0));  // cancels both streams
  a.join();
  b.join();
}

TEST(HttpConcurrency, ClientKilledMidStreamIsCancelledOthersUndisturbed) {
  FakeScript sc;
  sc.endless = true;
  sc.token_ms = 5;
  TestServer s(sc);
  std::thread killer([&] { stream_and_abort(s, 3); });
  killer.join();
  ASSERT_TRUE(wait_until([&] { return s.engine().cancelled.load() == 1; }, 2000))
      << "the abandoned job was not cancelled";
  ASSERT_TRUE(wait_until([&] { return s.context().worker().active() == 0; }, 1000));
  s.engine().script().endless = false;
  EXPECT_EQ(completion_text(s, "still fine", true), "still fine");
  EXPECT_EQ(completion_text(s, "also fine", false), "also fine");
}

// The request's log line says how far an abandoned stream got: its prompt and the tokens it was sent
// (it used to say prompt=0 completion=0, as if nothing had run).
TEST(HttpConcurrency, AbandonedStreamIsLoggedWithItsPromptAndTokens) {
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out)));
  std::string line;
  {
    FakeScript sc;
    sc.endless = true;
    sc.token_ms = 5;
    TestServer s(sc);
    stream_and_abort(s, 4);
    wait_until([&] { return out.str().find("client disconnected") != std::string::npos; }, 3000);
  }
  spdlog::set_default_logger(previous);
  std::istringstream lines(out.str());
  while (std::getline(lines, line) && line.find("client disconnected") == std::string::npos) {}
  ASSERT_NE(line.find("client disconnected"), std::string::npos) << out.str();
  EXPECT_NE(line.find(" prompt=2 "), std::string::npos) << line;  // "zz": two byte tokens
  EXPECT_EQ(line.find(" completion=0 "), std::string::npos) << line;
}

TEST(HttpConcurrency, DisconnectDuringPrefillCancels) {
  FakeScript sc;
  sc.prefill_ms = 10000;
  TestServer s(sc);
  std::thread t([&] {
    auto c = s.client();
    c.set_read_timeout(0, 300 * 1000);  // give up while the server is still in prefill
    c.Post("/v1/completions", json{{"prompt", "a"}, {"stream", true}}.dump(), "application/json");
  });
  t.join();
  EXPECT_TRUE(wait_until([&] { return s.engine().cancelled.load() == 1; }, 3000));
  EXPECT_EQ(s.context().worker().active(), 0);
}

// A non-streamed response writes nothing until the end, so only the socket watch can see the
// hang-up: during decode and during prefill.
TEST(HttpConcurrency, NonStreamingClientGoneIsCancelled) {
  for (bool in_prefill : {false, true}) {
    FakeScript sc;
    sc.endless = !in_prefill;
    sc.token_ms = 5;
    sc.prefill_ms = in_prefill ? 10000 : 0;
    TestServer s(sc);
    std::thread t([&] {
      auto c = s.client();
      c.set_read_timeout(0, 300 * 1000);
      c.Post("/v1/completions", json{{"prompt", "a"}, {"max_tokens", 200}}.dump(), "application/json");
    });
    t.join();
    EXPECT_TRUE(wait_until([&] { return s.engine().cancelled.load() == 1; }, 3000))
        << (in_prefill ? "prefill" : "decode") << ": the abandoned job was not cancelled";
    EXPECT_TRUE(wait_until([&] { return s.context().worker().active() == 0; }, 1000));
  }
}

TEST(HttpConcurrency, DrainEndsStreamsWithAnError) {
  FakeScript sc;
  sc.endless = true;
  sc.token_ms = 5;
  TestServer s(sc);
  std::string body;
  std::thread t([&] {
    auto r = s.post("/v1/completions", {{"prompt", "ab"}, {"max_tokens", 200}, {"stream", true}});
    if (r) body = r->body;
  });
  ASSERT_TRUE(wait_until([&] { return s.engine().started.load() == 1; }, 2000));
  s.context().drain(std::chrono::milliseconds(50));
  t.join();
  auto payloads = sse_payloads(body);
  ASSERT_FALSE(payloads.empty());
  EXPECT_TRUE(json::parse(payloads.back()).contains("error"));
  auto r = s.post("/v1/completions", {{"prompt", "a"}});
  EXPECT_EQ(r->status, 503);
  EXPECT_TRUE(r->has_header("Retry-After"));
}

// 16 clients x 100 requests, streamed and not, about one in ten abandoned mid-stream, then a drain:
// no 5xx, every finished answer is whole and its own, every finished stream ends with [DONE].
TEST(HttpConcurrency, SixteenClientsHundredRequestsWithDisconnectsThenDrain) {
  FakeScript sc;
  TestServer s(sc);
  std::atomic<int> bad{0}, ok{0}, aborted{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(static_cast<unsigned>(c));
      for (int i = 0; i < 100; ++i) {
        const int kind = static_cast<int>(rng() % 10);
        if (kind == 0) {
          stream_and_abort(s, 1 + static_cast<int>(rng() % 3));
          ++aborted;
          continue;
        }
        const std::string prompt = "c" + std::to_string(c) + " r" + std::to_string(i);
        const bool stream = kind % 2 == 0;
        json req = {{"prompt", prompt}, {"max_tokens", 64}, {"stream", stream}};
        auto r = s.post("/v1/completions", req);
        if (!r || r->status >= 500) {
          ++bad;
          continue;
        }
        if (r->status == 429) continue;  // the queue was full: refused cleanly, nothing lost
        std::string text;
        if (stream) {
          const auto payloads = sse_payloads(r->body);
          if (payloads.empty() || payloads.back() != "[DONE]") {
            ++bad;
            continue;
          }
          for (const std::string& p : payloads)
            if (p != "[DONE]") text += json::parse(p)["choices"][0]["text"].get<std::string>();
        } else {
          text = json::parse(r->body)["choices"][0]["text"];
        }
        (text == prompt ? ok : bad)++;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(ok.load(), 1000);
  EXPECT_GT(aborted.load(), 50);
  ASSERT_TRUE(wait_until([&] { return s.context().worker().active() == 0; }, 5000));
  EXPECT_EQ(s.engine().max_running.load(), 1);
  s.context().drain(std::chrono::milliseconds(100));
  EXPECT_EQ(s.post("/v1/completions", {{"prompt", "late"}})->status, 503);
}

}  // namespace
}  // namespace anelm::testing
