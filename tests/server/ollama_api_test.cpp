// Ollama's API: the request translation (checked against the chat parser's own reading of the
// equivalent OpenAI request), the NDJSON stream (assembled as ollama-js does, it must equal the
// non-streamed object), tool calls in the model's own syntax with arguments as objects, a tool round
// trip rendered as the OpenAI route renders it, /api/generate's context, the model listings, the
// Content-Type leniency and its Origin guard, and Ollama's error shape. The real client (ollama-js)
// runs against a real model in tests/server/sdk/ollama_check.mjs.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/model_file_info.h"
#include "server/ollama_api.h"
#include "tests/support/shared_data.h"
#include "test_server.h"

namespace anelm::testing {
namespace {

using json = nlohmann::ordered_json;
using server::ApiError;

// ---- helpers ----------------------------------------------------------------------------------

// The objects of an NDJSON body, one per line (every line must be a JSON object).
std::vector<json> ndjson(const std::string& body) {
  std::vector<json> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    out.push_back(json::parse(line));
    EXPECT_TRUE(out.back().is_object()) << line;
  }
  return out;
}

// A chat stream assembled as ollama-js's callers do: content and thinking appended, tool calls
// collected, the last object's fields (done_reason, counts) kept. Checks that only the last is done.
json assemble_chat(const std::vector<json>& chunks) {
  json msg = {{"role", "assistant"}, {"content", ""}};
  json last;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const json& c = chunks[i];
    EXPECT_EQ(c["done"], i + 1 == chunks.size()) << "done only on the last object: " << c.dump();
    EXPECT_TRUE(c["created_at"].is_string());
    const json& m = c["message"];
    EXPECT_EQ(m["role"], "assistant");
    msg["content"] = msg["content"].get<std::string>() + m["content"].get<std::string>();
    if (m.contains("thinking")) msg["thinking"] = msg.value("thinking", "") + m["thinking"].get<std::string>();
    if (m.contains("tool_calls"))
      for (const json& t : m["tool_calls"]) msg["tool_calls"].push_back(t);
    last = c;
  }
  last["message"] = msg;
  return last;
}

server::ServerOptions with_template(const std::string& relative) {
  server::ServerOptions o = test_options();
  if (auto path = shared_model(relative)) o.chat_template = path->string();
  return o;
}

// A server with Qwen3's template (a thinking model with tools) whose fake model replies `reply`
// (empty: it echoes the prompt, so the answer is the rendered conversation).
std::unique_ptr<TestServer> qwen3_server(std::string reply) {
  FakeScript script;
  script.reply = std::move(reply);
  script.ctx = 4096;
  return std::make_unique<TestServer>(script, with_template("chat-templates/Qwen-Qwen3-0.6B.jinja"));
}

httplib::Result post(const TestServer& s, const std::string& path, const json& body,
                     const std::string& content_type = "application/json", httplib::Headers headers = {}) {
  return s.client().Post(path.c_str(), headers, body.dump(), content_type.c_str());
}

// The 400 a body gets, and the field it names.
std::string refused_param(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400) << e.what();
    return e.param();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

// ---- translation ------------------------------------------------------------------------------

TEST(OllamaTranslate, ChatMatchesTheEquivalentOpenAIRequest) {
  const json ollama = json::parse(R"({
    "model": "qwen3:0.6b", "keep_alive": "5m", "stream": false, "think": false,
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Paris and Rome?"},
      {"role": "assistant", "content": "", "thinking": "Two cities.", "tool_calls": [
        {"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris", "days": 2}}},
        {"function": {"index": 1, "name": "get_time", "arguments": {}}}]},
      {"role": "tool", "tool_name": "get_time", "content": "12:00"},
      {"role": "tool", "tool_name": "get_weather", "content": "21C"},
      {"role": "user", "content": "Thanks", "images": []}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
              {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}],
    "format": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    "options": {"temperature": 0.3, "top_k": 7, "top_p": 0.9, "min_p": 0.05, "num_predict": 50, "seed": 3,
                "stop": ["END", "\n\n"], "repeat_penalty": 1.1, "repeat_last_n": 32, "presence_penalty": 0.5,
                "frequency_penalty": 0.25, "num_ctx": 8192, "num_thread": 4, "mirostat": 0, "typical_p": 1.0,
                "tfs_z": 1.0, "a_future_option": true}
  })");
  const json openai = json::parse(R"({
    "model": "qwen3:0.6b", "max_tokens": 50,
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Paris and Rome?"},
      {"role": "assistant", "content": "", "reasoning_content": "Two cities.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}},
        {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": "12:00"},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "21C"},
      {"role": "user", "content": "Thanks"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
              {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "format", "strict": false,
                        "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}},
    "temperature": 0.3, "top_k": 7, "top_p": 0.9, "min_p": 0.05, "seed": 3, "stop": ["END", "\n\n"],
    "repetition_penalty": 1.1, "presence_penalty": 0.5, "frequency_penalty": 0.25,
    "chat_template_kwargs": {"enable_thinking": false}
  })");
  const server::OllamaChatRequest o = server::parse_ollama_chat_request(ollama.dump());
  const server::ChatRequest want = server::parse_chat_request(openai.dump());
  ASSERT_FALSE(o.load_only);
  EXPECT_EQ(o.chat.messages, want.messages) << o.chat.messages.dump(1);
  EXPECT_EQ(o.chat.tools, want.tools);
  EXPECT_EQ(o.chat.template_kwargs, want.template_kwargs);
  const server::GenerationFields& g = o.chat.gen;
  EXPECT_EQ(g.max_tokens, want.gen.max_tokens);
  EXPECT_EQ(g.stop, want.gen.stop);
  EXPECT_FLOAT_EQ(g.sampling.temperature, want.gen.sampling.temperature);
  EXPECT_EQ(g.sampling.top_k, want.gen.sampling.top_k);
  EXPECT_FLOAT_EQ(g.sampling.top_p, want.gen.sampling.top_p);
  EXPECT_FLOAT_EQ(g.sampling.min_p, want.gen.sampling.min_p);
  EXPECT_FLOAT_EQ(g.sampling.repetition_penalty, want.gen.sampling.repetition_penalty);
  EXPECT_FLOAT_EQ(g.sampling.presence_penalty, want.gen.sampling.presence_penalty);
  EXPECT_FLOAT_EQ(g.sampling.frequency_penalty, want.gen.sampling.frequency_penalty);
  EXPECT_EQ(g.sampling.seed, want.gen.sampling.seed);
  EXPECT_TRUE(g.seed_given);
  EXPECT_EQ(g.sampling.penalty_last_n, 32);
  EXPECT_EQ(g.response_format.kind, want.gen.response_format.kind);
  EXPECT_EQ(g.response_format.schema, want.gen.response_format.schema);
  EXPECT_EQ(g.response_format.strict, want.gen.response_format.strict);
  EXPECT_FALSE(g.stream);
}

TEST(OllamaTranslate, DefaultsAndOptionEdges) {
  auto chat = [](const std::string& extra) {
    return server::parse_ollama_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "x"}])" + extra + "}").chat;
  };
  const server::ChatRequest plain = chat("");
  EXPECT_TRUE(plain.gen.stream) << "Ollama streams unless told not to";
  EXPECT_FALSE(plain.gen.max_tokens) << "no num_predict: up to the context end";
  EXPECT_EQ(plain.gen.response_format.kind, server::ResponseFormat::Kind::kText);
  const server::ChatRequest unlimited = chat(R"(, "options": {"num_predict": -1, "seed": -1, "top_k": -1, "temperature": 0})");
  EXPECT_FALSE(unlimited.gen.max_tokens);
  EXPECT_FALSE(unlimited.gen.seed_given) << "seed -1: a fresh seed";
  EXPECT_EQ(unlimited.gen.sampling.top_k, 0);
  EXPECT_EQ(chat(R"(, "options": {"num_predict": 12.0, "repeat_last_n": -1})").gen.max_tokens, 12);
  EXPECT_EQ(chat(R"(, "format": "json")").gen.response_format.kind, server::ResponseFormat::Kind::kJsonObject);
  EXPECT_EQ(chat(R"(, "format": "")").gen.response_format.kind, server::ResponseFormat::Kind::kText);
  EXPECT_EQ(chat(R"(, "think": "high")").template_kwargs, json::parse(R"({"enable_thinking": true, "reasoning_effort": "high"})"));
  EXPECT_EQ(chat(R"(, "think": true)").template_kwargs, json::parse(R"({"enable_thinking": true})"));
  const server::ChatRequest lp = chat(R"(, "logprobs": true, "top_logprobs": 3)");
  EXPECT_TRUE(lp.gen.logprobs);
  EXPECT_EQ(lp.gen.top_logprobs, 3);
  EXPECT_TRUE(server::parse_ollama_chat_request(R"({"model": "m"})").load_only);
  EXPECT_TRUE(server::parse_ollama_chat_request(R"({"model": "m", "messages": []})").load_only);

  auto refused = [&](const std::string& extra) { return refused_param([&] { chat(extra); }); };
  EXPECT_EQ(refused(R"(, "options": {"mirostat": 2})"), "options.mirostat");
  EXPECT_EQ(refused(R"(, "options": {"typical_p": 0.5})"), "options.typical_p");
  EXPECT_EQ(refused(R"(, "options": {"tfs_z": 0.9})"), "options.tfs_z");
  EXPECT_EQ(refused(R"(, "options": {"temperature": "hot"})"), "options.temperature");
  EXPECT_EQ(refused(R"(, "options": {"top_p": 1.5})"), "options.top_p");
  EXPECT_EQ(refused(R"(, "options": {"stop": [1]})"), "options.stop");
  EXPECT_EQ(refused(R"(, "options": [])"), "options");
  EXPECT_EQ(refused(R"(, "format": "yaml")"), "format");
  EXPECT_EQ(refused(R"(, "think": "max")"), "think");
  EXPECT_EQ(refused_param([] { server::parse_ollama_chat_request(R"({"messages": [{"role": "user", "content": "x", "images": ["aGk="]}]})"); }),
            "messages[0].images");
  EXPECT_EQ(refused_param([] { server::parse_ollama_chat_request(R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"function": {}}]}]})"); }),
            "messages[1].tool_calls[0].function.name");
  json many = json::parse(R"({"messages": [{"role": "assistant", "tool_calls": []}]})");
  for (int i = 0; i < 1025; ++i) many["messages"][0]["tool_calls"].push_back({{"function", {{"name", "f"}}}});
  EXPECT_EQ(refused_param([&] { server::parse_ollama_chat_request(many.dump()); }), "messages[0].tool_calls");
}

TEST(OllamaTranslate, GenerateAndEmbed) {
  const server::OllamaGenerateRequest g = server::parse_ollama_generate_request(
      R"({"model": "m", "prompt": "Why?", "system": "Be brief.", "context": [1, 2, 3], "raw": false, "keep_alive": 0,
          "options": {"num_predict": 5}})");
  EXPECT_EQ(g.prompt, "Why?");
  EXPECT_EQ(g.system, "Be brief.");
  EXPECT_EQ(g.context, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(g.gen.max_tokens, 5);
  EXPECT_TRUE(g.gen.stream);
  EXPECT_FALSE(g.load_only());
  EXPECT_TRUE(server::parse_ollama_generate_request(R"({"model": "m"})").load_only());
  EXPECT_EQ(refused_param([] { server::parse_ollama_generate_request(R"({"prompt": "x", "template": "{{ .Prompt }}"})"); }), "template");
  EXPECT_EQ(refused_param([] { server::parse_ollama_generate_request(R"({"prompt": "x", "images": ["aGk="]})"); }), "images");
  EXPECT_EQ(refused_param([] { server::parse_ollama_generate_request(R"({"prompt": "x", "context": [1, -2]})"); }), "context[1]");
  EXPECT_EQ(refused_param([] { server::parse_ollama_generate_request(R"({"prompt": 5})"); }), "prompt");

  const server::OllamaEmbedRequest e = server::parse_ollama_embed_request(R"({"model": "m", "input": ["a", "b"], "truncate": false, "dimensions": 8})", false);
  EXPECT_EQ(e.inputs.texts, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(e.truncate);
  EXPECT_EQ(e.inputs.dimensions, 8);
  const server::OllamaEmbedRequest legacy = server::parse_ollama_embed_request(R"({"model": "m", "prompt": "a"})", true);
  EXPECT_EQ(legacy.inputs.texts, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(legacy.legacy);
  EXPECT_EQ(refused_param([] { server::parse_ollama_embed_request(R"({"input": [1, 2]})", false); }), "input");
  EXPECT_EQ(refused_param([] { server::parse_ollama_embed_request(R"({"model": "m"})", true); }), "prompt");
}

// ---- over HTTP --------------------------------------------------------------------------------

TEST(OllamaHttp, ChatStreamAssemblesToTheObject) {
  FakeScript script;
  script.reply = "Hello, world! \xc3\xa9t\xc3\xa9";
  TestServer s(script);
  const json req = json::parse(R"({"model": "anything", "messages": [{"role": "user", "content": "Hi"}]})");
  auto streamed = post(s, "/api/chat", req);
  ASSERT_EQ(streamed->status, 200) << streamed->body;
  EXPECT_EQ(streamed->get_header_value("Content-Type"), "application/x-ndjson");
  const std::vector<json> chunks = ndjson(streamed->body);
  ASSERT_GE(chunks.size(), 3u) << "streamed by default, token by token: " << streamed->body;
  json non_streamed_req = req;
  non_streamed_req["stream"] = false;
  auto whole = post(s, "/api/chat", non_streamed_req);
  ASSERT_EQ(whole->status, 200) << whole->body;
  EXPECT_EQ(whole->get_header_value("Content-Type"), "application/json");
  const json body = json::parse(whole->body);
  const json assembled = assemble_chat(chunks);
  EXPECT_EQ(assembled["message"], body["message"]);
  EXPECT_EQ(body["message"]["content"], script.reply);
  for (const json* j : {&body, &assembled}) {
    EXPECT_EQ((*j)["done"], true);
    EXPECT_EQ((*j)["done_reason"], "stop");
    EXPECT_TRUE((*j)["model"].get<std::string>().find(":latest") != std::string::npos) << (*j)["model"];
    for (const char* k : {"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"})
      EXPECT_TRUE((*j)[k].is_number_integer()) << k << " in " << j->dump();
    EXPECT_GT((*j)["prompt_eval_count"].get<int>(), 0);
    EXPECT_GT((*j)["eval_count"].get<int>(), 0);
    EXPECT_FALSE(j->contains("context")) << "/api/chat returns no context";
  }

  json capped = non_streamed_req;
  capped["options"] = {{"num_predict", 3}};
  const json cut = json::parse(post(s, "/api/chat", capped)->body);
  EXPECT_EQ(cut["done_reason"], "length");
  EXPECT_EQ(cut["eval_count"], 3);
}

// logprobs / top_logprobs: per token {token, logprob, bytes, top_logprobs}, in each chunk for its
// tokens and all of them in the non-streamed answer (the fake engine gives every token -0.5).
TEST(OllamaHttp, LogprobsPerToken) {
  FakeScript script;
  script.reply = "abc";
  TestServer s(script);
  json req = json::parse(R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": true, "top_logprobs": 2, "stream": false})");
  const json body = json::parse(post(s, "/api/chat", req)->body);
  ASSERT_EQ(body["logprobs"].size(), 3u) << body.dump();
  std::string text;
  for (const json& lp : body["logprobs"]) {
    text += lp["token"].get<std::string>();
    EXPECT_FLOAT_EQ(lp["logprob"].get<float>(), -0.5f);
    EXPECT_EQ(lp["bytes"].size(), lp["token"].get<std::string>().size());
    ASSERT_EQ(lp["top_logprobs"].size(), 2u);
    EXPECT_FLOAT_EQ(lp["top_logprobs"][1]["logprob"].get<float>(), -1.5f);
  }
  EXPECT_EQ(text, "abc");
  req["stream"] = true;
  json streamed = json::array();
  for (const json& c : ndjson(post(s, "/api/chat", req)->body))
    for (const json& lp : c.value("logprobs", json::array())) streamed.push_back(lp);
  EXPECT_EQ(streamed, body["logprobs"]);
  req.erase("logprobs");
  req.erase("top_logprobs");
  req["stream"] = false;
  EXPECT_FALSE(json::parse(post(s, "/api/chat", req)->body).contains("logprobs"));
}

const char* kToolReply =
    "<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\", \"days\": 3}}\n</tool_call>";

json tool_request() {
  return json::parse(R"({"model": "qwen3", "messages": [{"role": "user", "content": "Weather in Paris?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                              "required": ["city"]}}}]})");
}

TEST(OllamaHttp, ToolCallsFromTheModelsSyntaxWithObjectArguments) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  auto s_owner = qwen3_server(kToolReply);
  TestServer& s = *s_owner;
  json req = tool_request();
  req["stream"] = false;
  auto r = post(s, "/api/chat", req);
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  const json& m = body["message"];
  EXPECT_EQ(m["thinking"], "The user wants the weather.");
  EXPECT_EQ(m["content"], "");
  ASSERT_EQ(m["tool_calls"].size(), 1u) << body.dump();
  EXPECT_EQ(m["tool_calls"][0], json::parse(R"({"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris", "days": 3}}})"));
  EXPECT_EQ(body["done_reason"], "stop");

  const std::vector<json> chunks = ndjson(post(s, "/api/chat", tool_request())->body);
  int with_calls = 0;
  for (const json& c : chunks) with_calls += c["message"].contains("tool_calls");
  EXPECT_EQ(with_calls, 1) << "the call goes out once, whole";
  const json assembled = assemble_chat(chunks);
  EXPECT_EQ(assembled["message"]["tool_calls"], m["tool_calls"]);
  EXPECT_EQ(assembled["message"]["thinking"], m["thinking"]);
}

// Two calls stream as Ollama streams them: each in a chunk of its own once it is whole (the first when
// the second starts), with its index in the reply; assembled, the same calls as the whole answer.
TEST(OllamaHttp, EachToolCallStreamsWhenItCloses) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  auto s_owner = qwen3_server(std::string(kToolReply) +
                              "\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Berlin\"}}\n</tool_call>");
  TestServer& s = *s_owner;
  json req = tool_request();
  req["stream"] = false;
  const json whole = json::parse(post(s, "/api/chat", req)->body);
  ASSERT_EQ(whole["message"]["tool_calls"].size(), 2u) << whole.dump();
  const std::vector<json> chunks = ndjson(post(s, "/api/chat", tool_request())->body);
  std::vector<json> call_chunks;
  for (const json& c : chunks)
    if (c["message"].contains("tool_calls")) call_chunks.push_back(c["message"]["tool_calls"]);
  ASSERT_EQ(call_chunks.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(call_chunks[k].size(), 1u);
    EXPECT_EQ(call_chunks[k][0], whole["message"]["tool_calls"][k]);
    EXPECT_EQ(call_chunks[k][0]["function"]["index"], k);
  }
  EXPECT_EQ(assemble_chat(chunks)["message"]["tool_calls"], whole["message"]["tool_calls"]);
}

TEST(OllamaHttp, ToolRoundTripRendersAsTheOpenAIRequestDoes) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  auto s_owner = qwen3_server("");
  TestServer& s = *s_owner;
  json ollama = tool_request();
  ollama["stream"] = false;
  ollama["think"] = false;
  ollama["messages"].push_back(json::parse(R"({"role": "assistant", "content": "", "tool_calls": [
      {"function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}]})"));
  ollama["messages"].push_back(json::parse(R"({"role": "tool", "tool_name": "get_weather", "content": "21C, sunny"})"));
  json openai = tool_request();
  openai["chat_template_kwargs"] = {{"enable_thinking", false}};
  openai["max_tokens"] = 3000;
  ollama["options"] = {{"num_predict", 3000}};
  openai["messages"].push_back(json::parse(R"({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 3}"}}]})"));
  openai["messages"].push_back(json::parse(R"({"role": "tool", "tool_call_id": "c1", "content": "21C, sunny"})"));
  auto a = post(s, "/api/chat", ollama);
  auto b = post(s, "/v1/chat/completions", openai);
  ASSERT_EQ(a->status, 200) << a->body;
  ASSERT_EQ(b->status, 200) << b->body;
  const json answer = json::parse(a->body)["message"];
  const std::string prompt = answer["content"];
  EXPECT_EQ(prompt, json::parse(b->body)["choices"][0]["message"]["content"]);
  EXPECT_NE(prompt.find("<tool_response>\n21C, sunny\n</tool_response>"), std::string::npos) << prompt;
  // The echoed prompt holds the earlier call in the model's syntax, which parses back into it.
  ASSERT_EQ(answer["tool_calls"].size(), 1u) << answer.dump();
  EXPECT_EQ(answer["tool_calls"][0]["function"]["arguments"], json::parse(R"({"city": "Paris", "days": 3})"));
}

TEST(OllamaHttp, GenerateReturnsAContextThatContinues) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  const std::string reply = "Blue light scatters.";
  auto s_owner = qwen3_server(reply);
  TestServer& s = *s_owner;
  const json first = json::parse(post(s, "/api/generate", {{"prompt", "Why is the sky blue?"}, {"stream", false}, {"think", false}})->body);
  EXPECT_EQ(first["response"], reply);
  ASSERT_TRUE(first["context"].is_array()) << first.dump();
  EXPECT_EQ(first["context"].size(), first["prompt_eval_count"].get<size_t>() + first["eval_count"].get<size_t>());

  // The next turn, with the earlier exchange before it: the echoing engine shows the whole prompt.
  auto e_owner = qwen3_server("");
  TestServer& e = *e_owner;
  const json second = json::parse(post(e, "/api/generate", {{"prompt", "And at sunset?"}, {"context", first["context"]},
                                                            {"stream", false}, {"options", {{"num_predict", 3000}}}})->body);
  const std::string text = second["response"];
  EXPECT_LT(text.find("Why is the sky blue?"), text.find(reply)) << text;
  EXPECT_LT(text.find(reply), text.find("And at sunset?")) << text;
  EXPECT_EQ(second["prompt_eval_count"].get<size_t>(), first["context"].size() + json::parse(post(e, "/api/generate",
      {{"prompt", "And at sunset?"}, {"stream", false}, {"options", {{"num_predict", 1}}}})->body)["prompt_eval_count"].get<size_t>());

  // raw: the prompt as written, no template and no context back; streamed chunks carry `response`.
  const std::vector<json> raw = ndjson(post(s, "/api/generate", {{"prompt", "<|im_start|>user\nHi"}, {"raw", true}})->body);
  ASSERT_GE(raw.size(), 2u);
  std::string response;
  for (const json& c : raw) response += c["response"].get<std::string>();
  EXPECT_EQ(response, reply);
  EXPECT_FALSE(raw.back().contains("context"));
  EXPECT_EQ(raw.back()["done"], true);

  const json load = json::parse(post(s, "/api/generate", {{"model", "m"}})->body);
  EXPECT_EQ(load["done_reason"], "load");
  EXPECT_EQ(load["response"], "");
}

// A thinking model's reasoning comes back apart, as Ollama's `thinking`, on both routes.
TEST(OllamaHttp, ThinkingApartFromTheAnswer) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  auto s_owner = qwen3_server("<think>\nRayleigh.\n</think>\n\nBlue light scatters.");
  TestServer& s = *s_owner;
  const json g = json::parse(post(s, "/api/generate", {{"prompt", "Why blue?"}, {"stream", false}, {"think", true}})->body);
  EXPECT_EQ(g["thinking"], "Rayleigh.");
  EXPECT_EQ(g["response"], "Blue light scatters.");
  std::string thinking, response;
  for (const json& c : ndjson(post(s, "/api/generate", {{"prompt", "Why blue?"}, {"think", true}})->body)) {
    thinking += c.value("thinking", "");
    response += c["response"].get<std::string>();
  }
  EXPECT_EQ(thinking, "Rayleigh.");
  EXPECT_EQ(response, "Blue light scatters.");
  const json c = json::parse(post(s, "/api/chat", json::parse(R"({"messages": [{"role": "user", "content": "Why blue?"}], "stream": false})"))->body);
  EXPECT_EQ(c["message"]["thinking"], "Rayleigh.");
  EXPECT_EQ(c["message"]["content"], "Blue light scatters.");
  EXPECT_NE(json::parse(post(s, "/api/show", {{"model", "m"}})->body)["capabilities"].dump().find("thinking"), std::string::npos);
}

// think: true of a model that cannot think is Ollama's 400; false, or a thinking model, is fine.
TEST(OllamaHttp, ThinkRefusedForAModelThatCannotThink) {
  FakeScript script;
  script.reply = "Blue.";
  TestServer s(script);
  const json chat = json::parse(R"({"messages": [{"role": "user", "content": "Why blue?"}], "stream": false})");
  for (const auto& [path, base] : {std::pair<std::string, json>{"/api/chat", chat},
                                   {"/api/generate", {{"prompt", "Why blue?"}, {"stream", false}}}}) {
    for (const json& think : {json(true), json("high")}) {
      json body = base;
      body["think"] = think;
      const auto r = post(s, path, body);
      EXPECT_EQ(r->status, 400) << path << " " << r->body;
      EXPECT_NE(r->body.find("does not support thinking"), std::string::npos) << r->body;
    }
    json body = base;
    body["think"] = false;
    EXPECT_EQ(post(s, path, body)->status, 200) << path;
  }
  EXPECT_EQ(json::parse(post(s, "/api/show", {{"model", "m"}})->body)["capabilities"].dump().find("thinking"),
            std::string::npos);
}

// A conversation longer than the context: Ollama drops the oldest turns (system and last message
// kept), the fewest that make it fit; the OpenAI route refuses the same conversation.
TEST(OllamaHttp, LongConversationDropsTheOldestTurns) {
  FakeScript script;
  script.reply = "ok";
  script.ctx = 512;
  TestServer s(script);
  json messages = json::array({{{"role", "system"}, {"content", "SYS"}}});
  for (int i = 0; i < 12; ++i) {
    messages.push_back({{"role", "user"}, {"content", "question " + std::to_string(i) + " " + std::string(30, 'q')}});
    messages.push_back({{"role", "assistant"}, {"content", "answer " + std::to_string(i) + " " + std::string(30, 'a')}});
  }
  messages.push_back({{"role", "user"}, {"content", "LAST"}});
  auto openai = post(s, "/v1/chat/completions", {{"messages", messages}});
  ASSERT_EQ(openai->status, 400) << "the OpenAI route refuses it";
  EXPECT_EQ(json::parse(openai->body)["error"]["code"], "context_length_exceeded");
  auto r = post(s, "/api/chat", {{"messages", messages}, {"stream", false}});
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string prompt = s.context().tokenizer().decode(s.engine().last_prompt(), false);
  EXPECT_EQ(prompt.rfind("<|im_start|>system\nSYS<|im_end|>", 0), 0u) << "the system message stays first: " << prompt;
  EXPECT_NE(prompt.find("LAST"), std::string::npos);
  EXPECT_EQ(prompt.find("question 0 "), std::string::npos) << "the oldest turns are dropped";
  EXPECT_NE(prompt.find("answer 11 "), std::string::npos) << "the newest turns stay";
  EXPECT_LT(json::parse(r->body)["prompt_eval_count"].get<int>(), script.ctx);
  // The fewest: the first kept message is a user turn, and with the turn before it (a question and
  // its answer) the prompt would not fit (the OpenAI route, which drops nothing, refuses that).
  const size_t q = prompt.find("question ");
  ASSERT_NE(q, std::string::npos) << prompt;
  EXPECT_LT(q, prompt.find("answer ")) << "the cut leaves a user turn first";
  const size_t first_kept = 1 + 2 * static_cast<size_t>(std::stoi(prompt.substr(q + 9)));
  json one_more = json::array({messages[0]});
  for (size_t i = first_kept - 2; i < messages.size(); ++i) one_more.push_back(messages[i]);
  EXPECT_EQ(post(s, "/v1/chat/completions", {{"messages", one_more}})->status, 400) << one_more.dump();

  json huge = json::array({{{"role", "user"}, {"content", std::string(2000, 'x')}}});
  auto refused = post(s, "/api/chat", {{"messages", huge}, {"stream", false}});
  EXPECT_EQ(refused->status, 400) << "the last message alone does not fit: still refused";
  EXPECT_TRUE(json::parse(refused->body)["error"].is_string());
}

TEST(OllamaHttp, ListingsVersionAndErrors) {
  FakeScript script;
  script.reply = "ok";
  TestServer s(script);
  httplib::Client c = s.client();
  const json version = json::parse(c.Get("/api/version")->body);
  EXPECT_EQ(version["version"], server::kOllamaApiVersion);
  const json tags = json::parse(c.Get("/api/tags")->body);
  ASSERT_EQ(tags["models"].size(), 1u);
  const json& m = tags["models"][0];
  for (const char* k : {"name", "model", "modified_at", "size", "digest", "details"}) EXPECT_TRUE(m.contains(k)) << k;
  EXPECT_TRUE(m["digest"].is_string());
  for (const char* k : {"parent_model", "format", "family", "families", "parameter_size", "quantization_level"})
    EXPECT_TRUE(m["details"].contains(k)) << k;
  const json ps = json::parse(c.Get("/api/ps")->body);
  EXPECT_EQ(ps["models"][0]["name"], m["name"]);
  EXPECT_EQ(ps["models"][0]["context_length"], script.ctx);
  const json show = json::parse(post(s, "/api/show", {{"model", m["name"]}})->body);
  const std::string arch = show["model_info"]["general.architecture"];
  EXPECT_EQ(show["model_info"][arch + ".context_length"], script.ctx);
  EXPECT_NE(show["parameters"].get<std::string>().find("num_ctx " + std::to_string(script.ctx)), std::string::npos);
  EXPECT_FALSE(show["template"].get<std::string>().empty());
  EXPECT_EQ(show["capabilities"][0], "completion");
  EXPECT_EQ(json::parse(post(s, "/api/pull", {{"model", "x"}})->body)["status"], "success");

  auto bad = post(s, "/api/chat", json::parse(R"({"messages": [{"role": "user", "content": "x"}], "options": {"mirostat": 1}})"));
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(json::parse(bad->body)["error"].get<std::string>().find("options.mirostat"), std::string::npos) << bad->body;
  auto create = post(s, "/api/create", {{"model", "x"}});
  EXPECT_EQ(create->status, 501);
  EXPECT_TRUE(json::parse(create->body)["error"].is_string());
  auto malformed = s.client().Post("/api/generate", "{nope", "application/json");
  EXPECT_EQ(malformed->status, 400);
  EXPECT_TRUE(json::parse(malformed->body)["error"].is_string()) << "Ollama's {\"error\": \"...\"}: " << malformed->body;
  // Refused before any handler runs: still Ollama's shape under /api/ (ollama-js reads a string).
  auto wrong_method = c.Get("/api/chat");
  EXPECT_EQ(wrong_method->status, 405);
  EXPECT_TRUE(json::parse(wrong_method->body)["error"].is_string()) << wrong_method->body;
  auto no_route = post(s, "/api/nope", json::object());
  EXPECT_EQ(no_route->status, 404);
  EXPECT_TRUE(json::parse(no_route->body)["error"].is_string()) << no_route->body;
  EXPECT_TRUE(json::parse(c.Get("/v1/nope")->body)["error"].is_object()) << "OpenAI's shape elsewhere";
  EXPECT_EQ(json::parse(post(s, "/api/embed", {{"input", json::array()}})->body)["embeddings"], json::array());
}

TEST(OllamaHttp, ApiKeyRefusalInOllamasShape) {
  server::ServerOptions o = test_options();
  o.api_key = "sekret";
  TestServer s(FakeScript{}, o);
  auto r = post(s, "/api/chat", json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"));
  EXPECT_EQ(r->status, 401);
  EXPECT_TRUE(json::parse(r->body)["error"].is_string()) << r->body;
  auto ok = post(s, "/api/chat", json::parse(R"({"messages": [{"role": "user", "content": "x"}], "stream": false})"),
                 "application/json", {{"Authorization", "Bearer sekret"}});
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST(OllamaListing, ModelFileInfoFromTheGgufHeader) {
  EXPECT_EQ(server::human_parameter_count(494032768), "494.03M");
  EXPECT_EQ(server::human_parameter_count(7615616512), "7.6B");
  EXPECT_EQ(server::human_parameter_count(8000000000), "8B");
  EXPECT_EQ(server::human_parameter_count(260000), "260K");
  EXPECT_STREQ(server::llama_ftype_name(15), "Q4_K_M");
  const auto path = shared_model("stories260K.gguf");
  if (!path) GTEST_SKIP() << "shared models not found";
  const server::ModelFileInfo f = server::describe_model_file(path->string());
  EXPECT_EQ(f.format, "gguf");
  EXPECT_EQ(f.size_bytes, static_cast<int64_t>(std::filesystem::file_size(*path)));
  EXPECT_EQ(f.quantization, "F32");
  EXPECT_EQ(f.n_params, 292800) << "llama.cpp's n_params for this file (llamacpp-bench)";
  EXPECT_EQ(server::human_parameter_count(f.n_params), "292.8K");
  EXPECT_EQ(f.digest.size(), 64u);
  EXPECT_EQ(server::describe_model_file(path->string()).digest, f.digest) << "stable";
  EXPECT_EQ(server::describe_model_file("/nonexistent/model.gguf").n_params, 0) << "never throws";
}

// `curl -d` (Ollama's own examples) sends a form Content-Type: accepted, unless a browser sends it
// from a page whose Origin is not allowed (a cross-site request needs no preflight with that type).
TEST(OllamaHttp, FormContentTypeAcceptedWithoutAForeignOrigin) {
  FakeScript script;
  script.reply = "ok";
  server::ServerOptions o = test_options();
  o.cors_origins = {"http://app.example"};
  TestServer s(script, o);
  const json body = {{"model", "m"}, {"prompt", "Hi"}, {"stream", false}};
  const std::string form = "application/x-www-form-urlencoded";
  EXPECT_EQ(post(s, "/api/generate", body, form)->status, 200);
  EXPECT_EQ(post(s, "/api/generate", body, form, {{"Origin", "http://app.example"}})->status, 200);
  EXPECT_EQ(post(s, "/api/generate", body, form, {{"Origin", "http://evil.example"}})->status, 415);
  EXPECT_EQ(post(s, "/api/generate", body, "text/plain", {{"Origin", "http://evil.example"}})->status, 415);
  EXPECT_EQ(post(s, "/v1/completions", {{"prompt", "Hi"}}, form)->status, 415) << "the OpenAI routes stay strict";
}

}  // namespace
}  // namespace anelm::testing
