// tool_call_shape and the payload schemas for constrained decoding.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "chat/chat_format.h"

namespace anelm::chat {
namespace {

using nlohmann::json;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "now", "description": "Time, no parameters"}},
  {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}
])");

TEST(ToolCallPayloadSchema, AllTools) {
  const json s = tool_call_payload_schema(ToolSyntax::kHermes, kTools, "");
  ASSERT_TRUE(s.contains("anyOf"));
  ASSERT_EQ(s["anyOf"].size(), 3u);
  const json expected0 = json::parse(R"({"type": "object",
    "properties": {"name": {"const": "get_weather"},
                   "arguments": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    "required": ["name", "arguments"], "additionalProperties": false})");
  EXPECT_EQ(s["anyOf"][0], expected0);
  EXPECT_EQ(s["anyOf"][1]["properties"]["name"], json({{"const", "now"}}));
  EXPECT_EQ(s["anyOf"][1]["properties"]["arguments"],
            json({{"type", "object"}}));                                     // missing parameters
  EXPECT_EQ(s["anyOf"][2]["properties"]["name"], json({{"const", "add"}}));  // bare function object
}

TEST(ToolCallPayloadSchema, OnlyName) {
  const json s = tool_call_payload_schema(ToolSyntax::kMistral, kTools, "get_weather");
  EXPECT_FALSE(s.contains("anyOf"));
  EXPECT_EQ(s["properties"]["name"], json({{"const", "get_weather"}}));
  EXPECT_EQ(s["required"], json({"name", "arguments"}));
  EXPECT_THROW(tool_call_payload_schema(ToolSyntax::kHermes, kTools, "missing"),
               std::invalid_argument);
  EXPECT_THROW(tool_call_payload_schema(ToolSyntax::kHermes, json::array(), ""),
               std::invalid_argument);
}

TEST(ToolCallPayloadSchema, Llama3UsesParameters) {
  const json s = tool_call_payload_schema(ToolSyntax::kLlama3, kTools, "add");
  EXPECT_TRUE(s["properties"].contains("parameters"));
  EXPECT_FALSE(s["properties"].contains("arguments"));
  EXPECT_EQ(s["required"], json({"name", "parameters"}));
}

TEST(ToolCallPayloadSchema, ArgumentsSchemaAndEnvelope) {
  EXPECT_EQ(tool_arguments_schema(kTools, "now"), json({{"type", "object"}}));
  EXPECT_EQ(tool_arguments_schema(kTools, "add")["properties"]["a"]["type"], "integer");
  EXPECT_THROW(tool_arguments_schema(kTools, "nope"), std::invalid_argument);

  const json env = generic_envelope_schema(kTools, "", true, true);
  ASSERT_EQ(env["anyOf"].size(), 2u);
  EXPECT_EQ(env["anyOf"][0]["properties"]["tool_calls"]["items"],
            tool_call_payload_schema(ToolSyntax::kGeneric, kTools, ""));
  EXPECT_FALSE(env["anyOf"][0]["properties"]["tool_calls"].contains("maxItems"));
  EXPECT_EQ(env["anyOf"][1]["properties"]["response"], json({{"type", "string"}}));
  const json forced = generic_envelope_schema(kTools, "now", false, false);
  EXPECT_FALSE(forced.contains("anyOf"));
  EXPECT_EQ(forced["properties"]["tool_calls"]["maxItems"], 1);
}

TEST(ToolCallShape, PerSyntax) {
  const auto h = tool_call_shape(ToolSyntax::kHermes);
  EXPECT_EQ(h.trigger, "<tool_call>");
  EXPECT_EQ(h.prefix, "<tool_call>\n");
  EXPECT_EQ(h.suffix, "\n</tool_call>");
  EXPECT_EQ(h.separator, "\n");
  EXPECT_FALSE(h.parallel_in_one_json);

  const auto m = tool_call_shape(ToolSyntax::kMistral);
  EXPECT_EQ(m.trigger, "[TOOL_CALLS]");
  EXPECT_EQ(m.prefix, "[TOOL_CALLS][");
  EXPECT_EQ(m.suffix, "]");
  EXPECT_TRUE(m.parallel_in_one_json);

  ChatFormat small;
  small.tools = ToolSyntax::kMistral;
  small.mistral_form = MistralForm::kNameArgs;
  const auto s = tool_call_shape(small);
  EXPECT_TRUE(s.name_outside_json);
  EXPECT_EQ(s.prefix, "[TOOL_CALLS]");
  EXPECT_EQ(s.name_suffix, "[ARGS]");

  const auto l = tool_call_shape(ToolSyntax::kLlama3);
  EXPECT_TRUE(l.trigger_at_start);
  EXPECT_FALSE(l.supports_parallel);

  EXPECT_TRUE(tool_call_shape(ToolSyntax::kGeneric).whole_output_json);
  EXPECT_TRUE(tool_call_shape(ToolSyntax::kNone).trigger.empty());
}

// What the shapes produce parses back: a call composed from shape + payload is recovered by
// parse_message.
TEST(ToolCallShape, ComposedCallsParseBack) {
  const json payload_a = {{"name", "get_weather"}, {"arguments", {{"city", "Oslo"}}}};
  const json payload_b = {{"name", "now"}, {"arguments", json::object()}};
  ParseOptions opts;
  opts.id_seed = 3;
  for (ToolSyntax syntax : {ToolSyntax::kHermes, ToolSyntax::kMistral, ToolSyntax::kGeneric}) {
    const ToolCallShape shape = tool_call_shape(syntax);
    std::string text;
    if (shape.parallel_in_one_json) {
      text = shape.prefix + payload_a.dump() + shape.separator + payload_b.dump() + shape.suffix;
    } else {
      text = shape.prefix + payload_a.dump() + shape.suffix + shape.separator + shape.prefix +
             payload_b.dump() + shape.suffix;
    }
    ChatFormat f;
    f.tools = syntax;
    const ParsedMessage m = parse_message(text, f, opts);
    ASSERT_EQ(m.tool_calls.size(), 2u) << text;
    EXPECT_EQ(m.tool_calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(m.tool_calls[0].arguments), payload_a["arguments"]);
    EXPECT_EQ(m.tool_calls[1].name, "now");
    EXPECT_EQ(m.content, "") << text;
  }
  ChatFormat llama;
  llama.tools = ToolSyntax::kLlama3;
  const ParsedMessage l =
      parse_message(json({{"name", "now"}, {"parameters", json::object()}}).dump(), llama, opts);
  ASSERT_EQ(l.tool_calls.size(), 1u);
  ChatFormat small;
  small.tools = ToolSyntax::kMistral;
  small.mistral_form = MistralForm::kNameArgs;
  const ToolCallShape s = tool_call_shape(small);
  const ParsedMessage n =
      parse_message(s.prefix + "get_weather" + s.name_suffix + payload_a["arguments"].dump() +
                        s.suffix + s.prefix + "now" + s.name_suffix + "{}",
                    small, opts);
  ASSERT_EQ(n.tool_calls.size(), 2u);
  EXPECT_EQ(n.tool_calls[1].name, "now");
}

}  // namespace
}  // namespace anelm::chat
