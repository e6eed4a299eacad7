// Hand-written pre-tokenizer split rules of the GPT-2 family regexes (Qwen2, Llama-3, GPT-2); no std::regex.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace anelm::tok {

// Splits text into words, each a byte range of `text` (so invalid UTF-8 bytes survive intact).
//   kQwen2:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//            \s*[\r\n]+|\s+(?!\S)|\s+
//   kLlama3: the same with \p{N}{1,3} instead of \p{N}
//   kGpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   kNone:   the whole text as one word
// Invalid UTF-8 bytes count as one "other" character each (neither letter, number nor space).
std::vector<std::string_view> pre_tokenize(std::string_view text, PreTokenizer kind);

}  // namespace anelm::tok
