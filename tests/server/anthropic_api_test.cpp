// The Anthropic Messages API: the request translation (checked against the chat parser's own reading
// of the equivalent OpenAI request), the Message object and its SSE events (assembled as the
// official SDK's MessageStream does, they must equal the non-streamed Message), tool use in the
// model's own syntax (Qwen3's template), stop_sequence reporting, Anthropic's error shape and
// hostile input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/anthropic_api.h"
#include "server/api_error.h"
#include "server/api_request.h"
#include "tests/support/shared_data.h"
#include "test_server.h"

namespace anelm::testing {
namespace {

using json = nlohmann::ordered_json;
using server::ApiError;
using server::parse_messages_request;

// ---- helpers ----------------------------------------------------------------------------------

// The Message a stream describes, accumulated as the SDK's MessageStream does (content blocks by
// index, text/thinking appended, tool input from the input_json_delta text, message_delta's
// stop_reason / stop_sequence / usage overwriting). Checks the event grammar on the way.
json assemble(const std::vector<SseEvent>& events) {
  json msg;
  std::vector<std::string> input_json;
  int open = -1;
  bool stopped = false;
  for (const SseEvent& ev : events) {
    EXPECT_EQ(ev.data["type"], ev.name) << "the event line names the payload's type";
    EXPECT_FALSE(stopped) << "nothing after message_stop";
    if (ev.name == "message_start") {
      EXPECT_TRUE(msg.is_null()) << "one message_start";
      msg = ev.data["message"];
    } else if (ev.name == "ping") {
    } else if (ev.name == "content_block_start") {
      EXPECT_EQ(open, -1) << "a block starts only after the previous one stopped";
      open = ev.data["index"];
      EXPECT_EQ(open, static_cast<int>(msg["content"].size()));
      msg["content"].push_back(ev.data["content_block"]);
      input_json.emplace_back();
      if (ev.data["content_block"]["type"] == "tool_use") {
        EXPECT_EQ(ev.data["content_block"]["input"], json::object()) << "input only via input_json_delta";
      }
    } else if (ev.name == "content_block_delta") {
      EXPECT_EQ(ev.data["index"], open);
      json& block = msg["content"][static_cast<size_t>(open)];
      const json& d = ev.data["delta"];
      if (d["type"] == "text_delta") {
        EXPECT_EQ(block["type"], "text");
        block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
      } else if (d["type"] == "thinking_delta") {
        EXPECT_EQ(block["type"], "thinking");
        block["thinking"] = block["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      } else if (d["type"] == "input_json_delta") {
        EXPECT_EQ(block["type"], "tool_use");
        input_json[static_cast<size_t>(open)] += d["partial_json"].get<std::string>();
      } else {
        ADD_FAILURE() << "unknown delta " << d.dump();
      }
    } else if (ev.name == "content_block_stop") {
      EXPECT_EQ(ev.data["index"], open);
      json& block = msg["content"][static_cast<size_t>(open)];
      if (block["type"] == "tool_use") block["input"] = json::parse(input_json[static_cast<size_t>(open)]);
      open = -1;
    } else if (ev.name == "message_delta") {
      EXPECT_EQ(open, -1) << "message_delta after the last block stopped";
      msg["stop_reason"] = ev.data["delta"]["stop_reason"];
      msg["stop_sequence"] = ev.data["delta"]["stop_sequence"];
      for (const auto& [k, v] : ev.data["usage"].items())
        if (!v.is_null()) msg["usage"][k] = v;
    } else if (ev.name == "message_stop") {
      stopped = true;
    } else {
      ADD_FAILURE() << "unexpected event " << ev.name;
    }
  }
  EXPECT_TRUE(stopped) << "the stream ends with message_stop";
  return msg;
}

std::vector<std::string> names(const std::vector<SseEvent>& evs) {
  std::vector<std::string> out;
  for (const SseEvent& e : evs) out.push_back(e.name);
  return out;
}

// The 400's field, or "" when parsing succeeded.
std::string rejected_param(const std::string& body) {
  try {
    parse_messages_request(body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param().empty() ? "<body>" : e.param();
  }
  return "";
}

server::ServerOptions with_template(const std::string& relative) {
  server::ServerOptions o = test_options();
  if (auto path = shared_model(relative)) o.chat_template = path->string();
  return o;
}

httplib::Result post(const TestServer& s, const std::string& path, const json& body,
                     httplib::Headers headers = {{"anthropic-version", "2023-06-01"}}) {
  return s.client().Post(path.c_str(), headers, body.dump(), "application/json");
}

// ---- translation ------------------------------------------------------------------------------

// Every block kind, against the chat parser's reading of the same conversation in OpenAI's shape.
TEST(AnthropicTranslate, EveryBlockKindMatchesTheEquivalentChatRequest) {
  const json anthropic = json::parse(R"({
    "model": "m", "max_tokens": 100,
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "Use tools."}],
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "<reminder>"}, {"type": "text", "text": "Weather?"}]},
      {"role": "system", "content": "env: linux"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Need the tool.", "signature": "sig"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris", "days": 2}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21C", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "And tomorrow?"}]},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                                    "content": [{"type": "text", "text": "timeout"}]}]},
      {"role": "assistant", "content": "Sorry."}],
    "tools": [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object",
               "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}, "cache_control": {"type": "ephemeral"},
               "defer_loading": false, "strict": true},
              {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}],
    "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
    "stop_sequences": ["END", ""], "temperature": 0.5, "top_p": 0.9, "top_k": 7,
    "thinking": {"type": "adaptive", "display": "omitted"},
    "metadata": {"user_id": "u"}, "service_tier": "auto", "context_management": {"edits": []},
    "output_config": {"effort": "high"}, "container": "c", "mcp_servers": [], "some_future_field": 1
  })");
  const json openai = json::parse(R"({
    "model": "m", "max_tokens": 100,
    "messages": [
      {"role": "system", "content": "Be brief.\n\nUse tools."},
      {"role": "user", "content": "<reminder>\n\nWeather?"},
      {"role": "system", "content": "env: linux"},
      {"role": "assistant", "content": "Checking.", "reasoning_content": "Need the tool.", "tool_calls": [
        {"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
      {"role": "tool", "tool_call_id": "toolu_1", "content": "21C", "name": "get_weather"},
      {"role": "user", "content": "And tomorrow?"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"id": "toolu_2", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: timeout", "name": "get_weather"},
      {"role": "assistant", "content": "Sorry."}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object",
               "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}],
    "tool_choice": "auto", "parallel_tool_calls": false,
    "stop": ["END"], "temperature": 0.5, "top_p": 0.9, "top_k": 7,
    "chat_template_kwargs": {"enable_thinking": true}
  })");
  const server::MessagesRequest m = parse_messages_request(anthropic.dump());
  const server::ChatRequest want = server::parse_chat_request(openai.dump());
  EXPECT_EQ(m.chat.messages, want.messages) << m.chat.messages.dump(1);
  EXPECT_EQ(m.chat.tools, want.tools);
  EXPECT_EQ(m.chat.tool_choice.kind, want.tool_choice.kind);
  EXPECT_EQ(m.chat.parallel_tool_calls, want.parallel_tool_calls);
  EXPECT_EQ(m.chat.template_kwargs, want.template_kwargs);
  EXPECT_EQ(m.chat.gen.stop, want.gen.stop);
  EXPECT_EQ(m.chat.gen.max_tokens, want.gen.max_tokens);
  EXPECT_FLOAT_EQ(m.chat.gen.sampling.temperature, want.gen.sampling.temperature);
  EXPECT_FLOAT_EQ(m.chat.gen.sampling.top_p, want.gen.sampling.top_p);
  EXPECT_EQ(m.chat.gen.sampling.top_k, want.gen.sampling.top_k);
  EXPECT_FALSE(m.chat.gen.stream);
  EXPECT_TRUE(m.system_in_place) << "the system turn after the first user turn stays in place";
}

TEST(AnthropicTranslate, ToolChoiceThinkingAndOutputFormat) {
  const std::string tools = R"("tools": [{"name": "a", "input_schema": {"type": "object"}}], )";
  auto choice = [&](const std::string& tc) {
    return parse_messages_request(R"({"messages": [{"role": "user", "content": "x"}], )" + tools +
                                  R"("tool_choice": )" + tc + "}").chat.tool_choice;
  };
  EXPECT_EQ(choice(R"({"type": "any"})").kind, server::ToolChoice::Kind::kRequired);
  EXPECT_EQ(choice(R"({"type": "none"})").kind, server::ToolChoice::Kind::kNone);
  const server::ToolChoice named = choice(R"({"type": "tool", "name": "a"})");
  EXPECT_EQ(named.kind, server::ToolChoice::Kind::kFunction);
  EXPECT_EQ(named.name, "a");

  auto thinking = [](const std::string& t) {
    return parse_messages_request(R"({"messages": [{"role": "user", "content": "x"}], "thinking": )" + t + "}")
        .chat.template_kwargs;
  };
  EXPECT_EQ(thinking(R"({"type": "enabled", "budget_tokens": 2048})"), json({{"enable_thinking", true}}));
  EXPECT_EQ(thinking(R"({"type": "disabled"})"), json({{"enable_thinking", false}}));
  EXPECT_EQ(parse_messages_request(R"({"messages": [{"role": "user", "content": "x"}]})").chat.template_kwargs,
            json::object()) << "no thinking field: the template's default";

  const server::MessagesRequest f = parse_messages_request(R"({"messages": [{"role": "user", "content": "x"}],
      "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}})");
  EXPECT_EQ(f.chat.gen.response_format.kind, server::ResponseFormat::Kind::kJsonSchema);
  EXPECT_EQ(f.chat.gen.response_format.schema, json({{"type", "object"}}));
  EXPECT_FALSE(f.chat.gen.max_tokens.has_value()) << "max_tokens may be left out";
}

TEST(AnthropicTranslate, MergeSystemMessagesKeepsOrder) {
  const json in = json::parse(R"([{"role": "system", "content": "a"}, {"role": "user", "content": "u"},
      {"role": "system", "content": "b"}, {"role": "assistant", "content": "x"}])");
  EXPECT_EQ(server::merge_system_messages(in), json::parse(R"([{"role": "system", "content": "a\n\nb"},
      {"role": "user", "content": "u"}, {"role": "assistant", "content": "x"}])"));
}

TEST(AnthropicTranslate, HostileInputIsA400NamingTheField) {
  const std::string user = R"({"role": "user", "content": "x"})";
  auto msgs = [&](const std::string& m) { return R"({"messages": [)" + m + "]}"; };
  EXPECT_EQ(rejected_param("[]"), "<body>");
  EXPECT_EQ(rejected_param("{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}"), "<body>") << "bad UTF-8";
  EXPECT_EQ(rejected_param(std::string(100000, '[') + std::string(100000, ']')), "<body>") << "deep nesting";
  EXPECT_EQ(rejected_param(R"({"messages": []})"), "messages");
  EXPECT_EQ(rejected_param(R"({"messages": "hi"})"), "messages");
  EXPECT_EQ(rejected_param(msgs("42")), "messages[0]");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "tool", "content": "x"})")), "messages[0].role");
  EXPECT_EQ(rejected_param(msgs(R"({"role": 1, "content": "x"})")), "messages[0].role");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "user"})")), "messages[0].content");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "user", "content": 5})")), "messages[0].content");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "user", "content": [{"type": "text", "text": "a"},
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]})")),
            "messages[0].content[1].type");
  EXPECT_EQ(rejected_param(msgs(user + R"(, {"role": "user", "content": [{"type": "document", "source": {}}]})")),
            "messages[1].content[0].type");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "user", "content": [{"type": "hologram"}]})")), "messages[0].content[0].type");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "user", "content": [{"text": "no type"}]})")), "messages[0].content[0].type");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "user", "content": [{"type": "text", "text": 3}]})")),
            "messages[0].content[0].text");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "user", "content": [{"type": "tool_result", "content": "x"}]})")),
            "messages[0].content[0].tool_use_id");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
      "content": [{"type": "image", "source": {}}]}]})")), "messages[0].content[0].content[0].type");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
      "is_error": "yes"}]})")), "messages[0].content[0].is_error");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
      "input": "not an object"}]})")), "messages[0].content[0].input");
  EXPECT_EQ(rejected_param(msgs(R"({"role": "system", "content": [{"type": "tool_result", "tool_use_id": "t"}]})")),
            "messages[0].content[0].type");
  EXPECT_EQ(rejected_param(R"({"system": 7, "messages": [)" + user + "]}"), "system");
  EXPECT_EQ(rejected_param(R"({"max_tokens": "10", "messages": [)" + user + "]}"), "max_tokens");
  EXPECT_EQ(rejected_param(R"({"max_tokens": 0, "messages": [)" + user + "]}"), "max_tokens");
  EXPECT_EQ(rejected_param(R"({"max_tokens": 1e300, "messages": [)" + user + "]}"), "max_tokens");
  EXPECT_EQ(rejected_param(R"({"temperature": 1.5, "messages": [)" + user + "]}"), "temperature");
  EXPECT_EQ(rejected_param(R"({"top_p": 0, "messages": [)" + user + "]}"), "top_p");
  EXPECT_EQ(rejected_param(R"({"top_k": -1, "messages": [)" + user + "]}"), "top_k");
  EXPECT_EQ(rejected_param(R"({"stream": "yes", "messages": [)" + user + "]}"), "stream");
  EXPECT_EQ(rejected_param(R"({"stop_sequences": "END", "messages": [)" + user + "]}"), "stop_sequences");
  EXPECT_EQ(rejected_param(R"({"stop_sequences": [1], "messages": [)" + user + "]}"), "stop_sequences[0]");
  EXPECT_EQ(rejected_param(R"({"thinking": {"type": "maybe"}, "messages": [)" + user + "]}"), "thinking.type");
  EXPECT_EQ(rejected_param(R"({"mcp_servers": [{"url": "x"}], "messages": [)" + user + "]}"), "mcp_servers");
  EXPECT_EQ(rejected_param(R"({"output_config": {"format": {"type": "regex"}}, "messages": [)" + user + "]}"),
            "output_config.format.type");
  EXPECT_EQ(rejected_param(R"({"tools": {}, "messages": [)" + user + "]}"), "tools");
  EXPECT_EQ(rejected_param(R"({"tools": [{"input_schema": {}}], "messages": [)" + user + "]}"), "tools[0].name");
  EXPECT_EQ(rejected_param(R"({"tools": [{"name": "a", "input_schema": []}], "messages": [)" + user + "]}"),
            "tools[0].input_schema");
  EXPECT_EQ(rejected_param(R"({"tools": [{"name": "a"}, {"name": "a"}], "messages": [)" + user + "]}"), "tools[1].name");
  EXPECT_EQ(rejected_param(R"({"tools": [{"name": "a"}], "tool_choice": "auto", "messages": [)" + user + "]}"),
            "tool_choice");
  EXPECT_EQ(rejected_param(R"({"tools": [{"name": "a"}], "tool_choice": {"type": "tool", "name": "b"}, "messages": [)" +
                           user + "]}"), "tool_choice.name");
  EXPECT_EQ(rejected_param(R"({"tools": [{"type": "bash_20250124", "name": "bash"}], "tool_choice": {"type": "tool",
      "name": "bash"}, "messages": [)" + user + "]}"), "tool_choice.name") << "a dropped server tool cannot be forced";
  EXPECT_EQ(rejected_param(R"({"tool_choice": {"type": "any"}, "messages": [)" + user + "]}"), "tool_choice");

  // Huge arrays are refused by count, not walked.
  std::string many_stops = R"({"messages": [)" + user + R"(], "stop_sequences": [)";
  for (int i = 0; i < 10000; ++i) many_stops += std::string(i ? "," : "") + "\"s\"";
  EXPECT_EQ(rejected_param(many_stops + "]}"), "stop_sequences");
  std::string many_tools = R"({"messages": [)" + user + R"(], "tools": [)";
  for (int i = 0; i < 1000; ++i) many_tools += std::string(i ? "," : "") + R"({"name": "t)" + std::to_string(i) + "\"}";
  EXPECT_EQ(rejected_param(many_tools + "]}"), "tools");
  EXPECT_EQ(rejected_param(R"({"messages": [)" + user + R"(], "stop_sequences": [")" + std::string(300, 'x') + "\"]}"),
            "stop_sequences[0]");

  // Accepted: server tools are dropped, unknown fields and blocks' extra keys ignored.
  const server::MessagesRequest ok = parse_messages_request(R"({"messages": [{"role": "user", "content":
      [{"type": "text", "text": "x", "citations": null, "whatever": 1}]}], "tools": [{"type": "web_search_20250305",
      "name": "web_search"}], "inference_geo": "us", "cache_control": {"type": "ephemeral"}})");
  EXPECT_TRUE(ok.chat.tools.empty());
}

// ---- over HTTP --------------------------------------------------------------------------------

json simple_request() {
  return json::parse(R"({"model": "claude-x", "max_tokens": 64, "system": "S",
                         "messages": [{"role": "user", "content": "Hi there"}]})");
}

TEST(AnthropicHttp, MessageObjectAndStreamAssembleToTheSame) {
  FakeScript script;
  script.reply = "Hello, world! \xc3\xa9t\xc3\xa9";
  TestServer s(script);
  auto r = post(s, "/v1/messages?beta=true", simple_request());
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  EXPECT_EQ(body["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(body["type"], "message");
  EXPECT_EQ(body["role"], "assistant");
  EXPECT_EQ(body["model"], "fake-model");
  EXPECT_EQ(body["content"], json::parse(R"([{"type": "text", "text": "Hello, world! \u00e9t\u00e9"}])"));
  EXPECT_EQ(body["stop_reason"], "end_turn");
  EXPECT_TRUE(body["stop_sequence"].is_null());
  // The prompt is the ChatML rendering (byte tokenizer: one token per byte, specials one each).
  auto ct = post(s, "/v1/messages/count_tokens", simple_request());
  ASSERT_EQ(ct->status, 200) << ct->body;
  const int prompt_tokens = json::parse(ct->body)["input_tokens"];
  EXPECT_GT(prompt_tokens, 10);
  EXPECT_EQ(body["usage"]["input_tokens"].get<int>() + body["usage"]["cache_read_input_tokens"].get<int>(), prompt_tokens);
  // The same answer through chat completions counts the same completion tokens.
  const json chat = json::parse(s.post("/v1/chat/completions", json::parse(R"({"max_tokens": 64,
      "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi there"}]})"))->body);
  EXPECT_EQ(body["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
  EXPECT_EQ(prompt_tokens, chat["usage"]["prompt_tokens"]) << "the same prompt as the equivalent chat request";

  json sreq = simple_request();
  sreq["stream"] = true;
  auto st = post(s, "/v1/messages", sreq);
  ASSERT_EQ(st->status, 200) << st->body;
  EXPECT_EQ(st->get_header_value("Content-Type"), "text/event-stream");
  const auto events = sse_events(st->body);
  ASSERT_GE(events.size(), 7u) << st->body;
  EXPECT_EQ(events[0].name, "message_start");
  EXPECT_EQ(events[1].name, "ping");
  EXPECT_EQ(events[0].data["message"]["usage"]["input_tokens"], prompt_tokens);
  EXPECT_EQ(events[0].data["message"]["content"], json::array());
  EXPECT_TRUE(events[0].data["message"]["stop_reason"].is_null());
  EXPECT_EQ(events[2].name, "content_block_start");
  EXPECT_EQ(events[2].data["content_block"], json::parse(R"({"type": "text", "text": ""})"));
  const std::vector<std::string> all = names(events);
  const std::vector<std::string> tail(all.end() - 3, all.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"content_block_stop", "message_delta", "message_stop"}));
  json streamed = assemble(events);
  json expected = body;
  streamed.erase("id");
  expected.erase("id");
  EXPECT_EQ(streamed, expected);
}

TEST(AnthropicHttp, StopSequenceIsReported) {
  FakeScript script;
  script.reply = "alpha beta STOP gamma";
  TestServer s(script);
  json req = simple_request();
  req["stop_sequences"] = {"never", "STOP", "beta X"};
  auto r = post(s, "/v1/messages", req);
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  EXPECT_EQ(body["content"][0]["text"], "alpha beta ");
  EXPECT_EQ(body["stop_reason"], "stop_sequence");
  EXPECT_EQ(body["stop_sequence"], "STOP");
  req["stream"] = true;
  const json streamed = assemble(sse_events(post(s, "/v1/messages", req)->body));
  EXPECT_EQ(streamed["stop_reason"], "stop_sequence");
  EXPECT_EQ(streamed["stop_sequence"], "STOP");
  EXPECT_EQ(streamed["content"], body["content"]);

  // Cut by max_tokens.
  FakeScript endless;
  endless.reply = "ab";
  endless.endless = true;
  TestServer e(endless);
  json lim = simple_request();
  lim["max_tokens"] = 5;
  const json lb = json::parse(post(e, "/v1/messages", lim)->body);
  EXPECT_EQ(lb["stop_reason"], "max_tokens");
  EXPECT_EQ(lb["content"][0]["text"], "ababa");
  EXPECT_EQ(lb["usage"]["output_tokens"], 5);
}

const char* kToolReply =
    "<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>";

json tool_request() {
  return json::parse(R"({"model": "m", "max_tokens": 200, "messages": [{"role": "user", "content": "Weather in Paris?"}],
    "tools": [{"name": "get_weather", "description": "Current weather",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]})");
}

TEST(AnthropicHttp, ToolUseFromTheModelsSyntaxAndToolResultRoundTrip) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  FakeScript script;
  script.reply = kToolReply;
  script.ctx = 4096;
  TestServer s(script, with_template("chat-templates/Qwen-Qwen3-0.6B.jinja"));
  auto r = post(s, "/v1/messages", tool_request());
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  EXPECT_EQ(body["stop_reason"], "tool_use");
  ASSERT_EQ(body["content"].size(), 2u) << body.dump();
  EXPECT_EQ(body["content"][0], json::parse(R"({"type": "thinking", "thinking": "The user wants the weather.", "signature": ""})"));
  const json& use = body["content"][1];
  EXPECT_EQ(use["type"], "tool_use");
  EXPECT_EQ(use["name"], "get_weather");
  EXPECT_EQ(use["input"], json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(use["id"].get<std::string>().rfind("toolu_", 0), 0u);

  json sreq = tool_request();
  sreq["stream"] = true;
  const auto events = sse_events(post(s, "/v1/messages", sreq)->body);
  int input_deltas = 0;
  for (const SseEvent& e : events)
    if (e.name == "content_block_delta" && e.data["delta"]["type"] == "input_json_delta") ++input_deltas;
  EXPECT_GE(input_deltas, 1);
  json streamed = assemble(events);
  EXPECT_EQ(streamed["stop_reason"], "tool_use");
  ASSERT_EQ(streamed["content"].size(), 2u) << streamed.dump();
  EXPECT_EQ(streamed["content"][0], body["content"][0]);
  EXPECT_EQ(streamed["content"][1]["input"], use["input"]);
  EXPECT_EQ(streamed["content"][1]["name"], "get_weather");

  // The round trip: the call and its result rendered by the template as the model wrote them.
  json turn2 = tool_request();
  turn2["messages"].push_back({{"role", "assistant"}, {"content", json::array({use})}});
  turn2["messages"].push_back(json::parse(R"({"role": "user", "content": [{"type": "tool_result", "content": "21C, sunny"}]})"));
  turn2["messages"][2]["content"][0]["tool_use_id"] = use["id"];
  turn2["thinking"] = {{"type", "disabled"}};
  FakeScript echo;  // the engine echoes the prompt: the answer is the rendered conversation
  echo.ctx = 4096;
  TestServer e(echo, with_template("chat-templates/Qwen-Qwen3-0.6B.jinja"));
  turn2["max_tokens"] = 2000;
  turn2["tool_choice"] = {{"type", "none"}};
  auto r2 = post(e, "/v1/messages", turn2);
  ASSERT_EQ(r2->status, 200) << r2->body;
  const std::string prompt = json::parse(r2->body)["content"][0]["text"];
  EXPECT_NE(prompt.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
            std::string::npos) << prompt;
  EXPECT_NE(prompt.find("<tool_response>\n21C, sunny\n</tool_response>"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("<think>\n\n</think>"), std::string::npos) << "thinking disabled reached the template";
}

TEST(AnthropicHttp, ForcedToolChoiceIsEnforced) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  // Random tokens under the output constraint, after a scripted "<tool_call>" (the grammar also
  // allows an optional <think> block first, where random text could run to max_tokens): only the
  // grammar can make the rest a call of get_weather with a valid input.
  FakeScript script;
  script.sample_under_constraint = true;
  script.reply = "<tool_call>";
  script.ctx = 4096;
  TestServer s(script, with_template("chat-templates/Qwen-Qwen3-0.6B.jinja"));
  json req = tool_request();
  req["tool_choice"] = {{"type", "tool"}, {"name", "get_weather"}};
  req["thinking"] = {{"type", "disabled"}};
  auto r = post(s, "/v1/messages", req);
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  EXPECT_EQ(body["stop_reason"], "tool_use");
  ASSERT_FALSE(body["content"].empty()) << body.dump();
  const json& use = body["content"].back();
  EXPECT_EQ(use["type"], "tool_use") << body.dump();
  EXPECT_EQ(use["name"], "get_weather");
  ASSERT_TRUE(use["input"].is_object());
  EXPECT_TRUE(use["input"]["city"].is_string()) << use.dump();
}

TEST(AnthropicHttp, SystemTurnsFallBackToOneLeadingSystemMessage) {
  if (!shared_model("chat-templates/Qwen3.5-4B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  FakeScript echo;
  echo.ctx = 8192;
  TestServer s(echo, with_template("chat-templates/Qwen3.5-4B.jinja"));  // raises on a system turn after the first
  json req = json::parse(R"({"max_tokens": 4000, "system": "SYS-A", "messages": [{"role": "user", "content": "hello"},
      {"role": "system", "content": "SYS-B"}], "thinking": {"type": "disabled"}})");
  auto r = post(s, "/v1/messages", req);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string prompt = json::parse(r->body)["content"][0]["text"];
  const size_t a = prompt.find("SYS-A\n\nSYS-B"), u = prompt.find("hello");
  EXPECT_NE(a, std::string::npos) << prompt;
  EXPECT_LT(a, u) << prompt;
  auto ct = post(s, "/v1/messages/count_tokens", req);
  EXPECT_EQ(ct->status, 200) << ct->body;

  // A template that accepts it (Qwen3): the system turn stays where the client put it.
  TestServer q(echo, with_template("chat-templates/Qwen-Qwen3-0.6B.jinja"));
  const std::string p2 = json::parse(post(q, "/v1/messages", req)->body)["content"][0]["text"];
  EXPECT_LT(p2.find("hello"), p2.find("<|im_start|>system\nSYS-B")) << p2;
}

void expect_anthropic_error(const httplib::Result& r, int status, const std::string& type, const std::string& needle) {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  const json b = json::parse(r->body);
  EXPECT_EQ(b["type"], "error") << r->body;
  EXPECT_EQ(b["error"]["type"], type) << r->body;
  EXPECT_NE(b["error"]["message"].get<std::string>().find(needle), std::string::npos) << r->body;
  EXPECT_FALSE(b["error"].contains("param"));
}

TEST(AnthropicHttp, ErrorsInAnthropicsShape) {
  FakeScript script;
  script.ctx = 256;
  TestServer s(script);
  expect_anthropic_error(post(s, "/v1/messages", json::parse(R"({"messages": [{"role": "user", "content":
      [{"type": "image", "source": {}}]}]})")), 400, "invalid_request_error", "messages[0].content[0].type");
  expect_anthropic_error(s.client().Post("/v1/messages", "{not json", "application/json"), 400,
                         "invalid_request_error", "not valid JSON");
  // A prompt over the context: the wording clients parse.
  json big = simple_request();
  big["messages"][0]["content"] = std::string(400, 'x');
  expect_anthropic_error(post(s, "/v1/messages", big), 400, "invalid_request_error", "prompt is too long");
  // A cap over the room left is clamped, not refused.
  json cap = simple_request();
  cap["max_tokens"] = 128000;
  EXPECT_EQ(post(s, "/v1/messages", cap)->status, 200);

  TestServer loading(FakeScript{}, test_options(), /*ready=*/false);
  expect_anthropic_error(post(loading, "/v1/messages", simple_request()), 503, "overloaded_error", "");
  expect_anthropic_error(post(loading, "/v1/messages/count_tokens", simple_request()), 503, "overloaded_error", "");

  // Mid-stream: `event: error` with the same body.
  FakeScript broken;
  broken.throw_on_generate = true;
  TestServer b(broken);
  json sreq = simple_request();
  sreq["stream"] = true;
  auto st = post(b, "/v1/messages", sreq);
  ASSERT_EQ(st->status, 200);
  const auto events = sse_events(st->body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().name, "message_start");
  EXPECT_EQ(events.back().name, "error") << st->body;
  EXPECT_EQ(events.back().data["type"], "error");
  EXPECT_EQ(events.back().data["error"]["type"], "api_error");
  auto nb = post(b, "/v1/messages", simple_request());
  expect_anthropic_error(nb, 500, "api_error", "");
}

TEST(AnthropicHttp, ApiKeyFromXApiKeyOrBearer) {
  server::ServerOptions o = test_options();
  o.api_key = "sekret";
  FakeScript script;
  script.reply = "ok";
  TestServer s(script, o);
  EXPECT_EQ(post(s, "/v1/messages", simple_request(), {{"x-api-key", "sekret"}})->status, 200);
  EXPECT_EQ(post(s, "/v1/messages", simple_request(), {{"Authorization", "Bearer sekret"}})->status, 200);
  EXPECT_EQ(post(s, "/v1/messages", simple_request(), {{"x-api-key", "wrong"}})->status, 401);
  EXPECT_EQ(post(s, "/v1/messages/count_tokens", simple_request(), {})->status, 401);
}

}  // namespace
}  // namespace anelm::testing
