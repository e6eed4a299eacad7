// What agents and SDKs send to the OpenAI surface, over HTTP with the scripted engine: output caps
// clamped to the context (and the prompt-too-long error agents parse), logit_bias validation,
// several prompts per completion, system_fingerprint, ignored and refused fields, the generic
// tool-call fallback for templates without tools, continuing a final assistant message, the
// completions `system` extension and SSE keep-alives. logit_bias's effect on a real model is at the end.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "engine/engine.h"
#include "real_model_server.h"
#include "test_server.h"
#include "tests/support/shared_data.h"

namespace anelm::testing {
namespace {

using nlohmann::json;

json chat(const std::string& user, int max_tokens) {
  return {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", user}}}}, {"max_tokens", max_tokens}};
}

std::string header(const httplib::Result& r, const char* name) {
  return r->has_header(name) ? r->get_header_value(name) : std::string("<absent>");
}

TEST(OpenAiCompat, OutputCapLargerThanTheContextIsClampedAndSaid) {
  FakeScript script;
  script.reply = "x";
  script.endless = true;
  script.ctx = 256;
  TestServer s(script);
  for (bool stream : {false, true}) {
    json req = chat("hello", 128000);  // what claude sends after a length stop
    req["stream"] = stream;
    req["stream_options"] = {{"include_usage", true}};
    auto r = s.post("/v1/chat/completions", req);
    ASSERT_EQ(r->status, 200) << r->body;
    const std::string clamped = header(r, "X-Anelm-Max-Tokens-Clamped");
    ASSERT_NE(clamped, "<absent>");
    json usage, finish;
    if (!stream) {
      const json b = json::parse(r->body);
      usage = b["usage"];
      finish = b["choices"][0]["finish_reason"];
    } else {
      for (const std::string& p : sse_payloads(r->body)) {
        if (p == "[DONE]") continue;
        const json c = json::parse(p);
        if (c.contains("usage") && c["usage"].is_object()) usage = c["usage"];
        if (!c["choices"].empty() && !c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
      }
    }
    EXPECT_EQ(finish, "length");
    // The answer ran to the context end: prompt + completion == the context.
    EXPECT_EQ(usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>(), 256) << usage.dump();
    EXPECT_EQ(std::to_string(usage["completion_tokens"].get<int>()), clamped);
  }
  // A cap that fits is the client's, with no header.
  auto fits = s.post("/v1/chat/completions", chat("hello", 5));
  ASSERT_EQ(fits->status, 200);
  EXPECT_EQ(header(fits, "X-Anelm-Max-Tokens-Clamped"), "<absent>");
  EXPECT_EQ(json::parse(fits->body)["usage"]["completion_tokens"], 5);
  // Completions too.
  auto c = s.post("/v1/completions", {{"prompt", "abc"}, {"max_tokens", 1000}});
  ASSERT_EQ(c->status, 200);
  EXPECT_EQ(header(c, "X-Anelm-Max-Tokens-Clamped"), "253");
  EXPECT_EQ(json::parse(c->body)["usage"]["completion_tokens"], 253);
}

TEST(OpenAiCompat, PromptTooLongIsContextLengthExceededInTheShapeAgentsParse) {
  FakeScript script;
  script.ctx = 256;
  TestServer s(script);
  const std::regex shape(R"(prompt is too long \((\d+) tokens > (\d+) )");
  for (const auto& [path, body, param] :
       {std::tuple<const char*, json, const char*>{"/v1/completions", json{{"prompt", std::string(300, 'a')}}, "prompt"},
        {"/v1/chat/completions", chat(std::string(300, 'a'), 10), "messages"}}) {
    auto r = s.post(path, body);
    ASSERT_EQ(r->status, 400) << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["code"], "context_length_exceeded");
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_EQ(e["param"], param);
    std::smatch m;
    const std::string msg = e["message"];
    ASSERT_TRUE(std::regex_search(msg, m, shape)) << msg;
    EXPECT_GE(std::stoi(m[1]), 300);
    EXPECT_EQ(std::stoi(m[2]), 255);
  }
  // Exactly the most that fits (255 tokens) works and answers one token.
  auto edge = s.post("/v1/completions", {{"prompt", std::string(255, 'a')}, {"max_tokens", 50}});
  ASSERT_EQ(edge->status, 200) << edge->body;
  EXPECT_EQ(json::parse(edge->body)["usage"]["completion_tokens"], 1);
  auto over = s.post("/v1/completions", {{"prompt", std::string(256, 'a')}});
  EXPECT_EQ(over->status, 400);
}

TEST(OpenAiCompat, LogitBiasIdsAreCheckedAgainstTheVocabulary) {
  TestServer s;  // fake vocabulary: 260 tokens
  json req = chat("hi", 4);
  req["logit_bias"] = {{"259", -100}, {"65", 3}};
  EXPECT_EQ(s.post("/v1/chat/completions", req)->status, 200);
  req["logit_bias"] = {{"260", 1}};
  auto r = s.post("/v1/chat/completions", req);
  ASSERT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "logit_bias.260");
  auto c = s.post("/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"1000", 5}}}});
  ASSERT_EQ(c->status, 400);
  EXPECT_EQ(json::parse(c->body)["error"]["param"], "logit_bias.1000");
  auto range = s.post("/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"5", -101}}}});
  ASSERT_EQ(range->status, 400);
  EXPECT_EQ(json::parse(range->body)["error"]["param"], "logit_bias.5");
}

TEST(OpenAiCompat, SeveralPromptsArePromptMajorChoices) {
  TestServer s;  // empty reply: the fake engine echoes each prompt's bytes
  json req = {{"prompt", {"ab", "cde"}}, {"n", 2}, {"max_tokens", 10}, {"echo", false}};
  auto r = s.post("/v1/completions", req);
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  ASSERT_EQ(b["choices"].size(), 4u);
  const char* expect[] = {"ab", "ab", "cde", "cde"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(b["choices"][i]["index"], i);
    EXPECT_EQ(b["choices"][i]["text"], expect[i]) << i;
  }
  EXPECT_EQ(b["usage"]["prompt_tokens"], 5);  // both prompts, once each
  EXPECT_EQ(b["usage"]["completion_tokens"], 10);

  // Token-id prompts, echoed, streamed.
  req = {{"prompt", {{104, 105}, {111, 107, 33}}}, {"max_tokens", 10}, {"echo", true}, {"stream", true}};
  auto st = s.post("/v1/completions", req);
  ASSERT_EQ(st->status, 200);
  std::map<int, std::string> text;
  std::map<int, std::string> finish;
  for (const std::string& p : sse_payloads(st->body)) {
    if (p == "[DONE]") continue;
    const json c = json::parse(p);
    for (const json& ch : c["choices"]) {
      text[ch["index"]] += ch["text"].get<std::string>();
      if (!ch["finish_reason"].is_null()) finish[ch["index"]] = ch["finish_reason"];
    }
  }
  EXPECT_EQ(text[0], "hihi");
  EXPECT_EQ(text[1], "ok!ok!");
  EXPECT_EQ(finish.size(), 2u);
  // A prompt out of the vocabulary is named.
  auto bad = s.post("/v1/completions", {{"prompt", {{1, 2}, {3, 999}}}});
  ASSERT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "prompt[1]");
}

TEST(OpenAiCompat, SystemFingerprintInBodiesAndChunksStableAcrossRequests) {
  TestServer s;
  std::set<std::string> seen;
  auto b = json::parse(s.post("/v1/chat/completions", chat("hi", 3))->body);
  ASSERT_TRUE(b.contains("system_fingerprint")) << b.dump();
  seen.insert(b["system_fingerprint"]);
  json sreq = chat("hi", 3);
  sreq["stream"] = true;
  for (const std::string& p : sse_payloads(s.post("/v1/chat/completions", sreq)->body))
    if (p != "[DONE]") seen.insert(json::parse(p).value("system_fingerprint", "<absent>"));
  auto c = json::parse(s.post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}})->body);
  seen.insert(c.value("system_fingerprint", "<absent>"));
  for (const std::string& p :
       sse_payloads(s.post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}, {"stream", true}})->body))
    if (p != "[DONE]") seen.insert(json::parse(p).value("system_fingerprint", "<absent>"));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen.begin()->rfind("fp_anelm_", 0), 0u) << *seen.begin();
}

TEST(OpenAiCompat, MeaninglessFieldsAreAcceptedOutputChangingOnesRefused) {
  TestServer s;
  json req = chat("hi", 3);
  req.update(json::parse(R"({"store": false, "metadata": {"a": "b"}, "user": "u", "service_tier": "auto",
      "prompt_cache_key": "k", "safety_identifier": "x", "verbosity": "low", "modalities": ["text"],
      "parallel_tool_calls": true, "reasoning_effort": "low", "stream_options": null, "brand_new_field": 1})"));
  auto ok = s.post("/v1/chat/completions", req);
  EXPECT_EQ(ok->status, 200) << ok->body;
  for (const char* f : {"audio", "prediction", "web_search_options"}) {
    json bad = chat("hi", 3);
    bad[f] = json::object();
    auto r = s.post("/v1/chat/completions", bad);
    ASSERT_EQ(r->status, 400) << f;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], f);
  }
}

// The fake model's template does not read `tools`: tools are described in the system prompt and
// the reply is the generic JSON form (before: a 400 "no tool-call syntax").
TEST(OpenAiCompat, TemplateWithoutToolsFallsBackToTheGenericToolFormat) {
  FakeScript script;
  script.reply = R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]})";
  script.ctx = 4096;
  TestServer s(script);
  const json req = json::parse(R"({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Paris?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]})");
  auto r = s.post("/v1/chat/completions", req);
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  EXPECT_EQ(b["choices"][0]["finish_reason"], "tool_calls");
  const json& calls = b["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << b.dump();
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));

  auto t = s.post("/apply-template", req);
  ASSERT_EQ(t->status, 200);
  const std::string prompt = json::parse(t->body)["prompt"];
  EXPECT_EQ(prompt.rfind("<|im_start|>system\nBe brief.\n\nYou may call these tools (JSON schemas):\n{\"name\": \"get_weather\"", 0), 0u)
      << prompt;
  // A follow-up turn: the call and its result as text the template can render.
  json turn2 = req;
  turn2["messages"].push_back(json::parse(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
      "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]})"));
  turn2["messages"].push_back(json::parse(R"({"role": "tool", "tool_call_id": "call_1", "content": "sunny"})"));
  const std::string p2 = json::parse(s.post("/apply-template", turn2)->body)["prompt"];
  EXPECT_NE(p2.find("<|im_start|>assistant\n{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]}<|im_end|>"),
            std::string::npos) << p2;
  EXPECT_NE(p2.find("<|im_start|>user\n{\"tool_response\": {\"tool_call_id\": \"call_1\", \"content\": \"sunny\"}}<|im_end|>"),
            std::string::npos) << p2;
  // tool_choice none: no tools described.
  json none = req;
  none["tool_choice"] = "none";
  const std::string p3 = json::parse(s.post("/apply-template", none)->body)["prompt"];
  EXPECT_EQ(p3.find("You may call these tools"), std::string::npos) << p3;
}

TEST(OpenAiCompat, FinalAssistantMessageIsContinued) {
  TestServer s;
  json req = json::parse(R"({"messages": [{"role": "user", "content": "Count"}, {"role": "assistant", "content": "1, 2,"}]})");
  const std::string head = "<|im_start|>user\nCount<|im_end|>\n<|im_start|>assistant\n1, 2,";
  // llama-server's default: a trailing assistant text is continued.
  EXPECT_EQ(json::parse(s.post("/apply-template", req)->body)["prompt"], head);
  req["continue_final_message"] = true;
  req["add_generation_prompt"] = false;
  EXPECT_EQ(json::parse(s.post("/apply-template", req)->body)["prompt"], head);
  req.erase("continue_final_message");
  EXPECT_EQ(json::parse(s.post("/apply-template", req)->body)["prompt"], head);
  // Asked explicitly for a new turn: the template's full rendering.
  req["add_generation_prompt"] = true;
  EXPECT_EQ(json::parse(s.post("/apply-template", req)->body)["prompt"],
            head + "<|im_end|>\n<|im_start|>assistant\n");
  // The generation continues it: the fake echoes the prompt's bytes, so the output ends with the prefix.
  json gen = json::parse(R"({"messages": [{"role": "user", "content": "Count"}, {"role": "assistant", "content": "1, 2,"}],
      "max_tokens": 100})");
  const std::string out = json::parse(s.post("/v1/chat/completions", gen)->body)["choices"][0]["message"]["content"];
  EXPECT_EQ(out, "user\nCount\nassistant\n1, 2,");
}

TEST(OpenAiCompat, CompletionsSystemFieldRendersAChatTurn) {
  TestServer s;  // echo: the output is the prompt's bytes without the special tokens
  auto r = s.post("/v1/completions", {{"prompt", "hello"}, {"system", "be brief"}, {"max_tokens", 200}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["choices"][0]["text"], "system\nbe brief\nuser\nhello\nassistant\n");
  auto plain = s.post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 200}});
  EXPECT_EQ(json::parse(plain->body)["choices"][0]["text"], "hello");
}

TEST(OpenAiCompat, KeepAlivePingWithinFiveSecondsByDefault) {
  EXPECT_LE(server::ServerOptions{}.sse_ping_s, 5);
  FakeScript script;
  script.prefill_ms = server::ServerOptions{}.sse_ping_s * 1000 + 700;
  TestServer s(script, [] {
    server::ServerOptions o = test_options();
    o.sse_ping_s = server::ServerOptions{}.sse_ping_s;
    return o;
  }());
  json req = {{"prompt", "x"}, {"max_tokens", 1}, {"stream", true}};
  auto c = s.client();
  c.set_read_timeout(30, 0);
  auto r = c.Post("/v1/completions", req.dump(), "application/json");
  ASSERT_TRUE(r);
  const size_t ping = r->body.find(": ping");
  ASSERT_NE(ping, std::string::npos) << r->body;
  EXPECT_LT(ping, r->body.find("data:"));
}

// logit_bias on a real model (stories260K, greedy): banning the token greedy picks changes the
// answer; +100 on a token makes it the whole answer.
TEST(OpenAiCompat, LogitBiasSteersARealModel) {
  auto path = shared_model("stories260K.gguf");
  if (!path) GTEST_SKIP() << "shared test data not found: stories260K.gguf";
  engine::EngineOptions e;
  e.model_path = path->string();
  e.threads = 2;
  e.ctx = 256;
  RealModelServer server(e, "stories");
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60, 0);
  auto complete = [&](const json& extra) {
    json b = {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 1}};
    b.update(extra);
    auto r = c.Post("/v1/completions", b.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
    return json::parse(r->body)["choices"][0];
  };
  // The piece of a token id, as /tokenize reports it (the same bytes as logprobs tokens).
  auto piece_of = [&](const std::string& text) {
    auto r = c.Post("/tokenize", json{{"content", text}, {"with_pieces", true}}.dump(), "application/json");
    return json::parse(r->body)["tokens"];
  };
  const json plain = complete(json::object());
  // A token greedy picked whose piece /tokenize maps back to one id (SentencePiece adds the leading
  // space itself, so " there" is looked up as "there").
  std::string picked;
  int picked_id = -1;
  for (const json& t : plain["logprobs"]["tokens"]) {
    const std::string text = t.get<std::string>();
    const json ids = piece_of(!text.empty() && text[0] == ' ' ? text.substr(1) : text);
    if (ids.size() == 1 && ids[0]["piece"] == t) {
      picked = t;
      picked_id = ids[0]["id"];
      break;
    }
  }
  ASSERT_GE(picked_id, 0) << plain.dump();
  const json banned = complete({{"logit_bias", {{std::to_string(picked_id), -100}}}});
  ASSERT_EQ(banned["logprobs"]["tokens"].size(), 6u);
  for (const json& t : banned["logprobs"]["tokens"]) EXPECT_NE(t, picked);  // at every step
  EXPECT_NE(banned["text"], plain["text"]);
  // +100 on a token greedy never picked here: it is every token of the answer.
  const json forced_piece = piece_of("dog");
  ASSERT_GE(forced_piece.size(), 1u);
  const int id = forced_piece[0]["id"];
  const json forced = complete({{"logit_bias", {{std::to_string(id), 100}}}});
  ASSERT_EQ(forced["logprobs"]["tokens"].size(), 6u);
  for (const json& t : forced["logprobs"]["tokens"]) EXPECT_EQ(t, forced_piece[0]["piece"]);
}

}  // namespace
}  // namespace anelm::testing
