// The model's chat template through ChatPrompt: real templates render as transformers does (the
// public goldens), errors are 400s naming the field, and the fallback and --chat-template paths.
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

using json = nlohmann::ordered_json;

using ::anelm::testing::read_file;

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

// The oracle: transformers' rendering by render_hf.py (jinja2 in transformers' environment), run on
// a case written here; nullopt when python3 with jinja2 is not available or the template raises.
std::optional<std::string> hf_render(const std::filesystem::path& tmpl, const json& c) {
  static int n = 0;
  const auto dir = testing::make_temp_dir("hf_render");
  const auto case_file = dir / ("case" + std::to_string(n++) + ".json");
  std::ofstream(case_file) << c.dump();
  const std::string cmd = "python3 '" + (tmpl.parent_path() / "render_hf.py").string() + "' '" + tmpl.string() + "' '" +
                          case_file.string() + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[4096];
  for (size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, k);
  if (pclose(p) != 0) return std::nullopt;
  return out;
}

tok::VocabData qwen_vocab(const std::filesystem::path& tmpl) {
  tok::VocabData v;  // Qwen: no BOS; EOS <|im_end|> (as render_hf.py's specials for "Qwen")
  v.tokens = {"<|im_end|>"};
  v.eos_id = 0;
  v.chat_template = read_file(tmpl);
  return v;
}

json text_parts(std::initializer_list<const char*> texts) {
  json parts = json::array();
  for (const char* t : texts) parts.push_back({{"type", "text"}, {"text", t}});
  return parts;
}

// vLLM and llama-server join text parts with "\n" for templates that print content as a string
// (transformers itself would fail: Qwen2.5's template concatenates str + list); a system message in
// the middle is rendered where it is.
TEST(ChatPrompt, TextPartsJoinWithNewlineAndMidListSystemStaysInPlace) {
  ANELM_REQUIRE_SHARED_MODEL(tmpl, "chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  const tok::VocabData v = qwen_vocab(tmpl);
  const ChatPrompt p(v.chat_template, "model", v);
  const json parts = json::array({{{"role", "user"}, {"content", text_parts({"Hi"})}},
                                  {{"role", "system"}, {"content", "mid system"}},
                                  {{"role", "user"}, {"content", text_parts({"What is", "the best book"})}}});
  const std::string got = p.render(parts, json::array(), true, json::object());
  EXPECT_NE(got.find("<|im_start|>user\nWhat is\nthe best book<|im_end|>"), std::string::npos) << got;
  EXPECT_NE(got.find("<|im_start|>user\nHi<|im_end|>\n<|im_start|>system\nmid system<|im_end|>\n"), std::string::npos) << got;
  json joined = parts;
  joined[0]["content"] = "Hi";
  joined[2]["content"] = "What is\nthe best book";
  const auto want = hf_render(tmpl, {{"name", "x"}, {"messages", joined}});
  if (!want) GTEST_SKIP() << "python3 with jinja2 not available";
  EXPECT_EQ(got, *want);
}

// A template that iterates content parts gets the list, as transformers passes it: Qwen3.5 prints
// the parts back to back.
TEST(ChatPrompt, TemplatesThatIterateContentGetTheParts) {
  ANELM_REQUIRE_SHARED_MODEL(tmpl, "chat-templates/Qwen3.5-4B.jinja");
  const tok::VocabData v = qwen_vocab(tmpl);
  const ChatPrompt p(v.chat_template, "model", v);
  const json msgs = json::array({{{"role", "system"}, {"content", text_parts({"sys a", "sys b"})}},
                                 {{"role", "user"}, {"content", text_parts({"What is", "the best book"})}}});
  const std::string got = p.render(msgs, json::array(), true, json::object());
  EXPECT_NE(got.find("What isthe best book"), std::string::npos) << got;
  const auto want = hf_render(tmpl, {{"name", "x"}, {"messages", msgs}});
  if (!want) GTEST_SKIP() << "python3 with jinja2 not available";
  EXPECT_EQ(got, *want);
}

// continue_final_message (vLLM / transformers): the conversation rendered without a generation
// prompt, cut right after the final assistant text, so the model continues it.
TEST(ChatPrompt, ContinueFinalAssistantMessageWithQwen25) {
  ANELM_REQUIRE_SHARED_MODEL(tmpl, "chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  const tok::VocabData v = qwen_vocab(tmpl);
  const ChatPrompt p(v.chat_template, "model", v);
  ChatRequest r;
  r.messages = json::array({{{"role", "user"}, {"content", "Write a haiku"}},
                            {{"role", "assistant"}, {"content", "Autumn moonlight -"}}});
  const auto full = hf_render(tmpl, {{"name", "x"}, {"messages", r.messages}, {"add_generation_prompt", false}});
  const std::string want_tail = "<|im_start|>assistant\nAutumn moonlight -";
  // llama-server's default (neither flag), continue_final_message, add_generation_prompt false: all cut.
  for (int mode = 0; mode < 3; ++mode) {
    r.continue_final_message.reset();
    r.add_generation_prompt.reset();
    if (mode == 1) r.continue_final_message = true;
    if (mode == 2) r.add_generation_prompt = false;
    const std::string got = p.render_request(r);
    ASSERT_GE(got.size(), want_tail.size());
    EXPECT_EQ(got.substr(got.size() - want_tail.size()), want_tail) << mode << ": " << got;
    if (full) {
      EXPECT_EQ(*full, got + "<|im_end|>\n") << mode;  // the oracle minus the end-of-turn markup
    }
  }
  // add_generation_prompt true: a new turn after it, exactly as transformers renders it.
  r.continue_final_message.reset();
  r.add_generation_prompt = true;
  const std::string fresh = p.render_request(r);
  EXPECT_EQ(fresh.substr(fresh.size() - 22), "<|im_start|>assistant\n");
  if (auto want = hf_render(tmpl, {{"name", "x"}, {"messages", r.messages}})) {
    EXPECT_EQ(fresh, *want);
  }
  // Parts: continued after the last part.
  r.add_generation_prompt.reset();
  r.messages[1]["content"] = text_parts({"Autumn", "moonlight -"});
  const std::string parts = p.render_request(r);
  const std::string parts_tail = "<|im_start|>assistant\nAutumn\nmoonlight -";
  ASSERT_GE(parts.size(), parts_tail.size());
  EXPECT_EQ(parts.substr(parts.size() - parts_tail.size()), parts_tail);
  // A final assistant turn with tool calls cannot be continued.
  r.messages[1] = {{"role", "assistant"}, {"content", ""},
                   {"tool_calls", json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"arguments", json::object()}}}}})}};
  r.continue_final_message = true;
  try {
    p.render_request(r);
    ADD_FAILURE() << "continued a tool-call turn";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "messages[1]");
  }
  // Without flags, a final tool-call turn renders as the template does (no continuation).
  r.continue_final_message.reset();
  EXPECT_NO_THROW(p.render_request(r));
}

// A template that does not render `tools` (Phi-3.5): tools are described in the system prompt, the
// reply is the generic JSON form; gemma-2 refuses system messages, so there they open the user turn.
TEST(ChatPrompt, TemplateWithoutToolsDescribesThemInTheSystemPrompt) {
  ANELM_REQUIRE_SHARED_MODEL(phi, "chat-templates/microsoft-Phi-3.5-mini-instruct.jinja");
  tok::VocabData v;
  const ChatPrompt p(read_file(phi), "model", v);
  EXPECT_EQ(p.format().tools, chat::ToolSyntax::kGeneric);
  EXPECT_TRUE(p.tools_in_system_prompt());
  const json tools = json::array({{{"type", "function"},
                                   {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
  const json msgs = json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Weather?"}}});
  const std::string got = p.render(msgs, tools, true, json::object());
  EXPECT_EQ(got.rfind("<|system|>\nBe brief.\n\nYou may call these tools (JSON schemas):\n"
                      "{\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\"}}\nTo call tools, reply with only ", 0),
            0u) << got;
  EXPECT_EQ(p.render(msgs, json::array(), true, json::object()), "<|system|>\nBe brief.<|end|>\n<|user|>\nWeather?<|end|>\n<|assistant|>\n");
  ChatRequest none;
  none.messages = msgs;
  none.tools = tools;
  none.tool_choice.kind = ToolChoice::Kind::kNone;
  EXPECT_EQ(p.render_request(none).find("You may call"), std::string::npos);

  ANELM_REQUIRE_SHARED_MODEL(gemma, "chat-templates/google-gemma-2-2b-it.jinja");
  const ChatPrompt g(read_file(gemma), "model", v);
  EXPECT_TRUE(g.tools_in_system_prompt());
  const std::string gg = g.render(json::array({{{"role", "user"}, {"content", "Weather?"}}}), tools, true, json::object());
  EXPECT_NE(gg.find("<start_of_turn>user\nYou may call these tools"), std::string::npos) << gg;
  EXPECT_NE(gg.find("Otherwise reply with only {\"response\": TEXT}.\n\nWeather?<end_of_turn>"), std::string::npos) << gg;
  // Qwen2.5 renders tools itself: nothing injected.
  ANELM_REQUIRE_SHARED_MODEL(qwen, "chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  const ChatPrompt q(read_file(qwen), "model", v);
  EXPECT_FALSE(q.tools_in_system_prompt());
  EXPECT_EQ(q.render(msgs, tools, true, json::object()).find("You may call these tools (JSON schemas)"), std::string::npos);
}

}  // namespace
}  // namespace anelm::server
