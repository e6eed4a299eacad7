// Chat messages -> prompt text: a thin adapter over the tokenizer's ChatTemplate (fixed renderers).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/vocab.h"

namespace anelm::server {

// Renders messages plus the assistant generation prompt. The text may contain special-token
// strings (<|im_start|>, <s>, ...): encode it with parse_special = true. Throws ApiError 400
// (param "messages") when the template refuses the conversation (e.g. Llama-2's alternation rule).
using ChatRenderer = std::function<std::string(const nlohmann::ordered_json& messages)>;

// The renderer for the model's template (VocabData::chat_template); `format_name`, when given,
// receives the detected family ("chatml", "llama2", "llama3", ..., "chatml-fallback").
ChatRenderer make_chat_renderer(const tok::VocabData& vocab, std::string* format_name = nullptr);

}  // namespace anelm::server
