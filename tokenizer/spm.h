// SentencePiece-style BPE as llama.cpp's llm_tokenizer_spm: bigram merges by score, byte fallback.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace anelm::tok {

// Stateless apart from references to the vocabulary; encode() is const and thread-safe.
class SentencePieceEncoder {
 public:
  SentencePieceEncoder(const VocabData& vocab, const TokenIndex& index);

  // Appends the ids of `text`, which must already have spaces replaced by "▁" (and the prefix added).
  void encode(std::string_view text, std::vector<int>& out) const;

 private:
  int byte_token(uint8_t b) const;

  const VocabData& vocab_;
  const TokenIndex& index_;
};

// Replaces ' ' with U+2581 "▁" (llama.cpp's llama_escape_whitespace).
std::string escape_spaces(std::string_view text);

}  // namespace anelm::tok
