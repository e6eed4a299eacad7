// Tools, reasoning and the chat template over HTTP, with a scripted engine and a real reasoning
// template (Qwen3's): the reply's own syntax becomes reasoning_content and tool_calls, streamed as
// OpenAI streams them; /apply-template shows the prompt; template errors are 400s.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/shared_data.h"
#include "test_server.h"

namespace anelm::testing {
namespace {

using nlohmann::json;

const char* kReply =
    "<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>";

json tools_request() {
  return json::parse(R"({"model": "m", "messages": [{"role": "user", "content": "Weather in Paris?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "max_tokens": 200})");
}

server::ServerOptions with_template(const std::string& relative) {
  server::ServerOptions o = test_options();
  auto path = shared_model(relative);
  if (path) o.chat_template = path->string();
  return o;
}

TEST(HttpTools, ReasoningAndToolCallsFromTheModelsSyntax) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  FakeScript script;
  script.reply = kReply;
  script.ctx = 4096;
  TestServer s(script, with_template("chat-templates/Qwen-Qwen3-0.6B.jinja"));
  auto r = s.post("/v1/chat/completions", tools_request());
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  const json& m = b["choices"][0]["message"];
  EXPECT_EQ(b["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(m["reasoning_content"], "The user wants the weather.");
  EXPECT_TRUE(m["content"].is_null()) << m.dump();
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(m["tool_calls"][0]["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_EQ(m["tool_calls"][0]["id"].get<std::string>().rfind("call_", 0), 0u);

  // Streamed: reasoning deltas, then the call: index on every delta, id/type/name on the first.
  json req = tools_request();
  req["stream"] = true;
  auto st = s.post("/v1/chat/completions", req);
  ASSERT_EQ(st->status, 200);
  std::string reasoning, content, args, finish;
  int starts = 0;
  for (const std::string& p : sse_payloads(st->body)) {
    if (p == "[DONE]") break;
    const json c = json::parse(p);
    for (const json& ch : c["choices"]) {
      const json& d = ch["delta"];
      if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
      if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
      if (d.contains("tool_calls")) {
        for (const json& tc : d["tool_calls"]) {
          EXPECT_EQ(tc["index"], 0);
          if (tc.contains("id")) {
            ++starts;
            EXPECT_EQ(tc["type"], "function");
            EXPECT_EQ(tc["function"]["name"], "get_weather");
          }
          if (tc["function"].contains("arguments")) args += tc["function"]["arguments"].get<std::string>();
        }
      }
      if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    }
  }
  EXPECT_EQ(reasoning, "The user wants the weather.");
  EXPECT_EQ(content, "") << "no markup leaks into content";
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(json::parse(args), json({{"city", "Paris"}}));
  EXPECT_EQ(finish, "tool_calls");

  // Without tools the markup is plain content (nothing was offered to call).
  json plain = tools_request();
  plain.erase("tools");
  const json pb = json::parse(s.post("/v1/chat/completions", plain)->body);
  EXPECT_NE(pb["choices"][0]["message"]["content"].get<std::string>().find("<tool_call>"), std::string::npos);
  EXPECT_EQ(pb["choices"][0]["finish_reason"], "stop");
}

// Qwen3.5: the prompt opens the reasoning block (thinking on by default), the call is XML and its
// values are typed by the request's tool schemas.
TEST(HttpTools, Qwen35XmlCallsAfterReasoning) {
  if (!shared_model("chat-templates/Qwen3.5-4B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  FakeScript script;
  script.reply =
      "The user wants the weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
      "Paris\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
  script.ctx = 4096;
  TestServer s(script, with_template("chat-templates/Qwen3.5-4B.jinja"));
  json req = tools_request();
  req["tools"][0]["function"]["parameters"]["properties"]["days"] = {{"type", "integer"}};
  const json expected_args = {{"city", "Paris"}, {"days", 3}};
  auto r = s.post("/v1/chat/completions", req);
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  const json& m = b["choices"][0]["message"];
  EXPECT_EQ(b["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(m["reasoning_content"], "The user wants the weather.");
  EXPECT_TRUE(m["content"].is_null()) << m.dump();
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  const std::string final_args = m["tool_calls"][0]["function"]["arguments"];
  EXPECT_EQ(json::parse(final_args), expected_args);

  req["stream"] = true;
  auto st = s.post("/v1/chat/completions", req);
  ASSERT_EQ(st->status, 200);
  std::string reasoning, args;
  for (const std::string& p : sse_payloads(st->body)) {
    if (p == "[DONE]") break;
    const json chunk = json::parse(p);
    for (const json& ch : chunk["choices"]) {
      const json& d = ch["delta"];
      if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
      if (d.contains("tool_calls"))
        for (const json& tc : d["tool_calls"])
          if (tc["function"].contains("arguments")) args += tc["function"]["arguments"].get<std::string>();
    }
  }
  EXPECT_EQ(reasoning, "The user wants the weather.");
  EXPECT_EQ(args, final_args) << "the streamed fragments are the final arguments";
}

TEST(HttpTools, ApplyTemplateRendersCallsResultsAndKwargs) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  FakeScript script;
  script.ctx = 4096;
  TestServer s(script, with_template("chat-templates/Qwen-Qwen3-0.6B.jinja"));
  json req = tools_request();
  req["messages"].push_back(json::parse(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
      "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]})"));
  req["messages"].push_back(json::parse(R"({"role": "tool", "tool_call_id": "call_1", "content": "21C, sunny"})"));
  req["chat_template_kwargs"] = {{"enable_thinking", false}};
  auto r = s.post("/apply-template", req);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string prompt = json::parse(r->body)["prompt"];
  EXPECT_NE(prompt.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
            std::string::npos) << prompt;
  EXPECT_NE(prompt.find("<tool_response>\n21C, sunny\n</tool_response>"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("<think>\n\n</think>"), std::string::npos) << "enable_thinking reached the template";
  EXPECT_NE(prompt.find("\"name\": \"get_weather\""), std::string::npos) << "tools are in the system prompt";

  json bad = tools_request();
  bad["chat_template_kwargs"] = {{"tools", json::array()}};
  auto br = s.post("/apply-template", bad);
  EXPECT_EQ(br->status, 400);
  EXPECT_EQ(json::parse(br->body)["error"]["param"], "chat_template_kwargs.tools");
}

TEST(HttpTools, TemplateRefusalAndStrictUnsupportedSchemaAre400) {
  if (!shared_model("chat-templates/google-gemma-2-2b-it.jinja")) GTEST_SKIP() << "shared chat templates not found";
  TestServer s(FakeScript{}, with_template("chat-templates/google-gemma-2-2b-it.jinja"));
  auto r = s.post("/v1/chat/completions", json::parse(R"({"messages": [{"role": "system", "content": "x"},
      {"role": "user", "content": "y"}]})"));
  EXPECT_EQ(r->status, 400);
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["param"], "messages");
  EXPECT_NE(e["message"].get<std::string>().find("System role not supported"), std::string::npos);
  auto js = s.post("/v1/chat/completions", json::parse(R"({"messages": [{"role": "user", "content": "y"}],
      "response_format": {"type": "json_schema", "json_schema": {"name": "n", "strict": true, "schema": {"type": "object",
      "patternProperties": {"^a": {"type": "string"}}}}}})"));
  EXPECT_EQ(js->status, 400);  // strict: an unsupported keyword is refused, naming it
  EXPECT_NE(json::parse(js->body)["error"]["message"].get<std::string>().find("patternProperties"), std::string::npos) << js->body;
}

}  // namespace
}  // namespace anelm::testing
