// Granite 3.x (<|tool_call|>[...]) and Phi-4-mini (<|tool_call|>[...]<|/tool_call|>): detection on
// their real templates, parse_message and StreamParser on hand-written model outputs (checked at
// every chunking), the calls written back for their history, and the forced-call shapes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "chat/chat_format.h"
#include "tests/chat/stream_check.h"
#include "tests/support/shared_data.h"

namespace anelm::chat {
namespace {

using json = nlohmann::ordered_json;
using testing::expect_parse_and_stream;
using testing::expect_stream_equals;
using testing::run_stream;

using ::anelm::testing::read_file;

std::filesystem::path data_dir() { return std::filesystem::path(ANELM_SOURCE_DIR) / "tests/chat/data"; }

ParsedMessage msg(std::string content, std::vector<std::pair<std::string, std::string>> calls = {}) {
  ParsedMessage m;
  m.content = std::move(content);
  for (auto& [name, args] : calls) m.tool_calls.push_back(ToolCall{"", name, args});
  return m;
}

ChatFormat fmt(ToolSyntax tools) {
  ChatFormat f;
  f.tools = tools;
  f.template_accepts_tools = true;
  return f;
}

ParseOptions opts() {
  ParseOptions o;
  o.id_seed = 42;
  return o;
}

const ChatFormat kGranite = fmt(ToolSyntax::kGranite);
const ChatFormat kPhi4 = fmt(ToolSyntax::kPhi4);
const std::string kWeather = R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}})";
const std::string kWeatherArgs = R"({"city": "Paris", "unit": "celsius"})";
const std::string kAdd = R"({"name": "add", "arguments": {"a": 3, "b": 4}})";

// ---- detection on the real templates
// ----------------------------------------------------------------------------------------------

TEST(TokenCallsDetect, Granite33Template) {
  ANELM_REQUIRE_SHARED_MODEL(t, "chat-templates/ibm-granite-granite-3.3-2B-Instruct.jinja");
  const std::string src = read_file(t);
  const ChatFormat f = detect_chat_format(src);
  EXPECT_EQ(f.tools, ToolSyntax::kGranite);
  EXPECT_TRUE(f.template_accepts_tools);
  EXPECT_FALSE(f.template_renders_calls);  // it prints message['content'] only
  // The convention is the template's own instruction to the model.
  EXPECT_NE(src.find("respond only with <|tool_call|> followed by a JSON list of tools used"), std::string::npos);
  EXPECT_EQ(tool_call_shape(f).trigger, "<|tool_call|>");
}

TEST(TokenCallsDetect, Phi4MiniTemplate) {
  const ChatFormat f = detect_chat_format(read_file(data_dir() / "microsoft-Phi-4-mini-instruct.jinja"));
  EXPECT_EQ(f.tools, ToolSyntax::kPhi4);
  EXPECT_FALSE(f.template_accepts_tools);  // it reads message['tools'], not `tools`
  EXPECT_FALSE(f.template_renders_calls);
  EXPECT_EQ(f.reasoning, ReasoningSyntax::kNone);
}

TEST(TokenCallsDetect, Phi35HasNoToolSyntax) {
  ANELM_REQUIRE_SHARED_MODEL(t, "chat-templates/microsoft-Phi-3.5-mini-instruct.jinja");
  EXPECT_EQ(detect_chat_format(read_file(t)).tools, ToolSyntax::kNone);
}

// ---- Granite: <|tool_call|>[...], no closing marker
// ----------------------------------------------------------------------------------------------

TEST(GraniteParse, OneCall) {
  expect_parse_and_stream("<|tool_call|>[" + kWeather + "]", kGranite, opts(), msg("", {{"get_weather", kWeatherArgs}}));
}

TEST(GraniteParse, ParallelCallsInOneArray) {
  expect_parse_and_stream("<|tool_call|>[" + kWeather + ", " + kAdd + "]", kGranite, opts(),
                          msg("", {{"get_weather", kWeatherArgs}, {"add", R"({"a": 3, "b": 4})"}}));
}

TEST(GraniteParse, ParallelBlocksAndSingleObject) {
  // A second <|tool_call|> block and a bare object instead of an array are calls too.
  expect_parse_and_stream("<|tool_call|>[" + kWeather + "]\n<|tool_call|>" + kAdd, kGranite, opts(),
                          msg("", {{"get_weather", kWeatherArgs}, {"add", R"({"a": 3, "b": 4})"}}));
}

TEST(GraniteParse, TextBeforeAndAfterTheCall) {
  expect_parse_and_stream("Let me check.\n<|tool_call|>[" + kWeather + "]\nDone.", kGranite, opts(),
                          msg("Let me check.Done.", {{"get_weather", kWeatherArgs}}));
}

TEST(GraniteParse, ArgumentsAsAJsonString) {
  expect_parse_and_stream(R"(<|tool_call|>[{"arguments": "{\"q\": \"a]b\"}", "name": "search"}])", kGranite, opts(),
                          msg("", {{"search", R"({"q": "a]b"})"}}));
}

TEST(GraniteParse, ContentOnlyAndLookalikes) {
  for (const std::string text : {"The weather is fine.", "Use the <|tool_call token, or <tool_call>[] here."})
    expect_parse_and_stream(text, kGranite, opts(), msg(text), false);
}

TEST(GraniteParse, MalformedMarkupIsContent) {
  for (const std::string text : {"<|tool_call|> I cannot call tools.", "<|tool_call|>[\"get_weather\"]",
                                 "<|tool_call|>[{\"city\": \"Paris\"}]", "<|tool_call|>[{\"name\": 5}]"})
    expect_parse_and_stream(text, kGranite, opts(), msg(text), false);
}

TEST(GraniteParse, TruncatedCallIsContentAndDroppedFromTheStream) {
  const std::string text = "Sure. <|tool_call|>[" + kWeather + ", {\"name\": \"add\", \"arguments\": {\"a\": 3";
  const ParsedMessage parsed = parse_message(text, kGranite, opts());
  EXPECT_EQ(parsed.content, text);  // the whole block, as the model wrote it
  EXPECT_TRUE(parsed.tool_calls.empty());
  // Streaming announced both calls; message() keeps only the complete one.
  ParsedMessage final;
  run_stream(text, kGranite, opts(), {}, false, &final);
  ASSERT_EQ(final.tool_calls.size(), 1u);
  EXPECT_EQ(final.tool_calls[0].arguments, kWeatherArgs);
  // Cut by the token limit: the unfinished block is dropped, the text before it stays.
  ParsedMessage cut;
  run_stream(text, kGranite, opts(), {}, true, &cut);
  EXPECT_EQ(cut.content, "Sure.");
}

TEST(GraniteParse, NotParsedWithoutTools) {
  ParseOptions o = opts();
  o.parse_tools = false;
  const std::string text = "<|tool_call|>[" + kWeather + "]";
  expect_parse_and_stream(text, kGranite, o, msg(text), false);
}

// ---- Phi-4-mini: <|tool_call|>[...]<|/tool_call|>
// ----------------------------------------------------------------------------------------------

TEST(Phi4Parse, OneCall) {
  expect_parse_and_stream("<|tool_call|>[" + kWeather + "]<|/tool_call|>", kPhi4, opts(),
                          msg("", {{"get_weather", kWeatherArgs}}));
}

TEST(Phi4Parse, ParallelCalls) {
  expect_parse_and_stream("<|tool_call|>[" + kWeather + ",\n " + kAdd + "]<|/tool_call|>", kPhi4, opts(),
                          msg("", {{"get_weather", kWeatherArgs}, {"add", R"({"a": 3, "b": 4})"}}));
  expect_parse_and_stream("<|tool_call|>" + kWeather + "<|/tool_call|><|tool_call|>" + kAdd + "<|/tool_call|>", kPhi4,
                          opts(), msg("", {{"get_weather", kWeatherArgs}, {"add", R"({"a": 3, "b": 4})"}}));
}

TEST(Phi4Parse, TextAroundTheCall) {
  expect_parse_and_stream("I'll look it up. <|tool_call|>[" + kWeather + "]<|/tool_call|> One moment.", kPhi4, opts(),
                          msg("I'll look it up.One moment.", {{"get_weather", kWeatherArgs}}));
}

TEST(Phi4Parse, MissingOrTruncatedClosingMarkerIsTolerated) {
  expect_parse_and_stream("<|tool_call|>[" + kWeather + "]", kPhi4, opts(), msg("", {{"get_weather", kWeatherArgs}}));
  expect_parse_and_stream("<|tool_call|>[" + kWeather + "]<|/tool_", kPhi4, opts(),
                          msg("", {{"get_weather", kWeatherArgs}}));
}

TEST(Phi4Parse, MalformedMarkupIsContent) {
  for (const std::string text : {"<|tool_call|>get_weather(city='Paris')<|/tool_call|>",
                                 "<|tool_call|>[{\"name\": \"f\", \"arguments\": [1]}]<|/tool_call|>",
                                 "<|tool_call|>[{\"arguments\": {}, \"nam\": \"f\"}]<|/tool_call|>"})
    expect_parse_and_stream(text, kPhi4, opts(), msg(text), false);
}

// Streaming: whatever the chunking, the argument fragments of each call concatenate to its final
// arguments (expect_parse_and_stream checks it at every cut; here the deltas are counted too).
TEST(TokenCallsStream, ArgumentFragmentsConcatenateToTheArguments) {
  for (const ChatFormat& f : {kGranite, kPhi4}) {
    const std::string text = "<|tool_call|>[" + kWeather + ", " + kAdd + "]" + (f.tools == ToolSyntax::kPhi4 ? "<|/tool_call|>" : "");
    StreamParser p(f, opts());
    std::vector<std::string> args(2);
    int starts = 0;
    auto take = [&](const std::vector<Delta>& ds) {
      for (const Delta& d : ds) {
        if (d.kind == Delta::Kind::kToolCallStart) ++starts;
        if (d.kind == Delta::Kind::kToolCallArgs) args.at(static_cast<std::size_t>(d.index)) += d.text;
        EXPECT_NE(d.kind, Delta::Kind::kContent) << d.text;
      }
    };
    for (std::size_t i = 0; i < text.size(); i += 3) take(p.feed(std::string_view(text).substr(i, 3)));
    take(p.finish());
    EXPECT_EQ(starts, 2);
    EXPECT_EQ(args[0], kWeatherArgs);
    EXPECT_EQ(args[1], R"({"a": 3, "b": 4})");
    ASSERT_EQ(p.message().tool_calls.size(), 2u);
    EXPECT_EQ(p.message().tool_calls[1].name, "add");
  }
}

// ---- the history: calls written back in the model's syntax
// ----------------------------------------------------------------------------------------------

const json kHistoryCalls = json::parse(R"([
  {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"NYC\"}"}},
  {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": {"a": 3, "b": 4}}}])");

TEST(TokenCallsHistory, WrittenAsTheModelWritesThem) {
  // llama.cpp's Granite 3.x template test (tests/test-chat-template.cpp) renders an assistant call
  // turn as <|tool_call|>[{"name": "get_weather", "arguments": {"location": "NYC"}}].
  EXPECT_EQ(tool_calls_text(ToolSyntax::kGranite, json::array({kHistoryCalls[0]})),
            R"(<|tool_call|>[{"name": "get_weather", "arguments": {"location": "NYC"}}])");
  EXPECT_EQ(tool_calls_text(ToolSyntax::kPhi4, kHistoryCalls),
            R"(<|tool_call|>[{"name": "get_weather", "arguments": {"location": "NYC"}}, )"
            R"({"name": "add", "arguments": {"a": 3, "b": 4}}]<|/tool_call|>)");
  EXPECT_EQ(tool_calls_text(ToolSyntax::kHermes, kHistoryCalls), "");
  EXPECT_THROW(tool_calls_text(ToolSyntax::kGranite, json::parse(R"([{"function": {"arguments": "{}"}}])")),
               std::invalid_argument);
}

TEST(TokenCallsHistory, WrittenCallsParseBack) {
  for (const ChatFormat& f : {kGranite, kPhi4}) {
    const std::string text = tool_calls_text(f.tools, kHistoryCalls);
    expect_parse_and_stream(text, f, opts(), msg("", {{"get_weather", R"({"location": "NYC"})"}, {"add", R"({"a": 3, "b": 4})"}}));
  }
}

// ---- forced calls: the shapes the server's grammar is built from
// ----------------------------------------------------------------------------------------------

TEST(TokenCallsShape, ComposedCallsParseBack) {
  const json a = {{"name", "get_weather"}, {"arguments", {{"city", "Oslo"}}}};
  const json b = {{"name", "now"}, {"arguments", json::object()}};
  for (const ChatFormat& f : {kGranite, kPhi4}) {
    const ToolCallShape s = tool_call_shape(f);
    EXPECT_EQ(s.trigger, "<|tool_call|>");
    EXPECT_TRUE(s.parallel_in_one_json);
    EXPECT_EQ(s.prefix, "<|tool_call|>[");
    EXPECT_EQ(s.suffix, f.tools == ToolSyntax::kPhi4 ? "]<|/tool_call|>" : "]");
    const std::string one = s.prefix + a.dump() + s.suffix;
    const std::string two = s.prefix + a.dump() + s.separator + b.dump() + s.suffix;
    expect_parse_and_stream(one, f, opts(), msg("", {{"get_weather", R"({"city":"Oslo"})"}}));
    expect_parse_and_stream(two, f, opts(), msg("", {{"get_weather", R"({"city":"Oslo"})"}, {"now", "{}"}}));
    const json schema = tool_call_payload_schema(f.tools, json::parse(R"([{"type": "function", "function": {"name": "now"}}])"), "");
    EXPECT_EQ(schema["required"], json::array({"name", "arguments"}));
  }
}

}  // namespace
}  // namespace anelm::chat
