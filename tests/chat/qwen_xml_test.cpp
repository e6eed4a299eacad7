// The Qwen XML tool-call syntax (Qwen3-Coder, Qwen3.5): parse_message and StreamParser on real
// output shapes, argument values typed by the tools' schemas, and the robustness rules of
// chat_format.h (malformed markup, cut outputs, bounds), checked at every chunking.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "chat/chat_format.h"
#include "tests/chat/stream_check.h"

namespace anelm::chat {
namespace {

using json = nlohmann::ordered_json;
using testing::describe;
using testing::expect_parse_and_stream;
using testing::expect_stream_equals;
using testing::run_stream;

ParsedMessage msg(std::string reasoning, std::string content,
                  std::vector<std::pair<std::string, std::string>> calls = {}) {
  ParsedMessage m;
  m.reasoning = std::move(reasoning);
  m.content = std::move(content);
  for (auto& [name, args] : calls) m.tool_calls.push_back(ToolCall{"", name, args});
  return m;
}

ChatFormat qwen_xml(ReasoningSyntax reasoning = ReasoningSyntax::kNone) {
  ChatFormat f;
  f.tools = ToolSyntax::kQwenXml;
  f.reasoning = reasoning;
  f.template_accepts_tools = true;
  return f;
}

const ChatFormat kCoder = qwen_xml();
const ChatFormat kQwen35 = qwen_xml(ReasoningSyntax::kThinkTags);

// Tools as a request offers them: every JSON type, and unions.
const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]},
                   "zip": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "number"}}}}},
  {"type": "function", "function": {"name": "configure", "parameters": {"type": "object",
    "properties": {"opts": {"type": "object"}, "tags": {"type": "array", "items": {"type": "string"}},
                   "dry_run": {"type": "boolean"}, "limit": {"type": ["integer", "null"]},
                   "label": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                   "mode": {"enum": [1, 2, 3]}}}}},
  {"name": "bare", "parameters": {"properties": {"n": {"type": "integer"}}}}
])");

ParseOptions opts(bool starts_in_reasoning = false) {
  ParseOptions o;
  o.starts_in_reasoning = starts_in_reasoning;
  o.id_seed = 42;
  o.tools = std::make_shared<const json>(kTools);
  return o;
}

ParseOptions untyped() {
  ParseOptions o = opts();
  o.tools = nullptr;
  return o;
}

std::string call(const std::string& name, const std::vector<std::pair<std::string, std::string>>& params) {
  std::string s = "<tool_call>\n<function=" + name + ">\n";
  for (const auto& [k, v] : params) s += "<parameter=" + k + ">\n" + v + "\n</parameter>\n";
  return s + "</function>\n</tool_call>";
}

const std::string kWeather = call("get_weather", {{"city", "Paris"}});

TEST(QwenXmlParse, OneCall) {
  expect_parse_and_stream(kWeather, kCoder, opts(), msg("", "", {{"get_weather", "{\"city\": \"Paris\"}"}}));
}

TEST(QwenXmlParse, SeveralParametersAndNoParameters) {
  expect_parse_and_stream(call("get_weather", {{"city", "New York"}, {"unit", "f"}}), kCoder, opts(),
                          msg("", "", {{"get_weather", "{\"city\": \"New York\", \"unit\": \"f\"}"}}));
  expect_parse_and_stream("<tool_call>\n<function=now>\n</function>\n</tool_call>", kCoder, opts(),
                          msg("", "", {{"now", "{}"}}));
}

TEST(QwenXmlParse, ParallelCalls) {  // as the Qwen3.5 template renders them
  const std::string text = call("get_weather", {{"city", "Rome"}}) + "\n" + call("add", {{"a", "3"}, {"b", "4"}});
  expect_parse_and_stream(text, kCoder, opts(),
                          msg("", "", {{"get_weather", "{\"city\": \"Rome\"}"}, {"add", "{\"a\": 3, \"b\": 4}"}}));
  // Step 3.5 writes them back to back.
  expect_parse_and_stream(call("add", {{"a", "1"}}) + call("add", {{"a", "2"}}), kCoder, opts(),
                          msg("", "", {{"add", "{\"a\": 1}"}, {"add", "{\"a\": 2}"}}));
}

TEST(QwenXmlParse, ContentAroundTheCall) {
  expect_parse_and_stream("Let me check the weather.\n\n" + kWeather + "\nDone.", kCoder, opts(),
                          msg("", "Let me check the weather.Done.", {{"get_weather", "{\"city\": \"Paris\"}"}}));
}

TEST(QwenXmlParse, ReasoningBeforeTheCall) {
  // Qwen3.5 with thinking on: the prompt ends with "<think>\n", the output starts inside it.
  expect_parse_and_stream("The user wants the weather.\n</think>\n\n" + kWeather, kQwen35, opts(true),
                          msg("The user wants the weather.", "", {{"get_weather", "{\"city\": \"Paris\"}"}}));
  // Thinking off: the prompt closed an empty block; markup inside reasoning stays reasoning.
  expect_parse_and_stream(kWeather, kQwen35, opts(false), msg("", "", {{"get_weather", "{\"city\": \"Paris\"}"}}));
  expect_parse_and_stream("<think>\nmaybe " + kWeather + "\n</think>\n\nNo call.", kQwen35, opts(),
                          msg("maybe " + kWeather, "No call."), false);
}

TEST(QwenXmlParse, ValuesAreTypedByTheSchema) {
  const std::string text = call("configure", {{"opts", "{\"depth\": [1, {\"b\": \"}<\"}], \"x\": null}"},
                                              {"tags", "[\"a\", \"b\"]"},
                                              {"dry_run", "True"},
                                              {"limit", "None"},
                                              {"label", "7"},
                                              {"mode", "2"}});
  expect_parse_and_stream(text, kCoder, opts(),
                          msg("", "", {{"configure",
                                        "{\"opts\": {\"depth\": [1, {\"b\": \"}<\"}], \"x\": null}, \"tags\": "
                                        "[\"a\", \"b\"], \"dry_run\": true, \"limit\": null, \"label\": 7, "
                                        "\"mode\": 2}"}}));
  expect_parse_and_stream(call("configure", {{"dry_run", "false"}, {"limit", "25"}, {"label", "v2"}}), kCoder, opts(),
                          msg("", "", {{"configure", "{\"dry_run\": false, \"limit\": 25, \"label\": \"v2\"}"}}));
  // Numbers: integer and number both take any JSON number; a bare function object works too.
  expect_parse_and_stream(call("add", {{"a", "-3"}, {"b", "2.5e1"}}) + call("bare", {{"n", "9"}}), kCoder, opts(),
                          msg("", "", {{"add", "{\"a\": -3, \"b\": 2.5e1}"}, {"bare", "{\"n\": 9}"}}));
}

TEST(QwenXmlParse, StringParametersStayStrings) {
  // A value that looks like a number, JSON or a boolean is still the raw text of a string parameter.
  expect_parse_and_stream(call("get_weather", {{"zip", "01234"}, {"city", "42"}, {"unit", "{\"a\": 1}"}}), kCoder,
                          opts(),
                          msg("", "", {{"get_weather", "{\"zip\": \"01234\", \"city\": \"42\", \"unit\": \"{\\\"a\\\": 1}\"}"}}));
  // Multi-line text with quotes, backslashes, tabs and markup-like bytes; only the framing newlines go.
  const std::string code = "def f(x):\n\treturn \"a\\\\b\" if x < 2 else '</par'\n\n";
  expect_parse_and_stream(call("get_weather", {{"city", code}}), kCoder, opts(),
                          msg("", "", {{"get_weather", "{\"city\": " + json(code).dump() + "}"}}));
  expect_parse_and_stream(call("get_weather", {{"city", ""}}), kCoder, opts(),
                          msg("", "", {{"get_weather", "{\"city\": \"\"}"}}));
}

TEST(QwenXmlParse, MismatchedTypesFallBackToStrings) {
  expect_parse_and_stream(call("add", {{"a", "three"}, {"b", "[1]"}}), kCoder, opts(),
                          msg("", "", {{"add", "{\"a\": \"three\", \"b\": \"[1]\"}"}}));
  expect_parse_and_stream(call("configure", {{"opts", "{\"a\": "}, {"dry_run", "yes"}, {"mode", "\"2\""}}), kCoder,
                          opts(),
                          msg("", "", {{"configure", "{\"opts\": \"{\\\"a\\\": \", \"dry_run\": \"yes\", \"mode\": \"\\\"2\\\"\"}"}}));
}

TEST(QwenXmlParse, UntypedValuesTryJsonFirst) {
  // No tools offered (or an unknown function / parameter): JSON when the text is JSON.
  const std::string text =
      call("get_weather", {{"city", "Paris"}, {"zip", "75001"}, {"unit", "\"c\""}, {"x", "{\"k\": [true]}"}});
  const auto expected = msg("", "", {{"get_weather", "{\"city\": \"Paris\", \"zip\": 75001, \"unit\": \"c\", "
                                                     "\"x\": {\"k\": [true]}}"}});
  expect_parse_and_stream(text, kCoder, untyped(), expected);
  expect_parse_and_stream(call("unknown_fn", {{"a", "1"}, {"b", "True"}}), kCoder, opts(),
                          msg("", "", {{"unknown_fn", "{\"a\": 1, \"b\": \"True\"}"}}));
}

TEST(QwenXmlParse, LenientFraming) {
  // No newline framing, CRLF-free compact tags, </function> left out, </tool_call> left out.
  expect_parse_and_stream("<tool_call><function=add><parameter=a>5</parameter></function></tool_call>", kCoder,
                          opts(), msg("", "", {{"add", "{\"a\": 5}"}}));
  expect_parse_and_stream("<tool_call>\n<function=add>\n<parameter=a>\n5\n</parameter>\n</tool_call>", kCoder,
                          opts(), msg("", "", {{"add", "{\"a\": 5}"}}));
  expect_parse_and_stream("<tool_call>\n<function=add>\n<parameter=a>\n5\n</parameter>\n</function>\nDone.", kCoder,
                          opts(), msg("", "Done.", {{"add", "{\"a\": 5}"}}));
  expect_parse_and_stream("<tool_call>\n<function=add>\n<parameter=a>\n5\n</parameter>\n</function>\n</tool_", kCoder,
                          opts(), msg("", "", {{"add", "{\"a\": 5}"}}));
}

TEST(QwenXmlParse, MalformedMarkupBeforeTheAnnouncementStaysContent) {
  for (const std::string text : {
           "<tool_call>\n<func=get_weather>\n</func>\n</tool_call>",
           "<tool_call>\n<function=>\n</function>\n</tool_call>",
           "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
           "<tool_call>\n<function=get\nweather>\n</function>",
           "Sure <tool_call> is how I call tools.",
       }) {
    expect_parse_and_stream(text, kCoder, opts(), msg("", text), false);
  }
}

TEST(QwenXmlParse, MalformedMarkupAfterTheAnnouncement) {
  // parse_message: the whole block is content. Streaming: the call was announced and is dropped
  // from the final message; the rest is content.
  for (const std::string text : {
           "Ok.\n<tool_call>\n<function=add>\n<param=a>\n1\n</param>\n</function>\n</tool_call>",
           "Ok.\n<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\nstray\n</function>\n</tool_call>",
           "Ok.\n<tool_call>\n<function=add>\n<parameter=>\n1\n</parameter>\n</function>\n</tool_call>",
       }) {
    const ParsedMessage parsed = parse_message(text, kCoder, opts());
    EXPECT_EQ(parsed.content, text);
    EXPECT_TRUE(parsed.tool_calls.empty()) << describe(parsed);
    ParsedMessage final;
    const auto r = run_stream(text, kCoder, opts(), {}, false, &final);
    EXPECT_TRUE(r.problems.empty()) << text;
    EXPECT_TRUE(final.tool_calls.empty()) << describe(final);
    EXPECT_EQ(final.content.substr(0, 3), "Ok.");
    expect_stream_equals(text, kCoder, opts(), r.message, false, 10);
  }
}

TEST(QwenXmlParse, TruncatedCalls) {
  const std::string before = "Checking.\n";
  const std::string full = before + kWeather + "\n" + call("add", {{"a", "1"}, {"b", "2"}});
  const std::size_t first_done = full.find("</function>") + std::string("</function>").size();
  const std::size_t second_done = full.rfind("</function>") + std::string("</function>").size();
  const std::size_t first_announced = full.find("get_weather>") + std::string("get_weather>").size();
  for (std::size_t len = 0; len <= full.size(); ++len) {
    const std::string text = full.substr(0, len);
    const std::size_t whole = len >= second_done ? 2 : len >= first_done ? 1 : 0;
    // A cut output: unfinished markup is dropped, only complete calls are calls.
    const std::string content = len <= before.size() ? text : "Checking.";
    for (const auto& cuts : testing::all_chunkings(text.size(), 2, 5)) {
      ParsedMessage final;
      const testing::Reassembled r = run_stream(text, kCoder, opts(), cuts, true, &final);
      ASSERT_TRUE(r.problems.empty()) << text << ": " << r.problems[0];
      ASSERT_EQ(final.content, content) << text;
      ASSERT_EQ(final.tool_calls.size(), whole) << text << "\n" << describe(final);
    }
    // A natural end: an unfinished block is content (before its call was announced, or in parse).
    const ParsedMessage parsed = parse_message(text, kCoder, opts());
    if (len > before.size() && len < first_announced) {
      EXPECT_EQ(parsed.content, text);
    }
    if (len > first_announced && len < first_done) {
      EXPECT_EQ(parsed.content, text) << "an announced call cut short is content in parse_message";
      EXPECT_TRUE(parsed.tool_calls.empty());
    }
    if (len >= first_done) {
      EXPECT_EQ(parsed.tool_calls.size(), len >= second_done ? 2u : 1u) << text;
    }
  }
}

// The kToolCallArgs fragments of each call, concatenated, are its final arguments, byte for byte,
// and valid JSON, whatever the chunking.
TEST(QwenXmlParse, FragmentsConcatenateToTheArguments) {
  const std::string text = "Plan:\n" + call("configure", {{"opts", "{\"a\": {\"b\": [1, 2]}}"}, {"tags", "[\"x\"]"}}) +
                           "\n" + call("get_weather", {{"city", "São Paulo\n\"centro\""}, {"unit", "c"}});
  std::mt19937 rng(3);
  for (int round = 0; round < 30; ++round) {
    StreamParser p(kCoder, opts());
    std::vector<std::string> args;
    auto take = [&](const std::vector<Delta>& ds) {
      for (const Delta& d : ds) {
        if (d.kind == Delta::Kind::kToolCallStart) args.resize(static_cast<std::size_t>(d.index) + 1);
        if (d.kind == Delta::Kind::kToolCallArgs) args.at(static_cast<std::size_t>(d.index)) += d.text;
      }
    };
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t n = round == 0 ? 1 : 1 + rng() % 9;
      take(p.feed(std::string_view(text).substr(i, n)));
      i += n;
    }
    take(p.finish());
    ASSERT_EQ(p.message().tool_calls.size(), 2u);
    ASSERT_EQ(args.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(args[i], p.message().tool_calls[i].arguments);
      EXPECT_TRUE(json::accept(args[i])) << args[i];
    }
    EXPECT_EQ(json::parse(args[1])["city"], "São Paulo\n\"centro\"");
  }
}

TEST(QwenXmlParse, StringValuesStreamAsWritten) {
  StreamParser p(kCoder, opts());
  auto d1 = p.feed("<tool_call>\n<function=get_weather>\n<parameter=city>\nSan");
  ASSERT_EQ(d1.size(), 2u);
  EXPECT_EQ(d1[0].kind, Delta::Kind::kToolCallStart);
  EXPECT_EQ(d1[0].name, "get_weather");
  EXPECT_EQ(d1[1].text, "{\"city\": \"San");
  EXPECT_TRUE(p.in_tool_call());
  auto d2 = p.feed(" Jose\n</param");  // the newline and the partial marker wait
  ASSERT_EQ(d2.size(), 1u);
  EXPECT_EQ(d2[0].text, " Jose");
  auto d3 = p.feed("eter>\n<parameter=zip>\n95");  // typed or not, a string-only value streams
  ASSERT_EQ(d3.size(), 1u);
  EXPECT_EQ(d3[0].text, "\", \"zip\": \"95");
  auto d4 = p.feed("1\n</parameter>\n<parameter=x>\n12");  // an untyped value waits for its end
  ASSERT_EQ(d4.size(), 1u);
  EXPECT_EQ(d4[0].text, "1\"");
  auto d5 = p.feed("\n</parameter>\n</function>\n</tool_call>");
  ASSERT_EQ(d5.size(), 1u);
  EXPECT_EQ(d5[0].text, ", \"x\": 12}");
  EXPECT_FALSE(p.in_tool_call());
  EXPECT_TRUE(p.finish().empty());
}

TEST(QwenXmlParse, LongValuesAreBounded) {
  // A string value far over kMaxHeldBytes streams; an untyped one over kMaxTypedValueBytes becomes
  // a string and streams from then on. Neither is held whole, neither fails the call.
  const std::string big(3 * kMaxHeldBytes, 'y');
  const std::string typed_big = "[" + std::string(kMaxTypedValueBytes + 10, '1') + "]";
  const std::string text = call("get_weather", {{"city", big}, {"other", typed_big}});
  StreamParser p(kCoder, opts());
  std::size_t largest_gap = 0, fed = 0, streamed = 0;
  for (std::size_t i = 0; i < text.size(); i += 512) {
    for (const Delta& d : p.feed(std::string_view(text).substr(i, 512))) streamed += d.text.size();
    fed = std::min(text.size(), i + 512);
    largest_gap = std::max(largest_gap, fed > streamed ? fed - streamed : 0);
  }
  p.finish();
  EXPECT_LE(largest_gap, kMaxTypedValueBytes + 1024);
  ASSERT_EQ(p.message().tool_calls.size(), 1u);
  const json args = json::parse(p.message().tool_calls[0].arguments);
  EXPECT_EQ(args["city"], big);
  EXPECT_EQ(args["other"], typed_big);
}

TEST(QwenXmlParse, ToolsNotOfferedKeepsMarkupAsContent) {
  ParseOptions o = opts();
  o.parse_tools = false;
  expect_parse_and_stream(kWeather, kCoder, o, msg("", kWeather), false);
}

TEST(QwenXmlParse, FuzzedOutputsNeverThrowAndStreamIsChunkingInvariant) {
  const std::string seed = "<think>\nplan\n</think>\n\nText " +
                           call("configure", {{"opts", "{\"a\": [1]}"}, {"dry_run", "True"}}) + "\n" + kWeather;
  std::mt19937 rng(11);
  const std::string alphabet = "<>/=\n_fpt\"{}[]";
  for (int iter = 0; iter < 300; ++iter) {
    std::string text = seed;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text.erase(at, 1 + rng() % 3);
          break;
        case 1:
          text.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          text.resize(at);
          break;
      }
    }
    ParsedMessage final;
    const auto whole = run_stream(text, kQwen35, opts(), {}, false, &final);
    ASSERT_TRUE(whole.problems.empty()) << text;
    expect_stream_equals(text, kQwen35, opts(), whole.message, false, 4);
    for (const ToolCall& c : final.tool_calls) EXPECT_TRUE(json::accept(c.arguments)) << c.arguments;
    const ParsedMessage parsed = parse_message(text, kQwen35, opts());
    EXPECT_LE(parsed.tool_calls.size(), whole.message.tool_calls.size()) << text;
  }
}

}  // namespace
}  // namespace anelm::chat
