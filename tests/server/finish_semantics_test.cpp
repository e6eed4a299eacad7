// How a chat answer ends, over HTTP with a scripted engine and Qwen2.5's real template (Hermes
// tool calls): a max_tokens cut inside a tool call is "length" with no broken call and no markup in
// content (streamed or not); stop strings never cut a tool call or a constrained JSON reply; and a
// stop string still ends free text.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/shared_data.h"
#include "test_server.h"

namespace anelm::testing {
namespace {

using nlohmann::json;

const std::string kCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>";
const json kArgs = {{"city", "Paris"}, {"days", 3}};

const char* kTemplate = "chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja";

json tools_request(const std::string& tool_choice = "auto") {
  json r = json::parse(R"({"model": "m", "messages": [{"role": "user", "content": "Weather in Paris?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                     "required": ["city"]}}}]})");
  r["tool_choice"] = tool_choice;
  return r;
}

server::ServerOptions with_template() {
  server::ServerOptions o = test_options();
  if (auto path = shared_model(kTemplate)) o.chat_template = path->string();
  return o;
}

// One chat answer, streamed or not, reduced to what an OpenAI client ends up with.
struct Answer {
  int status = 0;
  std::string content;
  std::vector<json> calls;  // {"name", "arguments"} (arguments as the text sent)
  std::string finish;
  std::string raw;
};

Answer ask(const TestServer& s, json req, bool stream) {
  Answer a;
  req["stream"] = stream;
  auto r = s.post("/v1/chat/completions", req);
  if (!r) return a;
  a.status = r->status;
  a.raw = r->body;
  if (r->status != 200) return a;
  if (!stream) {
    const json b = json::parse(r->body);
    const json& ch = b["choices"][0];
    const json& m = ch["message"];
    if (m["content"].is_string()) a.content = m["content"];
    if (m.contains("tool_calls"))
      for (const json& tc : m["tool_calls"]) a.calls.push_back(tc["function"]);
    a.finish = ch["finish_reason"];
    return a;
  }
  for (const std::string& p : sse_payloads(r->body)) {
    if (p == "[DONE]") break;
    const json c = json::parse(p);
    for (const json& ch : c["choices"]) {
      const json& d = ch["delta"];
      if (d.contains("content") && d["content"].is_string()) a.content += d["content"].get<std::string>();
      if (d.contains("tool_calls"))
        for (const json& tc : d["tool_calls"]) {
          const size_t i = tc["index"];
          if (a.calls.size() <= i) a.calls.resize(i + 1, json{{"name", ""}, {"arguments", ""}});
          if (tc["function"].contains("name")) a.calls[i]["name"] = tc["function"]["name"];
          if (tc["function"].contains("arguments"))
            a.calls[i]["arguments"] = a.calls[i]["arguments"].get<std::string>() + tc["function"]["arguments"].get<std::string>();
        }
      if (!ch["finish_reason"].is_null()) a.finish = ch["finish_reason"];
    }
  }
  return a;
}

bool has_markup(const std::string& s) {
  for (const char* m : {"<tool", "</tool", "tool_call", "\"arguments\"", "{\"name\""})
    if (s.find(m) != std::string::npos) return true;
  // A trailing prefix of the opening marker is markup too.
  const std::string open = "<tool_call>";
  for (size_t k = 1; k <= std::min(s.size(), open.size()); ++k)
    if (s.compare(s.size() - k, k, open, 0, k) == 0) return true;
  return false;
}

bool parses(const json& call) {
  return call["arguments"].is_string() && json::accept(call["arguments"].get<std::string>());
}

TEST(FinishSemantics, LengthCutInsideAToolCallIsLengthWithoutMarkupOrBrokenCall) {
  if (!shared_model(kTemplate)) GTEST_SKIP() << "shared chat templates not found";
  const std::string before = "Checking.\n";
  const std::string reply = before + kCall;
  FakeScript script;
  script.reply = reply;
  script.ctx = 4096;
  TestServer s(script, with_template());
  const size_t call_closed = reply.find("}}") + 2;  // the call object is complete from here
  for (size_t len = 1; len < reply.size(); ++len) {
    for (bool stream : {false, true}) {
      json req = tools_request();
      req["max_tokens"] = len;
      const Answer a = ask(s, req, stream);
      ASSERT_EQ(a.status, 200) << a.raw;
      SCOPED_TRACE("max_tokens " + std::to_string(len) + (stream ? " streamed" : "") + ": " + a.raw);
      EXPECT_EQ(a.finish, "length");
      EXPECT_FALSE(has_markup(a.content)) << a.content;
      EXPECT_EQ(a.content, len <= before.size() ? reply.substr(0, len) : "Checking.");
      if (!stream) {
        // Not streamed: only whole calls are reported.
        EXPECT_EQ(a.calls.size(), len >= call_closed ? 1u : 0u);
        for (const json& c : a.calls) {
          EXPECT_TRUE(parses(c)) << c.dump();
          EXPECT_EQ(json::parse(c["arguments"].get<std::string>()), kArgs);
        }
      }
    }
  }
  // The full reply ends by itself: a call.
  for (bool stream : {false, true}) {
    const Answer a = ask(s, tools_request(), stream);
    EXPECT_EQ(a.finish, "tool_calls") << a.raw;
    ASSERT_EQ(a.calls.size(), 1u) << a.raw;
    EXPECT_EQ(json::parse(a.calls[0]["arguments"].get<std::string>()), kArgs);
    EXPECT_EQ(a.content, "Checking.");
  }
}

TEST(FinishSemantics, StopStringsNeverCutAToolCall) {
  if (!shared_model(kTemplate)) GTEST_SKIP() << "shared chat templates not found";
  FakeScript script;
  script.reply = "Sure.\n" + kCall;
  script.ctx = 4096;
  TestServer s(script, with_template());
  // Stop strings that match in the markup, or before it: a call is never cut.
  const std::vector<std::string> inside = {"{", "\"", "Paris", "\": ", "}", "call>", ">\n{", "\n", "</tool_call>",
                                           "_call", "arguments", "<", "<tool"};
  for (const std::string choice : {"auto", "required"}) {
    for (const std::string& stop : inside) {
      for (bool stream : {false, true}) {
        json req = tools_request(choice);
        req["stop"] = json::array({stop});
        const Answer a = ask(s, req, stream);
        ASSERT_EQ(a.status, 200) << a.raw;
        SCOPED_TRACE(choice + " stop " + json(stop).dump() + (stream ? " streamed" : "") + ": " + a.raw);
        EXPECT_FALSE(has_markup(a.content)) << a.content;
        if (choice == "required") {  // the whole reply is constrained: no stop applies
          EXPECT_EQ(a.finish, "tool_calls");
          ASSERT_EQ(a.calls.size(), 1u);
          EXPECT_EQ(json::parse(a.calls[0]["arguments"].get<std::string>()), kArgs);
          EXPECT_EQ(a.content, "Sure.");
          continue;
        }
        // auto: a stop string applies in the free text, up to the opening marker's last byte (where
        // the call begins); the cut output then ends before the marker.
        const std::string reply = "Sure.\n" + kCall;
        const size_t opened = reply.find("<tool_call>") + std::string("<tool_call>").size();
        const size_t at = reply.find(stop);
        if (at + stop.size() < opened) {
          EXPECT_EQ(a.finish, "stop");
          EXPECT_TRUE(a.calls.empty());
          // The text before the stop string, less a piece of the opening marker it ends with
          // (which goes with the whitespace before it).
          EXPECT_EQ(a.content, at <= 6 ? reply.substr(0, at) : "Sure.");
        } else {
          EXPECT_EQ(a.finish, "tool_calls");
          ASSERT_EQ(a.calls.size(), 1u);
          EXPECT_EQ(json::parse(a.calls[0]["arguments"].get<std::string>()), kArgs);
          EXPECT_EQ(a.content, "Sure.");
        }
      }
    }
  }
}

TEST(FinishSemantics, StopStringsNeverCutAJsonSchemaReply) {
  FakeScript script;
  const std::string reply = "{\"name\": \"Ada\", \"tags\": [\"x\", \"y\"], \"n\": 10}";
  script.reply = reply;
  TestServer s(script);
  json req = json::parse(R"({"messages": [{"role": "user", "content": "JSON please"}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "object",
      "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
                     "n": {"type": "integer"}}, "required": ["name", "tags", "n"]}}}})");
  for (const std::string stop : {",", "\"", "Ada", "]", "}", "1"}) {
    for (bool stream : {false, true}) {
      req["stop"] = stop;
      const Answer a = ask(s, req, stream);
      ASSERT_EQ(a.status, 200) << a.raw;
      EXPECT_EQ(a.finish, "stop") << stop;
      EXPECT_EQ(a.content, reply) << "stop " << stop << (stream ? " streamed" : "");
    }
  }
  // A cut by max_tokens inside the JSON is "length".
  req.erase("stop");
  req["max_tokens"] = 7;
  for (bool stream : {false, true}) {
    const Answer a = ask(s, req, stream);
    EXPECT_EQ(a.finish, "length");
    EXPECT_EQ(a.content, reply.substr(0, 7));
  }
  // Without a constraint the stop string applies as always.
  json plain = json::parse(R"({"messages": [{"role": "user", "content": "x"}], "stop": ","})");
  for (bool stream : {false, true}) {
    const Answer a = ask(s, plain, stream);
    EXPECT_EQ(a.finish, "stop");
    EXPECT_EQ(a.content, reply.substr(0, reply.find(',')));
  }
}

}  // namespace
}  // namespace anelm::testing
