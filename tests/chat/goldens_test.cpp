// An independent reference for each syntax: the assistant turns that the real templates render
// (shared/models/chat-templates/goldens.json, plus tests/chat/data/mistral_goldens.json for the
// Mistral templates that need 9-character call ids) must parse back to the calls of cases.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "chat/chat_format.h"
#include "tests/chat/stream_check.h"
#include "tests/support/shared_data.h"

namespace anelm::chat {
namespace {

using nlohmann::json;

using ::anelm::testing::read_file;

// End-of-turn markers of the templates whose syntax is parsed natively.
const char* const kTurnEnds[] = {"<|im_end|>",      "<|eot_id|>", "<|eom_id|>", "</s>",
                                 "<|end_of_text|>", "<sep>",      "<|end|>"};

std::size_t turn_end(const std::string& text, std::size_t from) {
  std::size_t end = std::string::npos;
  for (const char* m : kTurnEnds) end = std::min(end, text.find(m, from));
  return end;
}

// The assistant turn with the calls: from the first call marker after the user's question to the
// end of the turn. Empty when not found.
std::string assistant_calls_turn(const std::string& text, const std::string& question,
                                 ToolSyntax syntax) {
  const std::size_t q = text.rfind(question);
  if (q == std::string::npos) return {};
  const char* trigger = (syntax == ToolSyntax::kHermes || syntax == ToolSyntax::kQwenXml) ? "<tool_call>"
                        : syntax == ToolSyntax::kMistral ? "[TOOL_CALLS]"
                                                         : "{\"name\"";
  const std::size_t start = text.find(trigger, q);
  if (start == std::string::npos) return {};
  const std::size_t end = turn_end(text, start);
  if (end == std::string::npos) return {};
  return text.substr(start, end - start);
}

struct Checked {
  std::set<std::string> templates;
  int turns = 0;
};

void check_goldens(const json& goldens, const std::filesystem::path& template_dir,
                   Checked& checked) {
  std::map<std::string, json> cases;
  for (const json& c : goldens["cases"]) cases[c["name"].get<std::string>()] = c;
  for (const json& row : goldens["goldens"]) {
    const std::string case_name = row["case"];
    if ((case_name != "tool_call_and_result" && case_name != "parallel_tool_calls") ||
        !row.contains("text"))
      continue;
    const std::string tname = row["template"];
    const ChatFormat format = detect_chat_format(read_file(template_dir / tname));
    if (format.tools != ToolSyntax::kHermes && format.tools != ToolSyntax::kLlama3 &&
        format.tools != ToolSyntax::kMistral && format.tools != ToolSyntax::kQwenXml) {
      continue;
    }
    const json& messages = cases[case_name]["messages"];
    std::string question;
    json expected_calls;
    for (const json& m : messages) {
      if (m["role"] == "user") question = m["content"];
      if (m["role"] == "assistant" && m.contains("tool_calls")) {
        expected_calls = m["tool_calls"];
        break;
      }
    }
    const std::string turn = assistant_calls_turn(row["text"], question, format.tools);
    SCOPED_TRACE(tname + " / " + case_name + ":\n" + turn);
    ASSERT_FALSE(turn.empty());
    ParseOptions opts;
    opts.id_seed = 11;
    // Qwen XML types its values by the tools' schemas ("a": 3 is an integer parameter).
    if (cases[case_name].contains("tools"))
      opts.tools = std::make_shared<const nlohmann::ordered_json>(
          nlohmann::ordered_json::parse(cases[case_name]["tools"].dump()));
    const ParsedMessage parsed = parse_message(turn, format, opts);
    EXPECT_EQ(parsed.content, "");
    EXPECT_EQ(parsed.reasoning, "");
    ASSERT_EQ(parsed.tool_calls.size(), expected_calls.size());
    for (std::size_t i = 0; i < expected_calls.size(); ++i) {
      EXPECT_EQ(parsed.tool_calls[i].name,
                expected_calls[i]["function"]["name"].get<std::string>());
      EXPECT_EQ(json::parse(parsed.tool_calls[i].arguments),
                expected_calls[i]["function"]["arguments"]);
      EXPECT_TRUE(testing::valid_call_id(parsed.tool_calls[i].id, format.tools))
          << parsed.tool_calls[i].id;
    }
    testing::expect_stream_equals(turn, format, opts, parsed, true, 20);
    checked.templates.insert(tname);
    ++checked.turns;
  }
}

TEST(Goldens, RenderedToolCallTurnsParseBack) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "chat-templates");
  const json goldens = json::parse(read_file(dir / "goldens.json"));
  Checked checked;
  check_goldens(goldens, dir, checked);
  const json mistral = json::parse(
      read_file(std::filesystem::path(ANELM_SOURCE_DIR) / "tests/chat/data/mistral_goldens.json"));
  check_goldens(mistral, dir, checked);

  for (const char* t :
       {"Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja", "Qwen-QwQ-32B.jinja",
        "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "ibm-granite-granite-4.0.jinja",
        "MiMo-VL.jinja", "Bielik-11B-v3.0-Instruct.jinja", "Reka-Edge.jinja",
        "meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja",
        "meta-llama-Llama-3.3-70B-Instruct.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        "Mistral-Small-3.2-24B-Instruct-2506.jinja", "unsloth-mistral-Devstral-Small-2507.jinja",
        "mistralai-Ministral-3-14B-Reasoning-2512.jinja", "Qwen3-Coder.jinja", "Qwen3.5-4B.jinja",
        "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", "StepFun3.5-Flash.jinja"}) {
    EXPECT_TRUE(checked.templates.count(t)) << "no rendered tool-call turn checked for " << t;
  }
  EXPECT_GE(checked.turns, 30);
}

// The reasoning_history case renders an assistant turn "<think>\n...\n</think>\n\n..." verbatim;
// every template detected with think tags must split it back.
TEST(Goldens, RenderedReasoningTurnsSplit) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "chat-templates");
  const json goldens = json::parse(read_file(dir / "goldens.json"));
  int checked = 0;
  for (const json& row : goldens["goldens"]) {
    if (row["case"] != "reasoning_history" || !row.contains("text")) continue;
    const std::string tname = row["template"];
    const ChatFormat format = detect_chat_format(read_file(dir / tname));
    if (format.reasoning != ReasoningSyntax::kThinkTags) continue;
    const std::string text = row["text"];
    const std::size_t body = text.find("Check divisors");
    if (body == std::string::npos) continue;  // the template drops past reasoning
    const std::size_t open = text.rfind("<think>", body);
    const std::string answer = "Yes, 7 is prime.";
    const std::size_t close = text.find(answer, body);
    ASSERT_NE(open, std::string::npos) << tname;
    ASSERT_NE(close, std::string::npos) << tname;
    const std::string turn = text.substr(open, close + answer.size() - open);
    SCOPED_TRACE(tname + ":\n" + turn);
    ParseOptions opts;
    const ParsedMessage parsed = parse_message(turn, format, opts);
    EXPECT_EQ(parsed.reasoning, "Check divisors 2..2.");
    EXPECT_EQ(parsed.content, answer);
    EXPECT_TRUE(parsed.tool_calls.empty());
    testing::expect_stream_equals(turn, format, opts, parsed, true, 10);
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace anelm::chat
