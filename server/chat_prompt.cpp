// Adapts tok::ChatTemplate (ChatML/Qwen2.5, Llama-2, Llama-3 rendered by fixed code) to the server.
#include "server/chat_prompt.h"

#include <memory>
#include <stdexcept>

#include "server/api_error.h"
#include "server/api_request.h"
#include "tokenizer/chat_template.h"

namespace anelm::server {

ChatRenderer make_chat_renderer(const tok::VocabData& vocab, std::string* format_name) {
  auto tmpl = std::make_shared<const tok::ChatTemplate>(tok::ChatTemplate::from_vocab(vocab));
  if (format_name) *format_name = std::string(tmpl->format_name());
  return [tmpl](const nlohmann::ordered_json& msgs) {
    std::vector<tok::ChatMessage> in;
    in.reserve(msgs.size());
    for (const auto& m : msgs) in.push_back(tok::ChatMessage{m["role"].get<std::string>(), m["content"].get<std::string>()});
    try {
      return tmpl->render(in);
    } catch (const std::invalid_argument& e) {
      throw invalid_field("messages", e.what());
    }
  };
}

}  // namespace anelm::server
