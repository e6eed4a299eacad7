// parse_message and StreamParser on realistic outputs of each syntax, checked at every chunking.
#include <algorithm>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "chat/chat_format.h"
#include "chat/json_text.h"
#include "tests/chat/stream_check.h"

namespace anelm::chat {
namespace {

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

ChatFormat fmt(ToolSyntax tools, ReasoningSyntax reasoning = ReasoningSyntax::kNone) {
  ChatFormat f;
  f.tools = tools;
  f.reasoning = reasoning;
  f.template_accepts_tools = tools != ToolSyntax::kNone;
  return f;
}

ParseOptions opts(bool parse_tools = true, bool starts_in_reasoning = false,
                  bool parse_reasoning = true) {
  ParseOptions o;
  o.parse_tools = parse_tools;
  o.starts_in_reasoning = starts_in_reasoning;
  o.parse_reasoning = parse_reasoning;
  o.id_seed = 42;
  return o;
}

const ChatFormat kQwen25 = fmt(ToolSyntax::kHermes);
const ChatFormat kQwen3 = fmt(ToolSyntax::kHermes, ReasoningSyntax::kThinkTags);
const ChatFormat kLlama = fmt(ToolSyntax::kLlama3);
const ChatFormat kMistral = fmt(ToolSyntax::kMistral);
const ChatFormat kGeneric = fmt(ToolSyntax::kGeneric);
const ChatFormat kR1 = fmt(ToolSyntax::kNone, ReasoningSyntax::kThinkTags);

const std::string kWeatherCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
    "\"celsius\"}}\n</tool_call>";
const std::string kWeatherArgs = "{\"city\": \"Paris\", \"unit\": \"celsius\"}";

// ---- Hermes (Qwen2.5 / Qwen3 / QwQ / Hermes)
// ---------------------------------------------------------

TEST(HermesParse, ContentOnly) {
  expect_parse_and_stream("Hello! How can I help you today?", kQwen25, opts(),
                          msg("", "Hello! How can I help you today?"));
}

TEST(HermesParse, ContentKeepsWhitespaceAndLookalikes) {
  const std::string text = "  Use a < b, the <tool_calling> API and <tool_ here.\n\n";
  expect_parse_and_stream(text, kQwen25, opts(), msg("", text), false);
}

TEST(HermesParse, OneCall) {
  expect_parse_and_stream(kWeatherCall, kQwen25, opts(),
                          msg("", "", {{"get_weather", kWeatherArgs}}));
}

TEST(HermesParse, TwoParallelCalls) {
  const std::string text =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Rome\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 3, \"b\": 4}}\n</tool_call>";
  expect_parse_and_stream(
      text, kQwen25, opts(),
      msg("", "", {{"get_weather", "{\"city\": \"Rome\"}"}, {"add", "{\"a\": 3, \"b\": 4}"}}));
}

TEST(HermesParse, TextBeforeCall) {
  expect_parse_and_stream(
      "Let me check the weather for you.\n\n" + kWeatherCall, kQwen25, opts(),
      msg("", "Let me check the weather for you.", {{"get_weather", kWeatherArgs}}));
}

TEST(HermesParse, TextAfterCallIsContent) {
  expect_parse_and_stream(kWeatherCall + "\nI will report back.", kQwen25, opts(),
                          msg("", "I will report back.", {{"get_weather", kWeatherArgs}}));
}

TEST(HermesParse, ReasoningThenContent) {
  expect_parse_and_stream(
      "<think>\nThe user greets me. I should greet back.\n</think>\n\nHello there!", kQwen3, opts(),
      msg("The user greets me. I should greet back.", "Hello there!"));
}

TEST(HermesParse, ReasoningThenCall) {
  expect_parse_and_stream("<think>\nI need the weather tool.\n</think>\n\n" + kWeatherCall, kQwen3,
                          opts(),
                          msg("I need the weather tool.", "", {{"get_weather", kWeatherArgs}}));
}

TEST(HermesParse, EmptyReasoningBlock) {  // Qwen3 with enable_thinking=false in history style
  expect_parse_and_stream("<think>\n\n</think>\n\nTokyo.", kQwen3, opts(), msg("", "Tokyo."));
}

TEST(HermesParse, ThinkOnlyAtStart) {
  const std::string text = "I think <think> tags are neat.";
  expect_parse_and_stream(text, kQwen3, opts(), msg("", text), false);
}

TEST(HermesParse, UnclosedReasoningIsAllReasoning) {
  expect_parse_and_stream("<think>\nStill thinking about <tool_call> and more", kQwen3, opts(),
                          msg("Still thinking about <tool_call> and more", ""));
}

TEST(HermesParse, StartsInReasoning) {  // QwQ: the prompt ends with "<think>\n"
  expect_parse_and_stream("Okay, 2+2.\nThat is 4.\n</think>\n\nThe answer is 4.", kQwen3,
                          opts(true, true), msg("Okay, 2+2.\nThat is 4.", "The answer is 4."));
  // A model that repeats the open marker anyway.
  expect_parse_and_stream("<think>\nOkay.\n</think>\nFour.", kQwen3, opts(true, true),
                          msg("Okay.", "Four."));
}

TEST(HermesParse, ReasoningNotParsed) {
  const std::string text = "<think>\nhmm\n</think>\n\nHi";
  expect_parse_and_stream(text, kQwen3, opts(true, false, false), msg("", text), false);
}

TEST(HermesParse, ToolsNotOfferedKeepsMarkupAsContent) {
  expect_parse_and_stream(kWeatherCall, kQwen25, opts(false), msg("", kWeatherCall), false);
}

TEST(HermesParse, Unicode) {
  const std::string text =
      "Voilà : «naïve café» — 日本語 😀\n<tool_call>\n{\"name\": \"translate\", \"arguments\": "
      "{\"text\": \"日本語 😀\", "
      "\"to\": \"fr\"}}\n</tool_call>";
  expect_parse_and_stream(text, kQwen25, opts(),
                          msg("", "Voilà : «naïve café» — 日本語 😀",
                              {{"translate", "{\"text\": \"日本語 😀\", \"to\": \"fr\"}"}}));
}

TEST(HermesParse, NestedArgumentsWithBracesAndEscapedQuotes) {
  const std::string args =
      "{\"code\": \"if (x) { return \\\"}\\\"; } // </tool_call>\", \"nested\": {\"a\": [1, "
      "{\"b\": \"{{[\"}], "
      "\"c\": {}}, \"path\": \"C:\\\\dir\\\\\"}";
  ASSERT_TRUE(nlohmann::json::accept(args));
  const std::string text =
      "<tool_call>\n{\"name\": \"run\", \"arguments\": " + args + "}\n</tool_call>";
  expect_parse_and_stream(text, kQwen25, opts(), msg("", "", {{"run", args}}));
}

TEST(HermesParse, ArgumentsAsJsonString) {
  const std::string text =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": "
      "\\\"Par\\u00eds\\\", \\\"n\\\": "
      "\\\"\\\\\\\"q\\\\\\\"\\\"} \\n\"}\n</tool_call>";
  const std::string args = "{\"city\": \"París\", \"n\": \"\\\"q\\\"\"}";
  ASSERT_TRUE(nlohmann::json::accept(args));
  expect_parse_and_stream(text, kQwen25, opts(), msg("", "", {{"get_weather", args}}));
}

TEST(HermesParse, KeysInAnyOrderAndExtraKeys) {
  const std::string text =
      "<tool_call>\n{\"id\": \"x1\", \"arguments\": {\"a\": [1, 2]}, \"extra\": null, \"name\": "
      "\"sum\"}\n</tool_call>";
  expect_parse_and_stream(text, kQwen25, opts(), msg("", "", {{"sum", "{\"a\": [1, 2]}"}}));
}

TEST(HermesParse, CompactAndArrayForms) {
  expect_parse_and_stream("<tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call>", kQwen25,
                          opts(), msg("", "", {{"now", "{}"}}));
  expect_parse_and_stream(
      "<tool_call>\n[{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", "
      "\"arguments\": {}}]\n</tool_call>",
      kQwen25, opts(), msg("", "", {{"a", "{\"x\": 1}"}, {"b", "{}"}}));
  // No arguments at all: an empty object.
  expect_parse_and_stream("<tool_call>\n{\"name\": \"now\"}\n</tool_call>", kQwen25, opts(),
                          msg("", "", {{"now", "{}"}}));
}

TEST(HermesParse, MissingCloseTagTolerated) {
  expect_parse_and_stream("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\nDone.", kQwen25,
                          opts(), msg("", "Done.", {{"now", "{}"}}));
  expect_parse_and_stream("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_", kQwen25,
                          opts(), msg("", "", {{"now", "{}"}}));
}

TEST(HermesParse, MalformedCallStaysContent) {
  for (const std::string text : {
           "<tool_call>\n{\"name\": get_weather}\n</tool_call>",
           "<tool_call>\nget_weather(city=\"Paris\")\n</tool_call>",
           "<tool_call>\n{\"arguments\": {\"a\": 1}}\n</tool_call>",
           "<tool_call>\n{\"name\": 42, \"arguments\": {}}\n</tool_call>",
           "<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>",
           "<tool_call>\n{\"name\": \"f\", \"arguments\": \"not json\"}\n</tool_call>",
           "Sure.\n<tool_call>\n```json\n{}\n```",
       }) {
    expect_parse_and_stream(text, kQwen25, opts(), msg("", text),
                            false);  // verbatim, whitespace included
  }
}

TEST(HermesParse, TruncatedBeforeTheCallIsAnnouncedStaysContent) {
  const std::string full = "Checking.\n" + kWeatherCall;
  const std::size_t announce = full.find("{\"city\"");  // the arguments value begins here
  for (std::size_t len = full.find("<tool_call>"); len <= announce; ++len) {
    const std::string text = full.substr(0, len);
    expect_parse_and_stream(text, kQwen25, opts(), msg("", text), false);
  }
}

TEST(HermesParse, TruncatedInsideArguments) {
  // parse_message: the whole block is content. Streaming: the announced call's fragments were
  // streamed, but the final message drops the call (its arguments are not complete JSON).
  const std::string text =
      "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par";
  const ParsedMessage parsed = parse_message(text, kQwen25, opts());
  EXPECT_EQ(parsed.content, text);
  EXPECT_TRUE(parsed.tool_calls.empty());
  expect_stream_equals(text, kQwen25, opts(),
                       msg("", "Checking.", {{"get_weather", "{\"city\": \"Par"}}), true);
  ParsedMessage final;
  run_stream(text, kQwen25, opts(), {}, false, &final);
  EXPECT_TRUE(final.tool_calls.empty()) << describe(final);
}

// A cut output (max_tokens, a stop string): whatever the cut point inside the markup, the opening
// marker, the block and an unfinished call never become content, and only a complete call is a call.
TEST(HermesParse, CutOutputDropsUnfinishedMarkup) {
  for (const ChatFormat& format : {kQwen25, kQwen3}) {
    const std::string before = "Checking.\n";
    const std::string full = before + kWeatherCall + "\n" + kWeatherCall;
    const std::size_t first_done = full.find("}}") + 2;
    const std::size_t second_done = full.rfind("}}") + 2;
    for (std::size_t len = 0; len <= full.size(); ++len) {
      const std::string text = full.substr(0, len);
      const std::string content = len <= before.size() ? text : "Checking.";
      for (const auto& cuts : testing::all_chunkings(text.size(), 3, 99)) {
        ParsedMessage final;
        const testing::Reassembled r = run_stream(text, format, opts(), cuts, true, &final);
        ASSERT_TRUE(r.problems.empty()) << text << ": " << r.problems[0];
        ASSERT_EQ(r.message.content, content) << text;
        ASSERT_EQ(final.content, content) << text;
        const std::size_t whole = len >= second_done ? 2 : len >= first_done ? 1 : 0;
        ASSERT_EQ(final.tool_calls.size(), whole) << text << "\n" << describe(final);
        for (const ToolCall& c : final.tool_calls) EXPECT_EQ(c.arguments, kWeatherArgs);
      }
    }
  }
  // The same prefixes ended by the model itself: a partial marker is its text (content).
  expect_parse_and_stream("Checking. <tool_ca", kQwen25, opts(), msg("", "Checking. <tool_ca"), false);
  // Llama 3 and Mistral: the same rule.
  ParsedMessage final;
  run_stream("{\"name\": \"now\", \"parameters\": {\"tz\": \"U", kLlama, opts(), {}, true, &final);
  EXPECT_EQ(describe(final), describe(msg("", "")));
  run_stream("Hi<|python_t", kLlama, opts(), {}, true, &final);
  EXPECT_EQ(final.content, "Hi<|python_t") << "not at the start: text";
  run_stream("<|python_t", kLlama, opts(), {}, true, &final);
  EXPECT_EQ(describe(final), describe(msg("", "")));
  run_stream("Ok[TOOL_CA", kMistral, opts(), {}, true, &final);
  EXPECT_EQ(describe(final), describe(msg("", "Ok")));
  run_stream("[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x",
             kMistral, opts(), {}, true, &final);
  EXPECT_EQ(describe(final), describe(msg("", "", {{"a", "{}"}})));
  // A cut inside a reasoning block's close marker drops the partial marker too.
  run_stream("<think>\nplan</thi", kQwen3, opts(), {}, true, &final);
  EXPECT_EQ(describe(final), describe(msg("plan", "")));
}

// The arguments check is JSON syntax: it agrees with nlohmann's parser, except that a number too
// large for a double is still JSON.
TEST(JsonText, SyntaxAgreesWithAJsonParser) {
  for (const std::string t :
       {"{}", " {\"a\": [1, -2.5e+3, true, false, null, \"\\u00e9\\n\"]} ", "[]", "0", "-0.0", "\"x\"", "{\"a\":{}}",
        "{", "{\"a\"}", "{\"a\": 1,}", "[1 2]", "01", "1.", "-", "+1", ".5", "1e", "tru", "nul", "\"\\x\"",
        "\"\\ud800\"", "\"a\nb\"", "{} {}", "{\"a\": 1}}", "\"unterminated", "[1,]", "{1: 2}", ""}) {
    EXPECT_EQ(detail::is_json_text(t, 64), nlohmann::json::accept(t)) << t;
  }
  EXPECT_TRUE(detail::is_json_text("[" + std::string(400, '9') + "]", 64));
  EXPECT_TRUE(detail::is_json_text(std::string(64, '[') + std::string(64, ']'), 64));
  EXPECT_FALSE(detail::is_json_text(std::string(65, '[') + std::string(65, ']'), 64));
}

TEST(HermesParse, InToolCallCoversTheMarkupFromTheMarkersLastByte) {
  const std::string text = "Sure <tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\nok";
  const std::size_t open_last = text.find('>');
  const std::size_t close_last = text.rfind('>');
  StreamParser p(kQwen25, opts());
  for (std::size_t i = 0; i < text.size(); ++i) {
    p.feed(std::string_view(text).substr(i, 1));
    EXPECT_EQ(p.in_tool_call(), i >= open_last && i < close_last) << i << " " << text[i];
  }
  // In reasoning, markup is text: never a call.
  StreamParser r(kQwen3, opts());
  r.feed("<think>\nmaybe <tool_call>\n{");
  EXPECT_FALSE(r.in_tool_call());
}

TEST(HermesParse, InvalidArgumentsJsonRevertsOnlyInParse) {
  const std::string text =
      "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\nx\n<tool_call>\n{\"name\": "
      "\"b\", "
      "\"arguments\": {\"v\": tru}}\n</tool_call>";
  const ParsedMessage parsed = parse_message(text, kQwen25, opts());
  ASSERT_EQ(parsed.tool_calls.size(), 1u);
  EXPECT_EQ(parsed.tool_calls[0].name, "a");
  EXPECT_EQ(parsed.content,
            "x\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"v\": tru}}\n</tool_call>");
  expect_stream_equals(text, kQwen25, opts(), msg("", "x", {{"a", "{}"}, {"b", "{\"v\": tru}"}}),
                       true);
  // The final message of the stream keeps only the call whose arguments are JSON.
  ParsedMessage final;
  run_stream(text, kQwen25, opts(), {}, false, &final);
  EXPECT_EQ(describe(final), describe(msg("", "x", {{"a", "{}"}})));
}

TEST(HermesParse, DepthIsBounded) {
  std::string deep;
  for (int i = 0; i < kMaxJsonDepth + 5; ++i) deep += "[";
  const std::string text =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": " + deep + "}}\n</tool_call>";
  const ParsedMessage parsed = parse_message(text, kQwen25, opts());
  EXPECT_TRUE(parsed.tool_calls.empty());
  EXPECT_EQ(parsed.content, text);
  // Depth within the bound is fine.
  std::string ok_open, ok_close;
  for (int i = 0; i < kMaxJsonDepth - 2; ++i) ok_open += "[", ok_close += "]";
  const std::string args = "{\"x\": " + ok_open + ok_close + "}";
  const ParsedMessage fine = parse_message(
      "<tool_call>{\"name\": \"f\", \"arguments\": " + args + "}</tool_call>", kQwen25, opts());
  ASSERT_EQ(fine.tool_calls.size(), 1u);
  EXPECT_EQ(fine.tool_calls[0].arguments, args);
}

TEST(HermesParse, HeldTextIsBounded) {
  // A block whose name never comes: held until kMaxHeldBytes, then released as content, before the
  // end.
  StreamParser p(kQwen25, opts());
  std::string junk = "<tool_call>\n{\"note\": \"" + std::string(kMaxHeldBytes + 100, 'a');
  std::size_t streamed = 0;
  for (std::size_t i = 0; i < junk.size(); i += 1000) {
    for (const Delta& d : p.feed(std::string_view(junk).substr(i, 1000))) streamed += d.text.size();
  }
  EXPECT_GT(streamed, kMaxHeldBytes);
  p.finish();
  EXPECT_EQ(p.message().content, junk);
}

// n bytes of content and a call with n bytes of arguments, fed byte by byte; seconds taken (best of
// 2).
double stream_seconds(std::size_t n) {
  std::string content(n, 'x');
  for (std::size_t i = 0; i < content.size(); i += 80) content[i] = ' ';
  std::string big =
      "{\"data\": \"" + std::string(n, 'y') + "\", \"more\": [" + std::string(n / 4, '1') + "]}";
  const std::string text =
      content + "<tool_call>\n{\"name\": \"store\", \"arguments\": " + big + "}\n</tool_call>";
  double best = 1e9;
  for (int rep = 0; rep < 2; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    StreamParser p(kQwen25, opts());
    for (char c : text) p.feed(std::string_view(&c, 1));
    p.finish();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    EXPECT_EQ(p.message().tool_calls.size(), 1u);
    if (p.message().tool_calls.size() == 1) {
      EXPECT_EQ(p.message().tool_calls[0].arguments, big);
    }
    EXPECT_EQ(p.message().content, content);
  }
  return best;
}

TEST(HermesParse, StreamingIsLinear) {
  // Best of three each, so a busy machine does not decide the outcome.
  auto best = [](int n) { return std::min({stream_seconds(n), stream_seconds(n), stream_seconds(n)}); };
  const double small = best(1 << 18);
  const double large = best(1 << 20);  // 4x the text: linear ~4x, quadratic ~16x
  EXPECT_LT(large, 8 * small + 0.05) << small << " s vs " << large << " s";
}

TEST(HermesParse, MarkerSplitHoldsBackOnlyThePrefix) {
  StreamParser p(kQwen25, opts());
  auto d1 = p.feed("Sure <tool_");
  ASSERT_EQ(d1.size(), 1u);
  EXPECT_EQ(d1[0].text, "Sure");  // the space waits: it is dropped if a call follows
  auto d2 = p.feed("call>\n{\"name\": \"now\", \"arguments\": {\"tz\"");
  ASSERT_EQ(d2.size(), 2u);
  EXPECT_EQ(d2[0].kind, Delta::Kind::kToolCallStart);
  EXPECT_EQ(d2[0].name, "now");
  EXPECT_EQ(d2[0].index, 0);
  EXPECT_TRUE(testing::valid_call_id(d2[0].id, ToolSyntax::kHermes));
  EXPECT_EQ(d2[1].kind, Delta::Kind::kToolCallArgs);
  EXPECT_EQ(d2[1].text, "{\"tz\"");
  auto d3 = p.feed(": \"UTC\"}}\n</tool_call>");
  ASSERT_EQ(d3.size(), 1u);
  EXPECT_EQ(d3[0].text, ": \"UTC\"}");
  EXPECT_TRUE(p.finish().empty());
}

TEST(HermesParse, IdsAreReproducibleWithSeed) {
  const auto a = parse_message(kWeatherCall, kQwen25, opts());
  const auto b = parse_message(kWeatherCall, kQwen25, opts());
  EXPECT_EQ(a.tool_calls[0].id, b.tool_calls[0].id);
  ParseOptions random = opts();
  random.id_seed = 0;
  const auto c = parse_message(kWeatherCall, kQwen25, random);
  EXPECT_TRUE(testing::valid_call_id(c.tool_calls[0].id, ToolSyntax::kHermes));
}

// ---- DeepSeek-R1 distills: reasoning only
// -----------------------------------------------------------

TEST(ThinkParse, DeepSeekR1Distill) {
  expect_parse_and_stream("Okay, so the user asks 2+2. That's 4.\n</think>\n\n**4**", kR1,
                          opts(true, true), msg("Okay, so the user asks 2+2. That's 4.", "**4**"));
  expect_parse_and_stream("Hmm, still going", kR1, opts(true, true), msg("Hmm, still going", ""));
  expect_parse_and_stream("", kR1, opts(true, true), msg("", ""));
}

TEST(ThinkParse, Brackets) {
  const ChatFormat magistral = fmt(ToolSyntax::kMistral, ReasoningSyntax::kThinkBrackets);
  expect_parse_and_stream(
      "[THINK]Need weather.[/THINK][TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}", magistral,
      opts(), msg("Need weather.", "", {{"get_weather", "{\"city\": \"Paris\"}"}}));
}

TEST(ThinkParse, PromptOpensReasoning) {
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", kQwen3));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n</think>", kQwen3));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n", kQwen3));
  EXPECT_FALSE(prompt_opens_reasoning("<think>\n", kQwen25));
}

// ---- Llama 3.x
// ---------------------------------------------------------------------------------------

TEST(Llama3Parse, ContentOnly) {
  expect_parse_and_stream("The weather in Paris is sunny.", kLlama, opts(),
                          msg("", "The weather in Paris is sunny."));
}

TEST(Llama3Parse, OneCall) {
  expect_parse_and_stream("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
                          kLlama, opts(), msg("", "", {{"get_weather", "{\"city\": \"Paris\"}"}}));
}

TEST(Llama3Parse, PythonTagAndWhitespace) {
  expect_parse_and_stream(
      "\n<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", kLlama,
      opts(), msg("", "", {{"get_weather", "{\"city\": \"Paris\"}"}}));
}

TEST(Llama3Parse, SemicolonSeparatedCalls) {
  expect_parse_and_stream(
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}; {\"name\": \"add\", "
      "\"parameters\": {\"a\": 3, "
      "\"b\": 4}}",
      kLlama, opts(),
      msg("", "", {{"get_weather", "{\"city\": \"Rome\"}"}, {"add", "{\"a\": 3, \"b\": 4}"}}));
}

TEST(Llama3Parse, JsonThatIsNotACallIsContent) {
  for (const std::string text :
       {"{\"answer\": 42}", "{\"name\": \"Bob\", \"age\": 3}", "  {oops", "{\"name\": \"x\"",
        "Here: {\"name\": \"get_weather\", \"parameters\": {}}", "<|python_tag|>print(1)"}) {
    expect_parse_and_stream(text, kLlama, opts(), msg("", text), false);
  }
}

TEST(Llama3Parse, Unicode) {
  expect_parse_and_stream(
      "{\"name\": \"translate\", \"parameters\": {\"text\": \"«naïve» 日本語 😀\"}}", kLlama, opts(),
      msg("", "", {{"translate", "{\"text\": \"«naïve» 日本語 😀\"}"}}));
}

TEST(Llama3Parse, TextAfterCall) {
  expect_parse_and_stream("{\"name\": \"now\", \"parameters\": {}}\n\nThat is all.", kLlama, opts(),
                          msg("", "That is all.", {{"now", "{}"}}));
}

TEST(Llama3Parse, VerbatimTextAndPartialMarkers) {
  for (const std::string text : {"\n\nHello there", "Hi <|python_", "<|python_tag|>", "  ", ""}) {
    expect_parse_and_stream(text, kLlama, opts(), msg("", text), false);
  }
  // Tools not offered: a call-shaped reply is content.
  const std::string call = "{\"name\": \"now\", \"parameters\": {}}";
  expect_parse_and_stream(call, kLlama, opts(false), msg("", call), false);
}

// ---- Mistral
// ------------------------------------------------------------------------------------------

TEST(MistralParse, NemoArray) {
  expect_parse_and_stream(
      "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
      "\"aB3dE6gH9\"}]",
      kMistral, opts(), msg("", "", {{"get_weather", "{\"city\": \"Paris\"}"}}));
}

TEST(MistralParse, NemoParallel) {
  expect_parse_and_stream(
      "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}, {\"name\": "
      "\"add\", "
      "\"arguments\": {\"a\": 3, \"b\": 4}}]",
      kMistral, opts(),
      msg("", "", {{"get_weather", "{\"city\": \"Rome\"}"}, {"add", "{\"a\": 3, \"b\": 4}"}}));
}

TEST(MistralParse, NameArgsForms) {
  expect_parse_and_stream("[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}", kMistral, opts(),
                          msg("", "", {{"get_weather", "{\"city\": \"Paris\"}"}}));
  expect_parse_and_stream("[TOOL_CALLS]get_weather[CALL_ID]aB3dE6gH9[ARGS]{\"city\": \"Paris\"}",
                          kMistral, opts(),
                          msg("", "", {{"get_weather", "{\"city\": \"Paris\"}"}}));
  expect_parse_and_stream(
      "I'll look both up.[TOOL_CALLS]get_weather[ARGS]{\"city\": "
      "\"Rome\"}[TOOL_CALLS]add[ARGS]{\"a\": 3, \"b\": 4}",
      kMistral, opts(),
      msg("", "I'll look both up.",
          {{"get_weather", "{\"city\": \"Rome\"}"}, {"add", "{\"a\": 3, \"b\": 4}"}}));
}

TEST(MistralParse, ContentAndMalformed) {
  expect_parse_and_stream("Bonjour ! Comment puis-je vous aider ? 😀", kMistral, opts(),
                          msg("", "Bonjour ! Comment puis-je vous aider ? 😀"));
  for (const std::string text :
       {"[TOOL_CALLS] I cannot do that.", "[TOOL_CALLS]get weather[ARGS]{}", "[TOOL_CALLS]f[ARG]{}",
        "[TOOL_CALLS][{\"name\": \"f\"", "[TOOL_CALLS]"}) {
    expect_parse_and_stream(text, kMistral, opts(), msg("", text), false);
  }
}

TEST(MistralParse, NestedArguments) {
  const std::string args = "{\"q\": \"a \\\"}]\\\" b\", \"l\": [{\"m\": {}}, \"[ARGS]\"]}";
  expect_parse_and_stream("[TOOL_CALLS]search[ARGS]" + args, kMistral, opts(),
                          msg("", "", {{"search", args}}));
}

TEST(MistralParse, TruncatedArray) {
  const std::string text =
      "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x";
  const ParsedMessage parsed = parse_message(text, kMistral, opts());
  EXPECT_EQ(parsed.content, text);
  EXPECT_TRUE(parsed.tool_calls.empty());
  expect_stream_equals(text, kMistral, opts(), msg("", "", {{"a", "{}"}, {"b", "{\"x"}}), true);
}

// ---- Generic envelope
// ----------------------------------------------------------------------------------

TEST(GenericParse, ToolCalls) {
  expect_parse_and_stream(
      "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}, "
      "{\"name\": \"add\", "
      "\"arguments\": {\"a\": 3, \"b\": 4}}]}",
      kGeneric, opts(),
      msg("", "", {{"get_weather", "{\"city\": \"Rome\"}"}, {"add", "{\"a\": 3, \"b\": 4}"}}));
  expect_parse_and_stream("{\"tool_call\": {\"name\": \"now\", \"arguments\": {}}}", kGeneric,
                          opts(), msg("", "", {{"now", "{}"}}));
}

TEST(GenericParse, Response) {
  expect_parse_and_stream("{\"response\": \"Hello \\\"world\\\" \\u00e9 \\ud83d\\ude00\\nbye\"}",
                          kGeneric, opts(), msg("", "Hello \"world\" é 😀\nbye"));
}

TEST(GenericParse, TruncatedResponseKeepsTheDecodedText) {
  expect_parse_and_stream("{\"response\": \"Hel\\u00e9 wor", kGeneric, opts(), msg("", "Hel\u00e9 wor"));
}

TEST(GenericParse, PlainTextAndOtherJson) {
  for (const std::string text : {"Just text.", "{\"answer\": 1}", "{\"response\": 5}"}) {
    expect_parse_and_stream(text, kGeneric, opts(), msg("", text), false);
  }
}

TEST(GenericParse, ReasoningThenEnvelope) {
  const ChatFormat f = fmt(ToolSyntax::kGeneric, ReasoningSyntax::kThinkTags);
  expect_parse_and_stream(
      "<think>\nplan\n</think>\n{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"k\": "
      "\"v\"}}]}",
      f, opts(), msg("plan", "", {{"f", "{\"k\": \"v\"}"}}));
}

// ---- random fuzz: never throws, stream == parse for every chunking whenever parse has no reverted
// block --

TEST(Fuzz, MutatedOutputsNeverThrowAndStreamIsChunkingInvariant) {
  const std::vector<std::pair<ChatFormat, std::string>> seeds = {
      {kQwen3, "<think>\nplan\n</think>\n\nText " + kWeatherCall +
                   "\n<tool_call>\n{\"name\": \"add\", \"arguments\": "
                   "\"{\\\"a\\\": 1}\"}\n</tool_call>"},
      {kLlama,
       "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": [1, {\"b\": \"}\"}]}}; {\"name\": "
       "\"g\"}"},
      {kMistral,
       "x[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}][TOOL_CALLS]g[CALL_ID]abc[ARGS]{\"q\": "
       "1}"},
      {kGeneric, "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"s\": \"\\u00e9\"}}]}"},
  };
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":, \n\\<>/_tTcl[]";
  for (const auto& [format, seed] : seeds) {
    for (int iter = 0; iter < 150; ++iter) {
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
      // The stream must not depend on the chunking: compare every chunking with one-piece
      // streaming.
      const auto whole = run_stream(text, format, opts(), {});
      ASSERT_TRUE(whole.problems.empty()) << text;
      expect_stream_equals(text, format, opts(), whole.message, false, 5);
      // And parse_message agrees with it unless it reverted a block.
      const ParsedMessage parsed = parse_message(text, format, opts());
      if (parsed.tool_calls.size() == whole.message.tool_calls.size()) {
        bool same =
            parsed.content == whole.message.content && parsed.reasoning == whole.message.reasoning;
        for (std::size_t i = 0; same && i < parsed.tool_calls.size(); ++i) {
          same = parsed.tool_calls[i].arguments == whole.message.tool_calls[i].arguments;
        }
        EXPECT_TRUE(same) << text << "\n" << describe(parsed) << "\n" << describe(whole.message);
      } else {
        EXPECT_LT(parsed.tool_calls.size(), whole.message.tool_calls.size()) << text;
      }
    }
  }
}

}  // namespace
}  // namespace anelm::chat
