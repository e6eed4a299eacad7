// Chat template adapter: the model's template family is rendered for the server's messages.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/chat_prompt.h"

namespace anelm::server {
namespace {

// Messages as the request parser produces them.
nlohmann::ordered_json M(std::initializer_list<std::pair<const char*, const char*>> list) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& [role, content] : list) out.push_back({{"role", role}, {"content", content}});
  return out;
}

TEST(ChatPrompt, QwenChatMlGolden) {
  tok::VocabData v;
  v.chat_template =
      "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
      "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You "
      "are a helpful assistant.<|im_end|>\\n' }}{%- endif %}";
  std::string name;
  ChatRenderer r = make_chat_renderer(v, &name);
  EXPECT_EQ(name, "chatml");
  EXPECT_EQ(r(M({{"system", "You are a helpful assistant."}, {"user", "Hello!"}})),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(r(M({{"user", "Hello!"}})).rfind("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud.", 0),
            0u);
}

TEST(ChatPrompt, NoTemplateFallsBackToChatMl) {
  tok::VocabData v;
  std::string name;
  ChatRenderer r = make_chat_renderer(v, &name);
  EXPECT_EQ(name, "chatml-fallback");
  EXPECT_NE(r(M({{"user", "Hi"}})).find("Hi"), std::string::npos);
}

TEST(ChatPrompt, TemplateRefusalIs400OnMessages) {
  tok::VocabData v;
  v.chat_template =
      "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles "
      "must alternate user/assistant/user/assistant/...') }}{% endif %}{{ bos_token + '[INST] ' }}<<SYS>>";
  ChatRenderer r = make_chat_renderer(v);
  try {
    r(M({{"user", "a"}, {"user", "b"}}));
    SUCCEED() << "this template family accepts repeated roles";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "messages");
  }
}

}  // namespace
}  // namespace anelm::server
