// The model's chat template through the jinja engine; errors become 400s that name the cause.
#include "server/chat_prompt.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "server/api_error.h"

namespace anelm::server {

namespace {

// For models without a (usable) template: ChatML. It reads `tools`, so tool requests use the
// generic JSON convention (chat::ToolSyntax::kGeneric), which the server enforces with a grammar.
constexpr const char* kChatMlFallback = R"JINJA({%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages and messages[0].role == 'system' %}{{- messages[0].content + '\n\n' }}{%- endif %}
{{- 'You may call these tools (JSON schemas):\n' }}
{%- for tool in tools %}{{- (tool.function if tool.function is defined else tool) | tojson + '\n' }}{%- endfor %}
{{- 'To call tools, reply with only {"tool_calls": [{"name": NAME, "arguments": {...}}]}. Otherwise reply with only {"response": TEXT}.<|im_end|>\n' }}
{%- elif messages and messages[0].role == 'system' %}
{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'assistant' and message.tool_calls %}
{{- '<|im_start|>assistant\n{"tool_calls": [' }}
{%- for call in message.tool_calls %}{{- ', ' if not loop.first else '' }}{{- {'name': call.function.name, 'arguments': call.function.arguments} | tojson }}{%- endfor %}
{{- ']}<|im_end|>\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\n' + (message.content if message.content is string else '') + '<|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %})JINJA";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("--chat-template: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string token_text(const tok::VocabData& v, int id) {
  return id >= 0 && id < static_cast<int>(v.tokens.size()) ? v.tokens[static_cast<size_t>(id)] : std::string();
}

}  // namespace

ChatPrompt::ChatPrompt(const std::string& source, std::string origin, const tok::VocabData& vocab)
    : template_(jinja::Template::parse(source.empty() ? kChatMlFallback : source)),
      format_(chat::detect_chat_format(source.empty() ? kChatMlFallback : source)),
      origin_(std::move(origin)) {
  // transformers passes the tokenizer's special tokens; an absent one (Qwen's BOS) stays undefined.
  if (const std::string bos = token_text(vocab, vocab.bos_id); !bos.empty()) specials_["bos_token"] = bos;
  if (const std::string eos = token_text(vocab, vocab.eos_id); !eos.empty()) specials_["eos_token"] = eos;
}

std::shared_ptr<const ChatPrompt> ChatPrompt::for_model(const tok::VocabData& vocab, const std::string& override_file) {
  if (!override_file.empty()) {
    try {
      return std::make_shared<const ChatPrompt>(read_text(override_file), "file " + override_file, vocab);
    } catch (const jinja::Error& e) {
      throw std::runtime_error("--chat-template " + override_file + ": " + e.what());
    }
  }
  if (!vocab.chat_template.empty()) {
    try {
      return std::make_shared<const ChatPrompt>(vocab.chat_template, "model", vocab);
    } catch (const jinja::Error& e) {
      spdlog::warn("the model's chat template does not parse ({}); using ChatML", e.what());
    }
  }
  return std::make_shared<const ChatPrompt>("", "chatml fallback", vocab);
}

std::string ChatPrompt::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                               bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const {
  nlohmann::ordered_json ctx = specials_;
  for (const auto& [k, v] : kwargs.items()) ctx[k] = v;  // reserved names were refused by the request parser
  ctx["messages"] = messages;
  // transformers passes tools=None when the request has none.
  ctx["tools"] = tools.empty() ? nlohmann::ordered_json() : tools;
  ctx["add_generation_prompt"] = add_generation_prompt;
  try {
    return template_.render(ctx, std::chrono::system_clock::now());
  } catch (const jinja::Raised& e) {
    throw invalid_field("messages", std::string("the chat template refused the conversation: ") + e.what());
  } catch (const jinja::Error& e) {
    throw invalid_field("messages", std::string("the chat template failed: ") + e.what());
  }
}

}  // namespace anelm::server
