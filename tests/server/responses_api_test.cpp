// The OpenAI Responses API: request translation into the chat request (each input item kind, tools,
// tool_choice, text.format, reasoning), hostile input as 400s naming the field, the SSE event
// sequence and its assembly against the non-streamed Response, the function-call round trip through
// previous_response_id, GET / DELETE of stored responses and the store's bounds. Shapes follow the
// openai-node SDK types (src/resources/responses/responses.ts).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/response_store.h"
#include "server/responses_api.h"
#include "tests/support/shared_data.h"
#include "test_server.h"

namespace anelm::testing {
namespace {

using nlohmann::json;
using server::ApiError;
using server::ChatRequest;
using server::ResponsesRequest;

ChatRequest translate(const json& body, const json& history = json::array()) {
  const ResponsesRequest r = server::parse_responses_request(body.dump());
  return server::responses_to_chat(r, nlohmann::ordered_json::parse(history.dump()));
}

// The param of the 400 that translating `body` raises ("" when it does not fail).
std::string bad_param(const std::string& body) {
  try {
    const ResponsesRequest r = server::parse_responses_request(body);
    (void)server::responses_to_chat(r, nlohmann::ordered_json::array());
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400) << body;
    return e.param().empty() ? "(body)" : e.param();
  }
  return "";
}
std::string bad_param(const json& body) { return bad_param(body.dump()); }

json msgs(const ChatRequest& c) { return json::parse(c.messages.dump()); }

// ---- translation --------------------------------------------------------------------------------

TEST(ResponsesTranslate, StringInputInstructionsAndLeadingSystemMessagesMerge) {
  const ChatRequest c = translate({{"input", "Hi"}});
  EXPECT_EQ(msgs(c), json::parse(R"([{"role": "user", "content": "Hi"}])"));

  // codex: two developer messages (parts) and no instructions; qwen: instructions. One system message.
  const ChatRequest d = translate(json::parse(R"({"instructions": "Be brief.", "input": [
      {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "A"}, {"type": "input_text", "text": "B"}], "id": "x1"},
      {"role": "system", "content": "C"},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Q"}]},
      {"role": "developer", "content": "late"}]})"));
  EXPECT_EQ(msgs(d), json::parse(R"([{"role": "system", "content": "Be brief.\n\nA\nB\n\nC"},
      {"role": "user", "content": [{"type": "text", "text": "Q"}]}, {"role": "system", "content": "late"}])"));
}

TEST(ResponsesTranslate, CallsOutputsReasoningAndAssistantTurns) {
  const ChatRequest c = translate(json::parse(R"({"input": [
      {"role": "user", "content": "Weather?"},
      {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "ignored"}],
       "content": [{"type": "reasoning_text", "text": "Think."}], "encrypted_content": "opaque"},
      {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
       "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
      {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
      {"type": "function_call", "call_id": "call_b", "name": "get_time", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "call_a", "output": "21C"},
      {"type": "function_call_output", "id": "fco_1", "call_id": "call_b", "output": [{"type": "input_text", "text": "12:00"}]},
      {"type": "function_call", "call_id": "call_c", "name": "get_time", "arguments": "{\"zone\": \"utc\"}"},
      {"type": "function_call_output", "call_id": "call_c", "output": "13:00"},
      {"role": "assistant", "content": "Done."}]})"));
  EXPECT_EQ(msgs(c), json::parse(R"([
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": [{"type": "text", "text": "Checking."}], "reasoning_content": "Think.", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}, "id": "call_a"},
        {"type": "function", "function": {"name": "get_time", "arguments": {}}, "id": "call_b"}]},
      {"role": "tool", "content": "21C", "tool_call_id": "call_a"},
      {"role": "tool", "content": [{"type": "text", "text": "12:00"}], "tool_call_id": "call_b"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "get_time", "arguments": {"zone": "utc"}}, "id": "call_c"}]},
      {"role": "tool", "content": "13:00", "tool_call_id": "call_c"},
      {"role": "assistant", "content": "Done."}])")) << msgs(c).dump(1);
}

TEST(ResponsesTranslate, HistoryComesFirstAndInstructionsAreNotCarriedOver) {
  const json history = json::parse(R"([{"type": "message", "role": "user", "content": "one"},
      {"type": "message", "role": "assistant", "content": "two"}])");
  const ChatRequest c = translate(json::parse(R"({"instructions": "sys", "input": "three"})"), history);
  EXPECT_EQ(msgs(c), json::parse(R"([{"role": "system", "content": "sys"}, {"role": "user", "content": "one"},
      {"role": "assistant", "content": "two"}, {"role": "user", "content": "three"}])"));
}

TEST(ResponsesTranslate, ToolsNamespacesHostedToolsAndToolChoice) {
  const json body = json::parse(R"({"input": "x", "tool_choice": "auto", "parallel_tool_calls": false, "tools": [
      {"type": "function", "name": "exec_command", "description": "Run.", "strict": false,
       "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
      {"type": "namespace", "name": "multi_agent_v1", "description": "agents", "tools": [
        {"type": "function", "name": "spawn_agent", "parameters": {"type": "object", "properties": {}}},
        {"type": "custom", "name": "freeform"}]},
      {"type": "web_search", "external_web_access": false},
      {"type": "function", "name": "get_goal", "parameters": null, "defer_loading": true}]})");
  const ResponsesRequest r = server::parse_responses_request(body.dump());
  const ChatRequest c = server::responses_to_chat(r, nlohmann::ordered_json::array());
  EXPECT_EQ(server::tool_names(c.tools), (std::vector<std::string>{"exec_command", "spawn_agent", "get_goal"}));
  EXPECT_EQ(json::parse(c.tools[0].dump()), json::parse(R"({"type": "function", "function": {"name": "exec_command",
      "description": "Run.", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}})"));
  EXPECT_FALSE(r.chat["tools"][2]["function"].contains("parameters")) << "null parameters: none (chat decides the default)";
  EXPECT_EQ(r.tool_namespace, (std::map<std::string, std::string>{{"spawn_agent", "multi_agent_v1"}}));
  EXPECT_EQ(r.tool_paths, (std::vector<std::string>{"tools[0]", "tools[1].tools[0]", "tools[3]"}));
  EXPECT_EQ(c.tool_choice.kind, server::ToolChoice::Kind::kAuto);
  EXPECT_FALSE(c.parallel_tool_calls);
  bool logged_web = false, logged_custom = false;
  for (const std::string& s : r.ignored) {
    logged_web = logged_web || s.rfind("tools[2] ", 0) == 0;
    logged_custom = logged_custom || s.rfind("tools[1].tools[1] ", 0) == 0;
  }
  EXPECT_TRUE(logged_web && logged_custom);

  json forced = body;
  forced["tool_choice"] = {{"type", "function"}, {"name", "spawn_agent"}};
  const ChatRequest f = translate(forced);
  EXPECT_EQ(f.tool_choice.kind, server::ToolChoice::Kind::kFunction);
  EXPECT_EQ(f.tool_choice.name, "spawn_agent");
  forced["tool_choice"] = "required";
  EXPECT_EQ(translate(forced).tool_choice.kind, server::ToolChoice::Kind::kRequired);
  // Forcing a tool that cannot run here names it.
  forced["tool_choice"] = {{"type", "web_search"}};
  EXPECT_EQ(bad_param(forced), "tools[2].type");
  forced["tool_choice"] = {{"type", "custom"}, {"name", "freeform"}};
  EXPECT_EQ(bad_param(forced), "tools[1].tools[1].type");
  forced["tool_choice"] = {{"type", "function"}, {"name", "nope"}};
  EXPECT_EQ(bad_param(forced), "tool_choice.name");
  EXPECT_EQ(bad_param(json::parse(R"({"input": "x", "tool_choice": "required", "tools": [{"type": "file_search"}]})")),
            "tools[0].type");
  // Only hosted tools, not forced: no tools at all (tool_choice auto dropped with them).
  const ChatRequest none = translate(json::parse(R"({"input": "x", "tool_choice": "auto", "tools": [{"type": "web_search"}]})"));
  EXPECT_TRUE(none.tools.empty());
  EXPECT_EQ(bad_param(json::parse(R"({"input": "x", "tools": [{"type": "function", "name": "a"},
      {"type": "namespace", "name": "n", "tools": [{"type": "function", "name": "a"}]}]})")), "tools[1].tools[0].name");
}

TEST(ResponsesTranslate, SamplingFormatReasoningAndIgnoredFields) {
  const json body = json::parse(R"({"input": "x", "max_output_tokens": 77, "temperature": 0, "top_p": 0.5, "seed": 3,
      "text": {"format": {"type": "json_schema", "name": "w", "strict": true,
               "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}, "verbosity": "low"},
      "reasoning": {"effort": "minimal", "summary": "auto"}, "store": false, "stream": true,
      "metadata": {"k": "v"}, "user": "u", "prompt_cache_key": "p", "include": ["reasoning.encrypted_content"],
      "client_metadata": {"a": 1}, "safety_identifier": "s", "service_tier": "auto", "truncation": "disabled",
      "background": false, "access_programs": {"x": 1}, "background_options": {"completion_window": "2h"},
      "image": {"detail": "low"}, "some_future_field": 1})");
  const ResponsesRequest r = server::parse_responses_request(body.dump());
  const ChatRequest c = server::responses_to_chat(r, nlohmann::ordered_json::array());
  EXPECT_EQ(c.gen.max_tokens, 77);
  EXPECT_EQ(c.gen.sampling.temperature, 0.0f);
  EXPECT_EQ(c.gen.sampling.top_p, 0.5f);
  EXPECT_TRUE(c.gen.seed_given);
  EXPECT_TRUE(c.gen.stream);
  EXPECT_EQ(c.gen.response_format.kind, server::ResponseFormat::Kind::kJsonSchema);
  EXPECT_EQ(c.gen.response_format.name, "w");
  EXPECT_EQ(json::parse(c.gen.response_format.schema.dump())["properties"]["a"]["type"], "integer");
  EXPECT_EQ(json::parse(c.template_kwargs.dump()), json({{"enable_thinking", false}}));
  EXPECT_FALSE(r.store);
  EXPECT_TRUE(r.stream);
  for (const char* f : {"user", "prompt_cache_key", "include", "client_metadata", "safety_identifier", "service_tier",
                        "truncation", "access_programs", "background_options", "image", "text.verbosity",
                        "reasoning.summary", "some_future_field (unknown field)"}) {
    bool found = false;
    for (const std::string& s : r.ignored) found = found || s == f;
    EXPECT_TRUE(found) << f;
  }
  EXPECT_EQ(json::parse(translate({{"input", "x"}, {"reasoning", {{"effort", "high"}}}}).template_kwargs.dump()),
            json({{"enable_thinking", true}}));
  EXPECT_EQ(translate({{"input", "x"}, {"text", {{"format", {{"type", "json_object"}}}}}}).gen.response_format.kind,
            server::ResponseFormat::Kind::kJsonObject);
  EXPECT_TRUE(r.echo["metadata"] == nlohmann::ordered_json({{"k", "v"}}));
}

TEST(ResponsesTranslate, ChatParamsAreRenamedToResponsesFields) {
  const ResponsesRequest r = server::parse_responses_request(json::parse(R"({"input": "x", "tools": [
      {"type": "web_search"}, {"type": "namespace", "name": "n", "tools": [{"type": "function", "name": "f"}]},
      {"type": "function", "name": "g"}]})").dump());
  auto renamed = [&](const std::string& p) { return server::responses_error(server::invalid_field(p, "m"), r).param(); };
  EXPECT_EQ(renamed("tools[0].function.parameters.x"), "tools[1].tools[0].parameters.x");
  EXPECT_EQ(renamed("tools[1].function.name"), "tools[2].name");
  EXPECT_EQ(renamed("tools[9].function.name"), "tools[9].function.name");  // out of range: unchanged
  EXPECT_EQ(renamed("response_format.json_schema.schema.a"), "text.format.schema.a");
  EXPECT_EQ(renamed("response_format"), "text.format");
  EXPECT_EQ(renamed("max_tokens"), "max_output_tokens");
  EXPECT_EQ(renamed("messages[3].content"), "input");
  EXPECT_EQ(renamed("temperature"), "temperature");
}

// ---- hostile input --------------------------------------------------------------------------------

TEST(ResponsesTranslate, BadInputIs400NamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"([])", "(body)"},
      {R"({"input": 5})", "input"},
      {R"({})", "input"},
      {R"({"input": [5]})", "input[0]"},
      {R"({"input": [{"content": "x"}]})", "input[0].type"},
      {R"({"input": [{"type": 7}]})", "input[0].type"},
      {R"({"input": [{"type": "web_search_call", "id": "w"}]})", "input[0].type"},
      {R"({"input": [{"type": "item_reference", "id": "msg_1"}]})", "input[0].type"},
      {R"({"input": [{"role": "robot", "content": "x"}]})", "input[0].role"},
      {R"({"input": [{"role": "user"}]})", "input[0].content"},
      {R"({"input": [{"role": "user", "content": {"a": 1}}]})", "input[0].content"},
      {R"({"input": ["hi", {"role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "http://x"}]}]})", "input[0]"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "http://x"}]}]})", "input[0].content[1].type"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_text", "text": 3}]}]})", "input[0].content[0].text"},
      {R"({"input": [{"role": "user", "content": [{"type": "mystery"}]}]})", "input[0].content[0].type"},
      {R"({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{not json"}]})", "input[0].arguments"},
      {R"({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}]})", "input[0].arguments"},
      {R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})", "input[0].call_id"},
      {R"({"input": [{"type": "function_call_output", "call_id": "c"}]})", "input[0].output"},
      {R"({"input": [{"type": "function_call_output", "call_id": "c", "output": [{"type": "input_file", "file_id": "f"}]}]})", "input[0].output[0].type"},
      {R"({"input": [{"type": "reasoning", "content": [{"type": "summary_text", "text": "x"}]}]})", "input[0].content[0].type"},
      {R"({"input": "x", "instructions": 3})", "instructions"},
      {R"({"input": "x", "tools": {}})", "tools"},
      {R"({"input": "x", "tools": [{"type": "function"}]})", "tools[0].name"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f", "parameters": "x"}]})", "tools[0].parameters"},
      {R"({"input": "x", "tools": [{"type": "namespace", "name": "n"}]})", "tools[0].tools"},
      {R"({"input": "x", "tools": [{"name": "f"}]})", "tools[0].type"},
      {R"({"input": "x", "tool_choice": 3})", "tool_choice"},
      {R"({"input": "x", "tool_choice": "sometimes"})", "tool_choice"},
      {R"({"input": "x", "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": []}})", "tool_choice.type"},
      {R"({"input": "x", "temperature": "hot"})", "temperature"},
      {R"({"input": "x", "temperature": 5})", "temperature"},
      {R"({"input": "x", "top_p": 2})", "top_p"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens"},
      {R"({"input": "x", "max_output_tokens": "9"})", "max_output_tokens"},
      {R"({"input": "x", "store": "yes"})", "store"},
      {R"({"input": "x", "stream": 1})", "stream"},
      {R"({"input": "x", "previous_response_id": 5})", "previous_response_id"},
      {R"({"input": "x", "text": {"format": {"type": "yaml"}}})", "text.format.type"},
      {R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "n"}}})", "text.format.schema"},
      {R"({"input": "x", "reasoning": {"effort": "maximal"}})", "reasoning.effort"},
      {R"({"input": "x", "metadata": {"k": 1}})", "metadata.k"},
      {R"({"input": "x", "background": true})", "background"},
      {R"({"input": "x", "conversation": "conv_1"})", "conversation"},
      {R"({"input": "x", "prompt": {"id": "pmpt_1"}})", "prompt"},
      {R"({"input": "x", "top_logprobs": 3})", "top_logprobs"},
      {R"({"input": "x", "model": 3})", "model"},
  };
  for (const auto& [body, param] : cases) EXPECT_EQ(bad_param(body), param) << body;

  // Sizes and nesting: every bound is a 400, never a crash.
  json many = {{"input", json::array()}};
  for (int i = 0; i < 5000; ++i) many["input"].push_back({{"role", "user"}, {"content", "x"}});
  EXPECT_EQ(bad_param(many), "input");
  json parts = {{"role", "user"}, {"content", json::array()}};
  for (int i = 0; i < 2000; ++i) parts["content"].push_back({{"type", "input_text"}, {"text", "x"}});
  EXPECT_EQ(bad_param(json{{"input", json::array({parts})}}), "input[0].content");
  json tools = json::array();
  for (int i = 0; i < 200; ++i) tools.push_back({{"type", "function"}, {"name", "f" + std::to_string(i)}});
  EXPECT_EQ(bad_param(json{{"input", "x"}, {"tools", tools}}), "tools");
  EXPECT_EQ(bad_param("{\"input\": " + std::string(100000, '[') + std::string(100000, ']') + "}"), "(body)");
  const std::string deep_args = std::string(5000, '[') + std::string(5000, ']');
  EXPECT_EQ(bad_param(json{{"input", json::array({{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"},
                                                     {"arguments", deep_args}}})}}),
            "input[0].arguments");
  EXPECT_EQ(bad_param(std::string("{\"input\": \"\xff\xfe\"}")), "(body)");
  EXPECT_EQ(bad_param(std::string("{\"input\": \"ok\", \"instructions\": \"\xc3\x28\"}")), "(body)");
  json many_meta = {{"input", "x"}, {"metadata", json::object()}};
  for (int i = 0; i < 20; ++i) many_meta["metadata"]["k" + std::to_string(i)] = "v";
  EXPECT_EQ(bad_param(many_meta), "metadata");
}

// ---- the store ----------------------------------------------------------------------------------

TEST(ResponseStore, BoundedLruInCountAndBytes) {
  server::ResponseStore s(3, 1000);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(s.put("r" + std::to_string(i), {"{}", "[]"}));
  EXPECT_EQ(s.size(), 3u);
  EXPECT_FALSE(s.get("r0"));  // least recently used went first
  EXPECT_TRUE(s.get("r1"));   // r1 is now the most recent
  EXPECT_TRUE(s.put("r4", {"{}", "[]"}));
  EXPECT_TRUE(s.get("r1"));
  EXPECT_FALSE(s.get("r2"));
  EXPECT_FALSE(s.put("big", {std::string(2000, 'x'), "[]"}));  // alone over the byte bound
  EXPECT_FALSE(s.get("big"));
  EXPECT_TRUE(s.put("half", {std::string(600, 'x'), "[]"}));
  EXPECT_LE(s.bytes(), 1000u);
  EXPECT_TRUE(s.get("half"));
  EXPECT_TRUE(s.erase("half"));
  EXPECT_FALSE(s.erase("half"));
  size_t expect = 0;
  for (const char* id : {"r1", "r3", "r4"})
    if (auto e = s.get(id)) expect += std::string(id).size() + e->response.size() + e->conversation.size();
  EXPECT_EQ(s.bytes(), expect);
}

// ---- over HTTP ----------------------------------------------------------------------------------

// The Response a stream assembles to, as a client does: output items from output_item.done, the
// text of each from the deltas (checked against the .done events), the final response.* event.
struct Assembled {
  json final_response;
  std::string terminal;  // response.completed / response.incomplete / response.failed
  json items = json::array();
  std::vector<std::string> names;
};

Assembled assemble(const std::string& body) {
  Assembled a;
  std::map<std::string, std::string> text, args, reasoning;  // by item id
  int seq = 0;
  for (const SseEvent& ev : sse_events(body)) {
    EXPECT_EQ(ev.name, ev.data["type"]) << "event: line names the payload's type";
    EXPECT_EQ(ev.data["sequence_number"], seq++);
    a.names.push_back(ev.name);
    const json& d = ev.data;
    if (ev.name == "response.output_text.delta") text[d["item_id"]] += d["delta"].get<std::string>();
    if (ev.name == "response.reasoning_text.delta") reasoning[d["item_id"]] += d["delta"].get<std::string>();
    if (ev.name == "response.function_call_arguments.delta") args[d["item_id"]] += d["delta"].get<std::string>();
    if (ev.name == "response.output_text.done") { EXPECT_EQ(d["text"], text[d["item_id"]]); }
    if (ev.name == "response.reasoning_text.done") { EXPECT_EQ(d["text"], reasoning[d["item_id"]]); }
    if (ev.name == "response.function_call_arguments.done") { EXPECT_EQ(d["arguments"], args[d["item_id"]]); }
    if (ev.name == "response.output_item.added") {
      EXPECT_EQ(d["output_index"], a.items.size());
      EXPECT_EQ(d["item"]["status"], "in_progress");
    }
    if (ev.name == "response.output_item.done") {
      EXPECT_EQ(d["output_index"], a.items.size());
      const json& it = d["item"];
      if (it["type"] == "message") { EXPECT_EQ(it["content"][0]["text"], text[it["id"]]); }
      if (it["type"] == "reasoning") { EXPECT_EQ(it["content"][0]["text"], reasoning[it["id"]]); }
      if (it["type"] == "function_call") { EXPECT_EQ(it["arguments"], args[it["id"]]); }
      a.items.push_back(it);
    }
    if (ev.name == "response.completed" || ev.name == "response.incomplete" || ev.name == "response.failed") {
      a.terminal = ev.name;
      a.final_response = d["response"];
    }
  }
  return a;
}

// Items without their ids (fresh on every request), for comparing two answers.
json without_ids(json items) {
  for (json& it : items) it.erase("id");
  return items;
}

server::ServerOptions with_template(const std::string& relative) {
  server::ServerOptions o = test_options();
  if (auto path = shared_model(relative)) o.chat_template = path->string();
  return o;
}

// /health's response_store: entries and bytes held by the store (the process's, shared by the tests).
json response_store_health(TestServer& s) {
  auto h = s.client().Get("/health");
  return h && h->status == 200 ? json::parse(h->body).value("response_store", json()) : json();
}

TEST(HttpResponses, NonStreamedResponseObjectAndGetDelete) {
  FakeScript sc;
  sc.reply = "Hello there!";
  TestServer s(sc);
  const json store0 = response_store_health(s);
  ASSERT_TRUE(store0.is_object());
  EXPECT_EQ(store0["budget_bytes"], server::ResponseStore::kDefaultMaxBytes);
  auto r = s.post("/v1/responses", json::parse(R"({"model": "m", "input": "Hi", "instructions": "Be nice.",
      "metadata": {"k": "v"}, "max_output_tokens": 50})"));
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  EXPECT_EQ(b["object"], "response");
  EXPECT_EQ(b["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(b["status"], "completed");
  EXPECT_EQ(b["model"], "fake-model");
  EXPECT_TRUE(b["error"].is_null());
  EXPECT_TRUE(b["incomplete_details"].is_null());
  EXPECT_EQ(b["instructions"], "Be nice.");
  EXPECT_EQ(b["max_output_tokens"], 50);
  EXPECT_EQ(b["metadata"], json({{"k", "v"}}));
  EXPECT_EQ(b["store"], true);
  EXPECT_EQ(b["tool_choice"], "auto");
  EXPECT_EQ(b["tools"], json::array());
  ASSERT_EQ(b["output"].size(), 1u);
  const json& m = b["output"][0];
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["status"], "completed");
  EXPECT_EQ(m["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(m["content"], json::parse(R"([{"type": "output_text", "annotations": [], "logprobs": [], "text": "Hello there!"}])"));
  const json& u = b["usage"];
  EXPECT_GT(u["input_tokens"].get<int>(), 10);
  EXPECT_EQ(u["output_tokens"], 12);  // 12 bytes of the byte tokenizer
  EXPECT_EQ(u["total_tokens"], u["input_tokens"].get<int>() + 12);
  EXPECT_TRUE(u["input_tokens_details"].contains("cached_tokens"));
  EXPECT_EQ(u["output_tokens_details"]["reasoning_tokens"], 0);

  // Stored (store defaults to true): GET returns the same object, under both prefixes.
  const std::string id = b["id"];
  const json store1 = response_store_health(s);  // the stored object (and its conversation) counted
  EXPECT_EQ(store1["entries"], store0["entries"].get<int64_t>() + 1);
  EXPECT_GT(store1["bytes"].get<int64_t>(), store0["bytes"].get<int64_t>() + static_cast<int64_t>(r->body.size()));
  auto g = s.client().Get(("/v1/responses/" + id).c_str());
  ASSERT_EQ(g->status, 200);
  EXPECT_EQ(json::parse(g->body), b);
  EXPECT_EQ(s.client().Get(("/responses/" + id).c_str())->status, 200);
  auto d = s.client().Delete(("/v1/responses/" + id).c_str());
  ASSERT_EQ(d->status, 200);
  EXPECT_EQ(json::parse(d->body), json({{"id", id}, {"object", "response"}, {"deleted", true}}));
  EXPECT_EQ(response_store_health(s), store0);
  EXPECT_EQ(s.client().Get(("/v1/responses/" + id).c_str())->status, 404);
  EXPECT_EQ(s.client().Delete(("/v1/responses/" + id).c_str())->status, 404);
  auto nf = s.client().Get("/v1/responses/resp_nope");
  EXPECT_EQ(nf->status, 404);
  EXPECT_EQ(json::parse(nf->body)["error"]["type"], "invalid_request_error");

  // store: false is not kept; an unknown previous_response_id is a 404 naming it.
  auto ns = s.post("/responses", json::parse(R"({"input": "Hi", "store": false})"));
  ASSERT_EQ(ns->status, 200);
  EXPECT_EQ(json::parse(ns->body)["store"], false);
  EXPECT_EQ(s.client().Get(("/v1/responses/" + json::parse(ns->body)["id"].get<std::string>()).c_str())->status, 404);
  auto p = s.post("/v1/responses", json::parse(R"({"input": "Hi", "previous_response_id": "resp_unknown"})"));
  EXPECT_EQ(p->status, 404);
  const json pe = json::parse(p->body)["error"];
  EXPECT_EQ(pe["param"], "previous_response_id");
  EXPECT_NE(pe["message"].get<std::string>().find("resp_unknown"), std::string::npos);

  // A 400 names the Responses field.
  auto bad = s.post("/v1/responses", json::parse(R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]})"));
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "input[0].content[0].type");
}

TEST(HttpResponses, StreamedEventsAssembleToTheNonStreamedResponse) {
  FakeScript sc;
  sc.reply = "Hello there!";
  TestServer s(sc);
  json req = json::parse(R"({"input": "Hi", "temperature": 0})");
  const json plain = json::parse(s.post("/v1/responses", req)->body);
  req["stream"] = true;
  auto r = s.post("/v1/responses", req);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type").rfind("text/event-stream", 0), 0u);
  const Assembled a = assemble(r->body);
  ASSERT_GE(a.names.size(), 9u);
  const std::vector<std::string> head = {"response.created", "response.in_progress", "response.output_item.added",
                                         "response.content_part.added"};
  EXPECT_EQ(std::vector<std::string>(a.names.begin(), a.names.begin() + 4), head);
  const std::vector<std::string> tail = {"response.output_text.done", "response.content_part.done",
                                         "response.output_item.done", "response.completed"};
  EXPECT_EQ(std::vector<std::string>(a.names.end() - 4, a.names.end()), tail);
  for (size_t i = 4; i + 4 < a.names.size(); ++i) EXPECT_EQ(a.names[i], "response.output_text.delta");
  EXPECT_EQ(a.terminal, "response.completed");
  EXPECT_EQ(without_ids(a.items), without_ids(plain["output"]));
  EXPECT_EQ(a.final_response["output"], a.items);
  EXPECT_EQ(a.final_response["status"], "completed");
  EXPECT_EQ(a.final_response["usage"]["output_tokens"], plain["usage"]["output_tokens"]);
  const json created = sse_events(r->body)[0].data["response"];
  EXPECT_EQ(created["status"], "in_progress");
  EXPECT_EQ(created["id"], a.final_response["id"]);
  EXPECT_TRUE(created["output"].empty());
  // The stored object is the final one.
  auto g = s.client().Get(("/v1/responses/" + a.final_response["id"].get<std::string>()).c_str());
  ASSERT_EQ(g->status, 200);
  EXPECT_EQ(json::parse(g->body), a.final_response);
}

TEST(HttpResponses, LengthFinishIsIncompleteAndEngineErrorIsFailed) {
  FakeScript sc;
  sc.reply = "Hello there!";
  TestServer s(sc);
  json req = json::parse(R"({"input": "Hi", "max_output_tokens": 5})");
  const json b = json::parse(s.post("/v1/responses", req)->body);
  EXPECT_EQ(b["status"], "incomplete");
  EXPECT_EQ(b["incomplete_details"], json({{"reason", "max_output_tokens"}}));
  EXPECT_EQ(b["output"][0]["status"], "incomplete");
  EXPECT_EQ(b["output"][0]["content"][0]["text"], "Hello");
  req["stream"] = true;
  const Assembled a = assemble(s.post("/v1/responses", req)->body);
  EXPECT_EQ(a.terminal, "response.incomplete");
  EXPECT_EQ(a.final_response["incomplete_details"], json({{"reason", "max_output_tokens"}}));
  EXPECT_EQ(without_ids(a.items), without_ids(b["output"]));

  s.engine().script().throw_on_generate = true;
  const Assembled f = assemble(s.post("/v1/responses", req)->body);
  EXPECT_EQ(f.terminal, "response.failed");
  EXPECT_EQ(f.final_response["status"], "failed");
  EXPECT_EQ(f.final_response["error"]["code"], "server_error");
  EXPECT_FALSE(f.final_response["error"]["message"].get<std::string>().empty());
}

const char* kToolReply =
    "<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>";

json tool_request() {
  return json::parse(R"({"input": [{"role": "user", "content": "Weather in Paris?"}], "max_output_tokens": 400,
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}, {"type": "web_search"}]})");
}

TEST(HttpResponses, ReasoningAndFunctionCallStreamedAndNot) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  FakeScript sc;
  sc.reply = kToolReply;
  sc.ctx = 4096;
  TestServer s(sc, with_template("chat-templates/Qwen-Qwen3-0.6B.jinja"));
  auto r = s.post("/v1/responses", tool_request());
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  ASSERT_EQ(b["output"].size(), 2u) << b.dump(1);
  const json& rs = b["output"][0];
  EXPECT_EQ(rs["type"], "reasoning");
  EXPECT_EQ(rs["id"].get<std::string>().rfind("rs_", 0), 0u);
  EXPECT_EQ(rs["summary"], json::array());
  EXPECT_EQ(rs["content"], json::parse(R"([{"type": "reasoning_text", "text": "The user wants the weather."}])"));
  const json& fc = b["output"][1];
  EXPECT_EQ(fc["type"], "function_call");
  EXPECT_EQ(fc["status"], "completed");
  EXPECT_EQ(fc["name"], "get_weather");
  EXPECT_EQ(fc["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(fc["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(json::parse(fc["arguments"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_EQ(b["tools"], tool_request()["tools"]) << "tools are echoed as sent";

  json sreq = tool_request();
  sreq["stream"] = true;
  const Assembled a = assemble(s.post("/v1/responses", sreq)->body);
  EXPECT_EQ(a.terminal, "response.completed");
  EXPECT_EQ(without_ids(a.items)[1].value("call_id", "").rfind("call_", 0), 0u);
  json si = without_ids(a.items), bi = without_ids(b["output"]);
  si[1].erase("call_id");
  bi[1].erase("call_id");
  EXPECT_EQ(si, bi);
  for (const char* ev : {"response.reasoning_text.delta", "response.reasoning_text.done", "response.function_call_arguments.delta",
                         "response.function_call_arguments.done"})
    EXPECT_NE(std::find(a.names.begin(), a.names.end(), ev), a.names.end()) << ev;
  EXPECT_EQ(std::find(a.names.begin(), a.names.end(), "response.output_text.delta"), a.names.end()) << "no text item";
}

// What an answer says, in order: reasoning, text, then each call's name and arguments.
std::vector<std::string> said_by_response(const json& r) {
  std::vector<std::string> out;
  for (const json& it : r["output"]) {
    if (it["type"] == "function_call") {
      out.push_back(it["name"]);
      out.push_back(it["arguments"]);
    } else {
      out.push_back(it["content"][0]["text"]);
    }
  }
  return out;
}
std::vector<std::string> said_by_chat(const json& c) {
  const json& m = c["choices"][0]["message"];
  std::vector<std::string> out;
  if (m.contains("reasoning_content")) out.push_back(m["reasoning_content"]);
  const bool calls = m.contains("tool_calls") && !m["tool_calls"].empty();
  const std::string content = m["content"].is_string() ? m["content"].get<std::string>() : "";
  if (!content.empty() || !calls) out.push_back(content);
  for (const json& t : m.value("tool_calls", json::array())) {
    out.push_back(t["function"]["name"]);
    out.push_back(t["function"]["arguments"]);
  }
  return out;
}

TEST(HttpResponses, FunctionCallRoundTripThroughPreviousResponseId) {
  if (!shared_model("chat-templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP() << "shared chat templates not found";
  FakeScript sc;
  sc.reply = kToolReply;
  sc.ctx = 8192;
  TestServer s(sc, with_template("chat-templates/Qwen-Qwen3-0.6B.jinja"));
  const json first = json::parse(s.post("/v1/responses", tool_request())->body);
  ASSERT_EQ(first["output"].size(), 2u) << first.dump(1);
  const json call = first["output"][1];
  ASSERT_EQ(call["type"], "function_call");

  // Turn 2: only the tool result, continuing the stored response. The fake engine echoes its prompt
  // when it has no reply, so the answer (as parsed) is a function of the rendered prompt: it must
  // equal the answer to the same conversation sent to /v1/chat/completions, whose rendering
  // /apply-template shows.
  s.engine().script().reply = "";
  const json tools = tool_request()["tools"];
  json turn2 = {{"previous_response_id", first["id"]}, {"max_output_tokens", 4000},
                {"input", json::array({{{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "21C, sunny"}}})},
                {"tools", tools}};
  auto r2 = s.post("/v1/responses", turn2);
  ASSERT_EQ(r2->status, 200) << r2->body;
  const json second = json::parse(r2->body);
  EXPECT_EQ(second["previous_response_id"], first["id"]);

  const json chat = {
      {"max_tokens", 4000},
      {"tools", json::array({{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", tools[0]["parameters"]}}}}})},
      {"messages", json::array({
          {{"role", "user"}, {"content", "Weather in Paris?"}},
          {{"role", "assistant"}, {"content", nullptr}, {"reasoning_content", "The user wants the weather."},
           {"tool_calls", json::array({{{"id", call["call_id"]}, {"type", "function"},
                                        {"function", {{"name", "get_weather"}, {"arguments", call["arguments"]}}}}})}},
          {{"role", "tool"}, {"tool_call_id", call["call_id"]}, {"content", "21C, sunny"}}})}};
  auto rendered = s.post("/apply-template", chat);
  ASSERT_EQ(rendered->status, 200) << rendered->body;
  const std::string prompt = json::parse(rendered->body)["prompt"];
  EXPECT_NE(prompt.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
            std::string::npos) << prompt;
  EXPECT_NE(prompt.find("<tool_response>\n21C, sunny\n</tool_response>"), std::string::npos) << prompt;
  EXPECT_EQ(prompt.find("web_search"), std::string::npos);
  const json via_chat = json::parse(s.post("/v1/chat/completions", chat)->body);
  EXPECT_EQ(second["usage"]["input_tokens"], via_chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(said_by_response(second), said_by_chat(via_chat));

  // The same conversation spelled out as items (what codex sends) is the same prompt again.
  json items = tool_request();
  items["input"].push_back(first["output"][0]);
  items["input"].push_back(call);
  items["input"].push_back(turn2["input"][0]);
  items["max_output_tokens"] = 4000;
  items["store"] = false;
  const json explicit_items = json::parse(s.post("/v1/responses", items)->body);
  EXPECT_EQ(explicit_items["usage"]["input_tokens"], second["usage"]["input_tokens"]);
  EXPECT_EQ(said_by_response(explicit_items), said_by_response(second));

  // Turn 3 continues turn 2, whose stored conversation holds turn 1 and turn 2's answer.
  auto r3 = s.post("/v1/responses", json{{"previous_response_id", second["id"]}, {"input", "Thanks"}, {"max_output_tokens", 8},
                                         {"tools", tools}});
  ASSERT_EQ(r3->status, 200) << r3->body;
  EXPECT_GT(json::parse(r3->body)["usage"]["input_tokens"].get<int>(), second["usage"]["input_tokens"].get<int>() + 100);
}

TEST(HttpResponses, ChatLevelErrorsNameTheResponsesField) {
  // The output constraint rejects a schema keyword it cannot enforce (strict); its chat-side param
  // (response_format...) is renamed to the Responses field.
  TestServer s;
  auto r = s.post("/v1/responses", json::parse(R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "n",
      "strict": true, "schema": {"type": "object", "properties": {"a": {"type": "string", "not": {"maxLength": 3}}}}}}})"));
  ASSERT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["param"].get<std::string>().rfind("text.format", 0), 0u) << r->body;
}

}  // namespace
}  // namespace anelm::testing
