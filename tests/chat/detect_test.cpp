// detect_chat_format on every real template in shared/models/chat-templates.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "chat/chat_format.h"
#include "tests/support/shared_data.h"

namespace anelm::chat {
namespace {

using ::anelm::testing::read_file;

struct Expected {
  ToolSyntax tools;
  ReasoningSyntax reasoning;
  bool accepts_tools;
};

constexpr auto H = ToolSyntax::kHermes;
constexpr auto L = ToolSyntax::kLlama3;
constexpr auto M = ToolSyntax::kMistral;
constexpr auto G = ToolSyntax::kGeneric;
constexpr auto X = ToolSyntax::kQwenXml;
constexpr auto N = ToolSyntax::kNone;
constexpr auto T = ReasoningSyntax::kThinkTags;
constexpr auto B = ReasoningSyntax::kThinkBrackets;
constexpr auto R0 = ReasoningSyntax::kNone;

// Every template of the corpus. The families this library parses natively are Hermes, Qwen XML,
// Llama 3 and Mistral; a template that takes tools in another syntax (XML-style arguments, DeepSeek, gpt-oss,
// ...) is kGeneric (the server forces the generic JSON envelope); one that does not read `tools` is
// kNone.
const std::map<std::string, Expected>& expected_formats() {
  static const std::map<std::string, Expected> m = {
      // Hermes: <tool_call>{"name", "arguments"}</tool_call>
      {"Qwen-Qwen2.5-7B-Instruct.jinja", {H, R0, true}},
      {"Qwen-Qwen3-0.6B.jinja", {H, T, true}},
      {"Qwen-QwQ-32B.jinja", {H, T, true}},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", {H, R0, true}},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", {H, R0, true}},
      {"ibm-granite-granite-4.0.jinja", {H, R0, true}},
      {"ibm-granite-granite-4.1.jinja", {H, R0, true}},
      {"MiMo-VL.jinja", {H, R0, true}},
      {"Bielik-11B-v3.0-Instruct.jinja", {H, T, true}},
      {"Reka-Edge.jinja", {H, T, true}},
      // Llama 3.x JSON
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", {L, R0, true}},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", {L, R0, true}},
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", {L, R0, true}},
      // Qwen XML: <tool_call>\n<function=f>\n<parameter=a>\n...</parameter>\n</function>
      {"Qwen3-Coder.jinja", {X, R0, true}},
      {"Qwen3.5-4B.jinja", {X, T, true}},
      {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", {X, T, true}},
      {"StepFun3.5-Flash.jinja", {X, T, true}},
      // Mistral
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", {M, R0, true}},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", {M, R0, true}},
      {"unsloth-mistral-Devstral-Small-2507.jinja", {M, R0, true}},
      {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", {M, B, true}},
      // Granite 3.x: <|tool_call|>[{"name", "arguments"}, ...]
      {"ibm-granite-granite-3.3-2B-Instruct.jinja", {ToolSyntax::kGranite, T, true}},
      // Reasoning only, no tools variable
      {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", {N, T, false}},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", {N, T, false}},
      {"deepseek-ai-DeepSeek-V3.1.jinja", {N, T, false}},
      {"HuggingFaceTB-SmolLM3-3B.jinja", {N, T, false}},
      {"llama-cpp-rwkv-world.jinja", {N, T, false}},
      // No tools, no reasoning
      {"google-gemma-2-2b-it.jinja", {N, R0, false}},
      {"microsoft-Phi-3.5-mini-instruct.jinja", {N, R0, false}},
      {"fireworks-ai-llama-3-firefunction-v2.jinja",
       {N, R0, false}},  // reads `functions`, not `tools`
      // Tools in a syntax not parsed natively: generic envelope
      {"Apertus-8B-Instruct.jinja", {G, R0, true}},
      {"Apriel-1.6-15b-Thinker-fixed.jinja", {G, R0, true}},
      {"unsloth-Apriel-1.5.jinja",
       {G, R0, true}},  // mentions <tool_call> but renders <tool_calls>[...]
      {"ByteDance-Seed-OSS.jinja", {G, R0, true}},
      {"Cohere2MoE.jinja", {G, R0, true}},
      {"CohereForAI-c4ai-command-r-plus-tool_use.jinja", {G, R0, true}},
      {"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", {G, R0, true}},
      {"GLM-4.6.jinja", {G, T, true}},  // <tool_call>name<arg_key>...: not Hermes JSON
      {"GLM-4.7-Flash.jinja", {G, T, true}},
      {"GigaChat3-10B-A1.8B.jinja", {G, R0, true}},
      {"GigaChat3.1-10B-A1.8B.jinja", {G, R0, true}},
      {"Kimi-K2-Instruct.jinja", {G, R0, true}},
      {"Kimi-K2-Thinking.jinja", {G, T, true}},
      {"Kimi-K3.jinja", {G, R0, true}},
      {"moonshotai-Kimi-K2.jinja", {G, R0, true}},
      {"LFM2-8B-A1B.jinja", {G, R0, true}},
      {"LFM2.5-8B-A1B.jinja", {G, T, true}},
      {"LFM2.5-Instruct.jinja", {G, R0, true}},
      {"MiniMax-M1.jinja", {G, R0, true}},
      {"MiniMax-M2.jinja", {G, T, true}},
      {"MiniMax-M3.jinja", {G, R0, true}},
      {"NVIDIA-Nemotron-Nano-v2.jinja", {G, T, true}},
      {"Spark2.5.jinja", {G, T, true}},
      {"deepseek-ai-DeepSeek-V3.2.jinja", {G, T, true}},
      {"deepseek-ai-DeepSeek-V4-Flash-0731.jinja", {G, T, true}},
      {"deepseek-ai-DeepSeek-V4.jinja", {G, T, true}},
      {"llama-cpp-deepseek-r1.jinja", {G, T, true}},
      {"google-gemma-4-31B-it-interleaved.jinja", {G, R0, true}},
      {"google-gemma-4-31B-it.jinja", {G, R0, true}},
      {"inclusionai-ling-3.0-flash.jinja", {G, T, true}},
      {"meetkai-functionary-medium-v3.1.jinja", {G, R0, true}},  // <function=...>, not Llama 3 JSON
      {"meetkai-functionary-medium-v3.2.jinja", {G, R0, true}},
      {"muse-glimmer.jinja", {G, R0, true}},
      {"openai-gpt-oss-120b.jinja", {G, R0, true}},
      {"openbmb-MiniCPM5-1B.jinja", {G, T, true}},
      {"poolside-Laguna-S-2.1.jinja", {G, T, true}},
      {"poolside-Laguna-XS-2.1.jinja", {G, T, true}},
      {"poolside-Laguna-XS.2.jinja", {G, T, true}},
      {"tencent-Hy3.jinja", {G, R0, true}},
      {"upstage-Solar-Open-100B.jinja", {G, R0, true}},
  };
  return m;
}

TEST(DetectChatFormat, EveryTemplateInTheCorpus) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "chat-templates");
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jinja") continue;
    const std::string name = entry.path().filename().string();
    const ChatFormat f = detect_chat_format(read_file(entry.path()));
    auto it = expected_formats().find(name);
    if (it == expected_formats().end()) {
      ADD_FAILURE() << "template without an expectation in this test: " << name << " -> "
                    << to_string(f.tools) << ", " << to_string(f.reasoning);
      continue;
    }
    EXPECT_EQ(to_string(f.tools), std::string(to_string(it->second.tools))) << name;
    EXPECT_EQ(to_string(f.reasoning), std::string(to_string(it->second.reasoning))) << name;
    EXPECT_EQ(f.template_accepts_tools, it->second.accepts_tools) << name;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(expected_formats().size()));
}

TEST(DetectChatFormat, MistralForms) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "chat-templates");
  auto form = [&](const char* name) {
    return detect_chat_format(read_file(dir / name)).mistral_form;
  };
  EXPECT_EQ(form("mistralai-Mistral-Nemo-Instruct-2407.jinja"), MistralForm::kJsonArray);
  EXPECT_EQ(form("Mistral-Small-3.2-24B-Instruct-2506.jinja"), MistralForm::kNameArgs);
  EXPECT_EQ(form("unsloth-mistral-Devstral-Small-2507.jinja"), MistralForm::kNameArgs);
  EXPECT_EQ(form("mistralai-Ministral-3-14B-Reasoning-2512.jinja"), MistralForm::kNameArgs);
}

TEST(DetectChatFormat, MarkersNotFileNames) {
  EXPECT_EQ(detect_chat_format("{{ messages }}").tools, ToolSyntax::kNone);
  // `tools` in prose or in a string literal is not a reference to the variable.
  EXPECT_FALSE(
      detect_chat_format("You may use tools. {{ 'tools' }} {# tools #}").template_accepts_tools);
  EXPECT_TRUE(detect_chat_format("{% if tools %}x{% endif %}").template_accepts_tools);
  EXPECT_EQ(detect_chat_format("{% if tools %}{{ tools | tojson }}{% endif %}").tools,
            ToolSyntax::kGeneric);
  EXPECT_EQ(detect_chat_format(
                "{% for t in tools %}{% endfor %}<tool_call>\\n{\"name\": \"x\", \"arguments\": 1}")
                .tools,
            ToolSyntax::kHermes);
  EXPECT_EQ(detect_chat_format("{{ '[TOOL_CALLS][' }}").tools, ToolSyntax::kMistral);
  EXPECT_EQ(detect_chat_format("{% if tools %}<tool_call>\n<function=f>\n<parameter=a>\n{% endif %}").tools,
            ToolSyntax::kQwenXml);
  // <function=...> without <parameter=...> is Functionary's JSON form, not Qwen XML.
  EXPECT_EQ(detect_chat_format("{% if tools %}<tool_call><function=f>{\"a\": 1}{% endif %}").tools,
            ToolSyntax::kGeneric);
  EXPECT_EQ(detect_chat_format("<think>").reasoning, ReasoningSyntax::kThinkTags);
  EXPECT_EQ(detect_chat_format("").reasoning, ReasoningSyntax::kNone);
  // Unterminated tags and strings do not crash the scanner.
  EXPECT_EQ(detect_chat_format("{{ 'tools").tools, ToolSyntax::kNone);
  EXPECT_EQ(detect_chat_format("{% if x").tools, ToolSyntax::kNone);
  EXPECT_EQ(detect_chat_format("{# tools").tools, ToolSyntax::kNone);
}

TEST(DetectChatFormat, PromptOpensReasoningOnRenderedGenerationPrompts) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "chat-templates");
  // Generation prompts as the templates end them (see goldens.json).
  const ChatFormat r1 =
      detect_chat_format(read_file(dir / "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"));
  EXPECT_TRUE(prompt_opens_reasoning("<｜User｜>Hi<｜Assistant｜><think>\n", r1));
  const ChatFormat qwen3 = detect_chat_format(read_file(dir / "Qwen-Qwen3-0.6B.jinja"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n", qwen3));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", qwen3));
  // Qwen3.5 renders "<think>\n" (thinking on, the default) or an empty closed block (off).
  const ChatFormat qwen35 = detect_chat_format(read_file(dir / "Qwen3.5-4B.jinja"));
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", qwen35));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", qwen35));
  const ChatFormat ministral =
      detect_chat_format(read_file(dir / "mistralai-Ministral-3-14B-Reasoning-2512.jinja"));
  EXPECT_TRUE(prompt_opens_reasoning("[INST]Hi[/INST][THINK]", ministral));
}

}  // namespace
}  // namespace anelm::chat

namespace anelm::chat {
namespace {

// The generation prompts the Qwen3.5 template really renders (goldens.json, jinja2): thinking on
// by default leaves the block open, enable_thinking=false closes an empty one.
TEST(DetectChatFormat, Qwen35ThinkingFromRenderedGoldens) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "chat-templates");
  const ChatFormat f = detect_chat_format(read_file(dir / "Qwen3.5-4B.jinja"));
  const auto goldens = nlohmann::json::parse(read_file(dir / "goldens.json"));
  int checked = 0;
  for (const auto& row : goldens["goldens"]) {
    if (row["template"] != "Qwen3.5-4B.jinja" || !row.contains("text")) continue;
    const std::string c = row["case"];
    if (c == "user_only") {
      EXPECT_TRUE(prompt_opens_reasoning(row["text"].get<std::string>(), f));
      ++checked;
    } else if (c == "thinking_off") {
      EXPECT_FALSE(prompt_opens_reasoning(row["text"].get<std::string>(), f));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);
}

}  // namespace
}  // namespace anelm::chat
