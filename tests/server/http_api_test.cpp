// Loopback HTTP tests of every endpoint against an in-process server backed by the fake engine.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "test_server.h"

namespace anelm::testing {
namespace {

using nlohmann::json;

json body_of(const httplib::Result& r) { return json::parse(r->body); }

// Concatenated text of a completions or chat stream; checks the framing on the way.
std::string stream_text(const std::string& body, bool chat, json* usage = nullptr,
                        std::string* finish = nullptr) {
  auto payloads = sse_payloads(body);
  EXPECT_FALSE(payloads.empty());
  EXPECT_EQ(payloads.back(), "[DONE]");
  std::string text, id;
  for (size_t i = 0; i + 1 < payloads.size(); ++i) {
    json c = json::parse(payloads[i]);
    if (id.empty()) id = c["id"];
    EXPECT_EQ(c["id"], id) << "every chunk carries the same id";
    EXPECT_EQ(c["object"], chat ? "chat.completion.chunk" : "text_completion");
    if (c["choices"].empty()) {
      if (usage) *usage = c["usage"];
      continue;
    }
    const json& ch = c["choices"][0];
    if (chat && ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
    if (!chat) text += ch["text"].get<std::string>();
    if (!ch["finish_reason"].is_null() && finish) *finish = ch["finish_reason"];
  }
  return text;
}

TEST(HttpApi, HealthLoadingThenReady) {
  TestServer s({}, test_options(), /*ready=*/false);
  auto r = s.client().Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(body_of(r)["status"], "loading");
  EXPECT_TRUE(r->has_header("Retry-After"));
  auto c = s.post("/v1/completions", {{"prompt", "x"}});
  EXPECT_EQ(c->status, 503);
  EXPECT_EQ(body_of(c)["error"]["type"], "unavailable_error");
  s.make_ready();
  r = s.client().Get("/health");
  ASSERT_EQ(r->status, 200);
  json h = body_of(r);
  EXPECT_EQ(h["status"], "ok");
  EXPECT_EQ(h["model"], "fake-model");
  EXPECT_EQ(h["backend"], "fake");
  EXPECT_EQ(h["n_ctx"], 256);
  EXPECT_EQ(h["queue_depth"], 0);
  EXPECT_TRUE(h.contains("uptime_s"));
  EXPECT_EQ(h["backend_stats"]["isa"], "scalar");
  EXPECT_TRUE(r->has_header("x-request-id"));
}

TEST(HttpApi, Models) {
  TestServer s;
  auto r = s.client().Get("/v1/models");
  ASSERT_EQ(r->status, 200);
  json m = body_of(r);
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "fake-model");
  EXPECT_EQ(m["data"][0]["object"], "model");
  EXPECT_EQ(s.client().Get("/v1//models/")->status, 200);  // Open WebUI's double slash
  EXPECT_EQ(s.client().Get("/v1/models/fake-model")->status, 200);
  EXPECT_EQ(s.client().Get("/v1/models/other")->status, 404);
}

TEST(HttpApi, CompletionNonStreaming) {
  TestServer s;
  auto r = s.post("/v1/completions", {{"model", "fake-model"}, {"prompt", "hello"}, {"max_tokens", 16}});
  ASSERT_EQ(r->status, 200);
  json b = body_of(r);
  EXPECT_EQ(b["object"], "text_completion");
  EXPECT_EQ(b["model"], "fake-model");
  EXPECT_EQ(b["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(b["choices"][0]["text"], "hello");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(b["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(b["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(b["usage"]["completion_tokens"], 5);
  EXPECT_EQ(b["usage"]["total_tokens"], 10);
}

TEST(HttpApi, CompletionLengthStopEchoIdsAndZero) {
  TestServer s;
  json b = body_of(s.post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 3}}));
  EXPECT_EQ(b["choices"][0]["text"], "hel");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "length");
  b = body_of(s.post("/v1/completions", {{"prompt", "hello world"}, {"stop", {"o w", "zz"}}}));
  EXPECT_EQ(b["choices"][0]["text"], "hell");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "stop");
  b = body_of(s.post("/v1/completions", {{"prompt", "abc"}, {"echo", true}}));
  EXPECT_EQ(b["choices"][0]["text"], "abcabc");
  b = body_of(s.post("/v1/completions", {{"prompt", {104, 105}}}));
  EXPECT_EQ(b["choices"][0]["text"], "hi");
  b = body_of(s.post("/v1/completions", {{"prompt", "abc"}, {"max_tokens", 0}}));
  EXPECT_EQ(b["choices"][0]["text"], "");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(s.post("/v1/completions", {{"prompt", {999}}})->status, 400);
}

TEST(HttpApi, CompletionStreamingEqualsNonStreaming) {
  TestServer s;
  const std::string prompt = "h\xc3\xa9llo \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80!";  // split across byte tokens
  json req = {{"prompt", prompt}, {"max_tokens", 64}, {"temperature", 0}};
  std::string full = body_of(s.post("/v1/completions", req))["choices"][0]["text"];
  EXPECT_EQ(full, prompt);
  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  auto r = s.post("/v1/completions", req);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type").rfind("text/event-stream", 0), 0u);
  json usage;
  std::string finish;
  EXPECT_EQ(stream_text(r->body, false, &usage, &finish), full);
  EXPECT_EQ(finish, "stop");
  EXPECT_EQ(usage["completion_tokens"], static_cast<int>(prompt.size()));
}

// n choices: each its own job and index; usage counts the prompt once and every completion.
TEST(HttpApi, SeveralChoicesStreamedAndNot) {
  FakeScript sc;
  sc.reply = "Hey";
  TestServer s(sc);
  json req = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"n", 3}};
  json b = body_of(s.post("/v1/chat/completions", req));
  ASSERT_EQ(b["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b["choices"][i]["index"], i);
    EXPECT_EQ(b["choices"][i]["message"]["content"], "Hey");
  }
  EXPECT_EQ(b["usage"]["completion_tokens"], 9);
  EXPECT_EQ(s.engine().started.load(), 3);
  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  auto r = s.post("/v1/chat/completions", req);
  ASSERT_EQ(r->status, 200);
  std::map<int, std::string> text;
  std::map<int, std::string> finish;
  int done = 0;
  json usage;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line == "data: [DONE]") ++done;
    if (line.rfind("data: {", 0) != 0) continue;
    json c = json::parse(line.substr(6));
    if (c.contains("usage") && c["usage"].is_object()) usage = c["usage"];
    for (const json& ch : c["choices"]) {
      const int i = ch["index"];
      if (ch["delta"].contains("content")) text[i] += ch["delta"]["content"].get<std::string>();
      if (!ch["finish_reason"].is_null()) finish[i] = ch["finish_reason"];
    }
  }
  EXPECT_EQ(done, 1);
  ASSERT_EQ(text.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(text[i], "Hey");
    EXPECT_EQ(finish[i], "stop");
  }
  EXPECT_EQ(usage["completion_tokens"], 9);
}

TEST(HttpApi, StreamStopStringNeverEmitted) {
  TestServer s;
  json req = {{"prompt", "one two##three"}, {"stop", "##"}, {"stream", true}};
  std::string finish;
  EXPECT_EQ(stream_text(s.post("/v1/completions", req)->body, false, nullptr, &finish), "one two");
  EXPECT_EQ(finish, "stop");
  // Ending on a stop string is a normal finish, not a cancellation (streamed or not).
  req["stream"] = false;
  EXPECT_EQ(body_of(s.post("/v1/completions", req))["choices"][0]["finish_reason"], "stop");
  const std::string metrics = s.client().Get("/metrics")->body;
  EXPECT_NE(metrics.find("anelm_generations_total 2\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("anelm_generations_cancelled_total 0\n"), std::string::npos) << metrics;
}

TEST(HttpApi, ChatNonStreamingAndStreaming) {
  FakeScript sc;
  sc.reply = "Hello there!";
  TestServer s(sc);
  json req = {{"model", "x"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  auto r = s.post("/v1/chat/completions", req);
  ASSERT_EQ(r->status, 200);
  json b = body_of(r);
  EXPECT_EQ(b["object"], "chat.completion");
  EXPECT_EQ(b["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(b["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(b["choices"][0]["message"]["content"], "Hello there!");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "stop");
  // Rendered with ChatML: the prompt is the template text, tokenised with special tokens.
  EXPECT_GT(b["usage"]["prompt_tokens"].get<int>(), 10);

  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  r = s.post("/v1/chat/completions", req);
  auto payloads = sse_payloads(r->body);
  ASSERT_GE(payloads.size(), 5u);
  json first = json::parse(payloads[0]);
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  json last_choice = json::parse(payloads[payloads.size() - 3]);
  EXPECT_EQ(last_choice["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(last_choice["choices"][0]["delta"].empty());
  json usage_chunk = json::parse(payloads[payloads.size() - 2]);
  EXPECT_TRUE(usage_chunk["choices"].empty());
  EXPECT_EQ(usage_chunk["usage"]["completion_tokens"], 12);
  EXPECT_EQ(stream_text(r->body, true), "Hello there!");
  req["max_completion_tokens"] = 5;
  req.erase("stream");
  req.erase("stream_options");
  b = body_of(s.post("/v1/chat/completions", req));
  EXPECT_EQ(b["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "length");
}

TEST(HttpApi, Logprobs) {
  TestServer s;
  json b = body_of(s.post("/v1/completions", {{"prompt", "ab"}, {"logprobs", 2}}));
  const json& lp = b["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"a", "b"}));
  EXPECT_EQ(lp["text_offset"], json({0, 1}));
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  FakeScript sc;
  sc.reply = "ok";
  TestServer c(sc);
  b = body_of(c.post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}},
                                              {"logprobs", true}, {"top_logprobs", 1}}));
  EXPECT_EQ(b["choices"][0]["logprobs"]["content"][1]["token"], "k");
}

TEST(HttpApi, TokenizeDetokenizeMetrics) {
  TestServer s;
  json t = body_of(s.post("/tokenize", {{"content", "ab<|im_end|>"}}));
  EXPECT_EQ(t["tokens"], json({97, 98, 259}));
  t = body_of(s.post("/tokenize", {{"content", "a"}, {"with_pieces", true}}));
  EXPECT_EQ(t["tokens"][0]["piece"], "a");
  json d = body_of(s.post("/detokenize", {{"tokens", {104, 105}}}));
  EXPECT_EQ(d["content"], "hi");
  s.post("/v1/completions", {{"prompt", "abc"}});
  auto m = s.client().Get("/metrics");
  ASSERT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("anelm_requests_total"), std::string::npos);
  EXPECT_NE(m->body.find("anelm_tokens_predicted_total 3"), std::string::npos);
  // Histograms (cumulative buckets ending in +Inf == count) and per-route counters by status.
  for (const char* h : {"time_to_first_token_seconds", "time_per_output_token_seconds", "queue_wait_seconds"}) {
    const std::string name = std::string("anelm_") + h;
    EXPECT_NE(m->body.find("# TYPE " + name + " histogram"), std::string::npos) << h;
    EXPECT_NE(m->body.find(name + "_bucket{le=\"+Inf\"} 1\n"), std::string::npos) << h;
    EXPECT_NE(m->body.find(name + "_count 1\n"), std::string::npos) << h;
  }
  EXPECT_NE(m->body.find("anelm_request_duration_seconds_count 4\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("anelm_http_requests_total{route=\"/v1/completions\",status=\"200\"} 1\n"), std::string::npos);
  EXPECT_NE(m->body.find("anelm_http_requests_total{route=\"/tokenize\",status=\"200\"} 2\n"), std::string::npos);
  EXPECT_NE(m->body.find("anelm_queue_depth 0"), std::string::npos);
  EXPECT_NE(m->body.find("anelm_predicted_tokens_seconds"), std::string::npos);
}

TEST(HttpApi, ApiKey) {
  auto o = test_options();
  o.api_key = "sekret";
  TestServer s({}, o);
  auto r = s.post("/v1/completions", {{"prompt", "a"}});
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(body_of(r)["error"]["type"], "authentication_error");
  auto c = s.client();
  c.set_bearer_token_auth("wrong");
  EXPECT_EQ(c.Post("/v1/completions", R"({"prompt":"a"})", "application/json")->status, 401);
  c.set_bearer_token_auth("sekret");
  EXPECT_EQ(c.Post("/v1/completions", R"({"prompt":"a"})", "application/json")->status, 200);
  httplib::Headers h = {{"X-Api-Key", "sekret"}};
  EXPECT_EQ(s.client().Post("/v1/completions", h, R"({"prompt":"a"})", "application/json")->status, 200);
  EXPECT_EQ(s.client().Get("/health")->status, 200);
  EXPECT_EQ(s.client().Get("/v1/models")->status, 200);
  EXPECT_EQ(s.client().Get("/metrics")->status, 401);
}

TEST(HttpApi, HostHeaderAndCors) {
  auto o = test_options();
  o.cors_origins = {"http://app.local"};
  TestServer s({}, o);
  auto evil = s.client().Get("/health", {{"Host", "evil.example:8080"}});
  EXPECT_EQ(evil->status, 403);
  EXPECT_EQ(s.client().Get("/health", {{"Host", "localhost:1234"}})->status, 200);
  auto ok = s.client().Get("/v1/models", {{"Origin", "http://app.local"}});
  EXPECT_EQ(ok->get_header_value("Access-Control-Allow-Origin"), "http://app.local");
  auto other = s.client().Get("/v1/models", {{"Origin", "http://evil.example"}});
  EXPECT_FALSE(other->has_header("Access-Control-Allow-Origin"));
  auto pre = s.client().Options("/v1/chat/completions", {{"Origin", "http://app.local"}});
  EXPECT_EQ(pre->status, 204);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "http://app.local");
  EXPECT_EQ(s.client().Options("/v1/chat/completions", {{"Origin", "http://evil.example"}})->status, 403);
}

TEST(HttpApi, RoutingErrors) {
  TestServer s;
  auto r = s.client().Get("/v1/completions");
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  EXPECT_EQ(body_of(r)["error"]["type"], "invalid_request_error");
  r = s.client().Get("/nope");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(body_of(r)["error"]["type"], "not_found_error");
  r = s.client().Post("/v1/completions", R"({"prompt":"a"})", "text/plain");
  EXPECT_EQ(r->status, 415);
}

TEST(HttpApi, ContextOverflowIs400BeforeAnyWork) {
  TestServer s;
  // A prompt that leaves no room (a max_tokens beyond the room is clamped instead, see openai_compat_http_test).
  auto r = s.post("/v1/completions", {{"prompt", std::string(300, 'a')}, {"max_tokens", 100}});
  ASSERT_EQ(r->status, 400);
  EXPECT_EQ(body_of(r)["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(s.engine().started.load(), 0);
}

}  // namespace
}  // namespace anelm::testing
