// Per-request incremental detokenizer: ids in one at a time, only complete UTF-8 characters out.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace anelm::tok {

// Holds back the bytes of a character until it is complete, so a character split across tokens
// (byte-fallback <0xNN> tokens, byte-level pieces of an emoji or CJK character) is never emitted
// broken. Invalid bytes are replaced by U+FFFD as soon as they are known to be invalid.
// One instance per request; not thread-safe. The tokenizer must outlive it.
class StreamDecoder {
 public:
  // `context`: the ids that precede the stream (the prompt). With an SPM space prefix and an empty
  // context, the first id's piece loses one leading space exactly as in Tokenizer::decode(ids,
  // skip_special); a non-empty context means the stream continues a text and keeps its spaces.
  // skip_special: control/unknown tokens (e.g. <|im_end|>, </s>) produce no text, except those in
  // `keep` (a chat format's markers that the vocabulary holds as control tokens, e.g. <|tool_call|>:
  // the output parser must read them).
  explicit StreamDecoder(const Tokenizer& tokenizer, const std::vector<int>& context = {},
                         bool skip_special = true, std::vector<int> keep = {});

  // Adds one token; returns the newly completed text (possibly empty).
  std::string push(int id);
  // Returns whatever is held back, an incomplete trailing sequence becoming U+FFFD; resets holding.
  std::string flush();
  // All text returned so far by push() and flush().
  const std::string& text() const { return text_; }
  // Bytes currently held back (0..3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<int> keep_;  // special ids decoded as text anyway (a handful: a linear scan)
  bool strip_space_;     // the first pushed id's piece loses one leading space
  std::string pending_;  // bytes of an incomplete character
  std::string text_;
};

// Splits `bytes` into its longest prefix of complete characters (invalid bytes replaced by U+FFFD)
// and leaves in `bytes` only a trailing sequence that may still be completed.
std::string take_complete_utf8(std::string& bytes);

}  // namespace anelm::tok
