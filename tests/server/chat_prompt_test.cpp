// The model's chat template through ChatPrompt: real templates render as transformers does (the
// public goldens), errors are 400s naming the field, and the fallback and --chat-template paths.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

using json = nlohmann::ordered_json;

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json golden_row(const json& g, const std::string& tmpl, const std::string& c) {
  for (const auto& row : g["goldens"])
    if (row["template"] == tmpl && row["case"] == c) return row;
  return json();
}

json case_named(const json& g, const std::string& name) {
  for (const auto& c : g["cases"])
    if (c["name"] == name) return c;
  return json();
}

TEST(ChatPrompt, QwenTemplateRendersToolRoundTripAsTransformers) {
  ANELM_REQUIRE_SHARED_MODEL(goldens, "chat-templates/goldens.json");
  const json g = json::parse(read_file(goldens));
  tok::VocabData v;  // Qwen: no BOS; EOS <|im_end|>
  v.tokens = {"<|im_end|>"};
  v.eos_id = 0;
  v.chat_template = read_file(goldens.parent_path() / "Qwen-Qwen2.5-7B-Instruct.jinja");
  const ChatPrompt p(v.chat_template, "model", v);
  EXPECT_EQ(p.format().tools, chat::ToolSyntax::kHermes);
  for (const char* name : {"tool_call_and_result", "tools_offered", "multi_turn"}) {
    const json c = case_named(g, name);
    const std::string got = p.render(c["messages"], c.value("tools", json::array()), c.value("add_generation_prompt", true),
                                     json::object());
    EXPECT_EQ(got, golden_row(g, "Qwen-Qwen2.5-7B-Instruct.jinja", name)["text"].get<std::string>()) << name;
  }
}

TEST(ChatPrompt, TemplateKwargsReachTheTemplate) {
  ANELM_REQUIRE_SHARED_MODEL(tmpl, "chat-templates/Qwen-Qwen3-0.6B.jinja");
  tok::VocabData v;
  const ChatPrompt p(read_file(tmpl), "model", v);
  EXPECT_EQ(p.format().reasoning, chat::ReasoningSyntax::kThinkTags);
  const json msgs = json::array({{{"role", "user"}, {"content", "Hi"}}});
  const std::string off = p.render(msgs, json::array(), true, json{{"enable_thinking", false}});
  const std::string on = p.render(msgs, json::array(), true, json::object());
  EXPECT_NE(off.find("<think>\n\n</think>"), std::string::npos) << off;
  EXPECT_EQ(on.find("<think>"), std::string::npos) << on;
}

TEST(ChatPrompt, TemplateRaiseIs400NamingMessagesWithTheTemplatesWords) {
  ANELM_REQUIRE_SHARED_MODEL(tmpl, "chat-templates/google-gemma-2-2b-it.jinja");
  tok::VocabData v;
  const ChatPrompt p(read_file(tmpl), "model", v);
  try {
    p.render(json::array({{{"role", "system"}, {"content", "x"}}, {{"role", "user"}, {"content", "y"}}}), json::array(), true,
             json::object());
    ADD_FAILURE() << "gemma-2 accepted a system message";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "messages");
    EXPECT_NE(std::string(e.what()).find("System role not supported"), std::string::npos) << e.what();
  }
}

TEST(ChatPrompt, NoTemplateFallsBackToChatMlWithGenericTools) {
  tok::VocabData v;
  auto p = ChatPrompt::for_model(v, "");
  EXPECT_EQ(p->origin(), "chatml fallback");
  EXPECT_EQ(p->format().tools, chat::ToolSyntax::kGeneric);
  const json msgs = json::array({{{"role", "system"}, {"content", "S"}}, {{"role", "user"}, {"content", "Hi"}}});
  EXPECT_EQ(p->render(msgs, json::array(), true, json::object()),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  const json tools = json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"type", "object"}}}}}}});
  const std::string with_tools = p->render(msgs, tools, true, json::object());
  EXPECT_NE(with_tools.find("{\"name\": \"f\""), std::string::npos) << with_tools;
  EXPECT_NE(with_tools.find("tool_calls"), std::string::npos);
}

TEST(ChatPrompt, ChatTemplateFileOverridesAndBadFilesAreNamed) {
  const auto dir = testing::make_temp_dir("chat_prompt");
  const auto file = dir / "t.jinja";
  std::ofstream(file) << "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}";
  tok::VocabData v;
  v.chat_template = "{{ 'model template' }}";
  auto p = ChatPrompt::for_model(v, file.string());
  EXPECT_EQ(p->render(json::array({{{"role", "user"}, {"content", "x"}}}), json::array(), true, json::object()), "[user]x");
  EXPECT_THROW(ChatPrompt::for_model(v, (dir / "missing.jinja").string()), std::runtime_error);
  std::ofstream(dir / "bad.jinja") << "{% for %}";
  try {
    ChatPrompt::for_model(v, (dir / "bad.jinja").string());
    ADD_FAILURE() << "a malformed template was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jinja"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace anelm::server
