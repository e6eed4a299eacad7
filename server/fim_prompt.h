// Fill-in-the-middle prompts for /v1/completions `suffix` (what code-completion clients send).
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace anelm::server {

// [BOS when the model adds one] FIM_PRE prefix FIM_SUF suffix FIM_MID: the prefix-suffix-middle
// order llama.cpp's /infill writes and coder models (Qwen2.5-Coder, StarCoder, CodeLlama, DeepSeek
// Coder) are trained on; the model then writes the middle and ends with an end-of-generation token.
// The suffix is tokenized as plain text (a marker written in the code stays text, as llama.cpp does).
// Throws ApiError (400, param "suffix") when the vocabulary has no FIM markers.
std::vector<int> fim_prompt(const tok::Tokenizer& tk, const std::vector<int>& prefix, std::string_view suffix);

}  // namespace anelm::server
