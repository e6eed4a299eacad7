// Chat messages -> prompt text with the model's own Jinja chat template (or --chat-template FILE),
// rendered as transformers' apply_chat_template does; the template also tells how the model
// writes tool calls and reasoning (chat::ChatFormat).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_format.h"
#include "jinja/jinja.h"
#include "server/api_request.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace anelm::server {

class ChatPrompt {
 public:
  // `source` empty: a plain ChatML template (with a generic tool-call convention). `origin` says
  // where the template came from, for logs ("model", "file X", "chatml fallback"). Throws
  // jinja::Error when the source does not parse.
  ChatPrompt(const std::string& source, std::string origin, const tok::VocabData& vocab);

  // The template of the model, or of `override_file` when non-empty (a file that cannot be read
  // or parsed throws std::runtime_error naming it). A model template that does not parse falls
  // back to ChatML with a warning, as llama-server does.
  static std::shared_ptr<const ChatPrompt> for_model(const tok::VocabData& vocab, const std::string& override_file);

  // Renders messages (and tools, when non-empty) with the template's keyword arguments: bos_token,
  // eos_token, chat_template_kwargs, messages, tools, add_generation_prompt. The text holds
  // special-token strings: encode it with parse_special. Throws ApiError 400: param "messages"
  // when the template raises (its own message) or fails.
  // Content given as text parts is joined with "\n" (as vLLM and llama-server do) unless the
  // template iterates content parts itself (then it gets the list, as transformers passes it).
  // A template that does not render `tools` gets the generic JSON tool-call convention in the
  // system prompt instead (as llama-server does), with earlier tool calls and results as text.
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const;

  // A whole chat request: render() plus its tool_choice (none: no tools described when they are
  // only in the system prompt), add_generation_prompt and continue_final_message. Continuing a
  // final assistant message (continue_final_message, add_generation_prompt false, or neither given
  // and the last message is an assistant text without tool calls, as llama-server) renders it
  // without the end-of-turn markup the template puts after it, so that the model continues it.
  // Throws ApiError 400 as render(), and naming messages[N] when that message cannot be continued.
  std::string render_request(const ChatRequest& r) const;

  // tools: the template's own syntax, or kGeneric when it does not render tools (see render()).
  const chat::ChatFormat& format() const { return format_; }
  const std::string& origin() const { return origin_; }
  const std::string& source() const { return source_; }  // the Jinja text rendered
  bool tools_in_system_prompt() const { return tools_in_system_prompt_; }

 private:
  std::string render_template(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                              bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const;
  std::string render_generic_tools(nlohmann::ordered_json messages, const nlohmann::ordered_json& tools,
                                   bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const;

  jinja::Template template_;
  chat::ChatFormat format_;
  std::string origin_;
  std::string source_;
  bool content_as_parts_ = false;       // the template iterates message content parts
  bool tools_in_system_prompt_ = false;  // the template does not render `tools`
  nlohmann::ordered_json specials_ = nlohmann::ordered_json::object();  // bos_token, eos_token
};

// The ids of `format`'s markers (chat::format_markers) that the vocabulary holds as control tokens
// (Granite's and Phi-4-mini's <|tool_call|>, Llama 3's <|python_tag|>): the output keeps them as
// text and an output constraint may emit them, as llama.cpp's preserved tokens. Usually empty.
// `candidates`: only those ids are looked at (a request's subset of the model's list); null: the
// whole vocabulary (once, at start-up).
std::vector<int> preserved_token_ids(const tok::Tokenizer& tokenizer, const chat::ChatFormat& format,
                                     const std::vector<int>* candidates = nullptr);

}  // namespace anelm::server
