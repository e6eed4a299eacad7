// BERT's WordPiece as llama.cpp's llm_tokenizer_wpm ("WPM"): BERT pre-tokenization, then greedy
// longest-match of vocabulary pieces over each word.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace anelm::tok {

// Stateless apart from references to the vocabulary; encode() is const and thread-safe.
// GGUF WordPiece vocabularies store word-initial pieces with a "▁" prefix and continuation pieces
// bare (the converter rewrote HF's "##" form), so each word is matched as "▁" + word.
class WordPieceEncoder {
 public:
  WordPieceEncoder(const VocabData& vocab, const TokenIndex& index);

  // Appends the ids of raw text (special-token text already split out by the caller).
  void encode(std::string_view text, std::vector<int>& out) const;

 private:
  void encode_word(std::string_view word, std::string& buf, std::vector<int>& out) const;

  const TokenIndex& index_;
  int unk_id_;            // a word with no full match becomes this; -1: the word is dropped
  size_t max_token_len_;  // bytes of the longest token text: no longer substring can match
  bool lowercase_;
  bool strip_accents_;
};

// BERT pre-tokenization (llama.cpp's llm_tokenizer_wpm_session::preprocess): with strip_accents,
// each code point is replaced by the first of its canonical decomposition and accent marks (M*) are
// dropped; whitespace separates words; NUL, U+FFFD and control characters vanish; punctuation,
// ASCII symbols and CJK ideographs are one-character words; with lowercase, simple lower-casing.
// Invalid UTF-8 bytes decode as U+FFFD (so vanish), as in llama.cpp.
std::vector<std::string> wordpiece_words(std::string_view text, bool lowercase, bool strip_accents);

}  // namespace anelm::tok
