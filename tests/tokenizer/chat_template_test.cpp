// Chat template renderers against goldens rendered by Python jinja2 from the real templates.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/shared_data.h"
#include "tests/tokenizer/vocab_vectors_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace anelm::tok {
namespace {

const std::filesystem::path kDataDir = std::filesystem::path(__FILE__).parent_path().parent_path() / "data/tokenizer";

ChatTemplate qwen25() {
  const auto goldens = nlohmann::json::parse(testing::read_text_file(kDataDir / "chat_goldens.json"));
  return ChatTemplate::from_source(goldens["templates"]["qwen2.5"]["source"].get<std::string>());
}

// Every case of chat_goldens.json (made by tests/data/tokenizer/make_chat_goldens.py).
TEST(ChatTemplate, MatchesJinjaGoldens) {
  const auto goldens = nlohmann::json::parse(testing::read_text_file(kDataDir / "chat_goldens.json"));
  const std::map<std::string, std::string> expected_format = {
      {"qwen2.5", "chatml"}, {"qwen3", "qwen3"}, {"qwen2-gguf", "chatml"},
      {"llama2", "llama2"},  {"llama3", "llama3"}, {"llama3.1", "llama3.1"}};
  int compared = 0, errors = 0;
  for (const auto& c : goldens["cases"]) {
    const std::string name = c["template"];
    const auto& t = goldens["templates"][name];
    const ChatTemplate tmpl = ChatTemplate::from_source(t["source"].get<std::string>(), t["bos"].is_null() ? "" : t["bos"].get<std::string>(),
                                                       t["eos"].get<std::string>());
    EXPECT_EQ(tmpl.format_name(), expected_format.at(name));
    std::vector<ChatMessage> msgs;
    for (const auto& m : c["messages"]) msgs.push_back({m["role"], m["content"]});
    ChatOptions opt;
    opt.add_generation_prompt = c["add_generation_prompt"];
    opt.enable_thinking = c["options"].value("enable_thinking", true);
    opt.date_string = c["options"].value("date_string", "");
    std::string roles;
    for (const auto& m : msgs) roles += m.role + ",";
    if (c.contains("error")) {
      EXPECT_THROW(tmpl.render(msgs, opt), std::invalid_argument) << name << " [" << roles << "]";
      ++errors;
    } else {
      EXPECT_EQ(tmpl.render(msgs, opt), c["expected"].get<std::string>()) << name << " [" << roles << "]";
      ++compared;
    }
  }
  EXPECT_EQ(compared + errors, 84);
  EXPECT_EQ(errors, 7);  // empty lists where the template reads messages[0], Llama-2 alternation
}

// Readable goldens for the main shapes (the same strings as the jinja2 output).
TEST(ChatTemplate, Qwen25DefaultSystemPrompt) {
  const ChatTemplate t = qwen25();
  EXPECT_EQ(t.format(), ChatFormat::kChatMl);
  EXPECT_EQ(t.default_system(), "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  EXPECT_FALSE(t.renders_bos());
  EXPECT_EQ(t.render({{"user", "Hello"}}),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\n");
  ChatOptions no_prompt;
  no_prompt.add_generation_prompt = false;
  EXPECT_EQ(t.render({{"system", "Be brief."}, {"user", "Hi"}}, no_prompt),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, Llama2Golden) {
  const std::string src = testing::read_text_file(kDataDir / "chat_templates/llama2.jinja");
  const ChatTemplate t = ChatTemplate::from_source(src, "<s>", "</s>");
  EXPECT_EQ(t.format(), ChatFormat::kLlama2);
  EXPECT_TRUE(t.renders_bos());
  EXPECT_EQ(t.render({{"system", "Be brief."}, {"user", " Hi "}, {"assistant", "Hello!"}, {"user", "Joke?"}}),
            // strip() applies to the merged text, so the user turn keeps its leading space.
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello! </s><s>[INST] Joke? [/INST]");
  EXPECT_THROW(t.render({{"user", "a"}, {"user", "b"}}), std::invalid_argument);
}

TEST(ChatTemplate, Llama3Golden) {
  const std::string src = testing::read_text_file(kDataDir / "chat_templates/llama3.jinja");
  const ChatTemplate t = ChatTemplate::from_source(src, "<|begin_of_text|>", "<|eot_id|>");
  EXPECT_EQ(t.format(), ChatFormat::kLlama3);
  EXPECT_EQ(t.render({{"system", "S"}, {"user", "  Hi\n"}}),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, FallbackIsPlainChatMl) {
  for (const char* src : {"", "{{ messages }}"}) {
    const ChatTemplate t = ChatTemplate::from_source(src);
    EXPECT_EQ(t.format(), ChatFormat::kChatMlFallback);
    EXPECT_EQ(t.format_name(), "chatml-fallback");
    EXPECT_EQ(t.default_system(), "");
    EXPECT_EQ(t.render({{"user", "Hi"}}), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(t.render({}), "<|im_start|>assistant\n");
  }
}

TEST(ChatTemplate, UnknownRolesThrow) {
  const std::string llama3 = testing::read_text_file(kDataDir / "chat_templates/llama3.jinja");
  const std::string llama2 = testing::read_text_file(kDataDir / "chat_templates/llama2.jinja");
  for (const ChatTemplate& t : {qwen25(), ChatTemplate::from_source(""), ChatTemplate::from_source(llama3),
                                ChatTemplate::from_source(llama2)}) {
    EXPECT_THROW(t.render({{"user", "a"}, {"wizard", "b"}}), std::invalid_argument) << t.format_name();
    EXPECT_THROW(t.render({{"", "a"}}), std::invalid_argument) << t.format_name();
  }
}

TEST(ChatTemplate, FromVocabOfSharedModels) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  const ChatTemplate t = ChatTemplate::from_vocab(tok->vocab());
  EXPECT_EQ(t.format_name(), "chatml");
  // The rendered prompt tokenizes with its special tokens as single ids.
  const auto ids = tok->encode(t.render({{"user", "Hello"}}), true);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(ids.back(), 198);  // "\n" after "assistant"
}

}  // namespace
}  // namespace anelm::tok
