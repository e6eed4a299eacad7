// Loads VocabData from HuggingFace tokenizer files: tokenizer.json, or vocab.json + merges.txt.
#pragma once

#include <stdexcept>
#include <string>

#include "tokenizer/vocab.h"

namespace anelm::tok {

// Thrown for unreadable or inconsistent tokenizer files; the message names the file and field.
class TokenizerError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Reads `dir`: tokenizer.json if present, else vocab.json + merges.txt (+ added_tokens.json);
// tokenizer_config.json, when present, supplies bos/eos/pad/unk, add_bos_token, chat_template and
// added_tokens_decoder. Throws TokenizerError.
VocabData load_hf_vocab(const std::string& dir);

}  // namespace anelm::tok
