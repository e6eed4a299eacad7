// Chat messages -> prompt text for the fixed template families (ChatML/Qwen, Llama-2, Llama-3); no Jinja.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace anelm::tok {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant"; "tool" where the template supports it
  std::string content;
};

enum class ChatFormat {
  kChatMl,          // <|im_start|> templates: Qwen2, Qwen2.5 (default system prompt taken from the source)
  kQwen3,           // ChatML with Qwen3's <think> handling of assistant turns
  kLlama2,          // [INST] <<SYS>> ... (Llama-2-chat)
  kLlama3,          // <|start_header_id|> (Llama-3.0)
  kLlama31,         // Llama-3.1/3.2: system header with "Cutting Knowledge Date" / "Today Date"
  kChatMlFallback,  // no or unrecognised template: plain ChatML without a default system prompt
};

struct ChatOptions {
  bool add_generation_prompt = true;  // append the assistant header
  bool enable_thinking = true;        // Qwen3: false appends an empty <think></think> block
  std::string date_string;            // Llama-3.1+: "Today Date"; empty = the template's default
};

// Immutable; render() is const and thread-safe.
class ChatTemplate {
 public:
  // Detects the family from the Jinja source by markers (<|im_start|>, <|start_header_id|>,
  // [INST] + <<SYS>>, "Cutting Knowledge Date", reasoning_content); BOS/EOS text from the vocab.
  static ChatTemplate from_vocab(const VocabData& vocab);
  static ChatTemplate from_source(std::string_view jinja, std::string bos_text = "<s>",
                                  std::string eos_text = "</s>");

  ChatFormat format() const { return format_; }
  // "chatml", "qwen3", "llama2", "llama3", "llama3.1", "chatml-fallback".
  std::string_view format_name() const;
  // ChatML: the system prompt the template inserts when the first message is not a system one.
  const std::string& default_system() const { return default_system_; }
  // True when rendered text starts with the BOS token text (Llama-2/3): encode it with
  // parse_special = true and do not add another BOS.
  bool renders_bos() const;

  // Renders exactly what the model's Jinja template renders for these messages.
  // Throws std::invalid_argument for roles the template does not handle, and for Llama-2's
  // "roles must alternate" error.
  std::string render(const std::vector<ChatMessage>& messages, const ChatOptions& options = {}) const;

 private:
  std::string render_chatml(const std::vector<ChatMessage>& m, const ChatOptions& opt) const;
  std::string render_llama2(const std::vector<ChatMessage>& m) const;
  std::string render_llama3(const std::vector<ChatMessage>& m, const ChatOptions& opt) const;
  std::string render_llama31(const std::vector<ChatMessage>& m, const ChatOptions& opt) const;

  ChatFormat format_ = ChatFormat::kChatMlFallback;
  std::string default_system_;
  bool default_system_always_ = true;  // Qwen2.5 reads messages[0] outside the loop; Qwen2 inside it
  bool qwen_tool_responses_ = false;   // "tool" turns grouped into <tool_response> user turns
  bool strftime_date_ = false;         // Llama-3.2: the template's default date is today's
  std::string bos_, eos_;
};

}  // namespace anelm::tok
