// Tokenizer facade: text <-> ids. Immutable after construction; const methods are thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace anelm::tok {

class Tokenizer {
 public:
  // Throws std::invalid_argument naming the file/field when the data is inconsistent.
  static std::unique_ptr<Tokenizer> create(VocabData data);
  // HF directory: tokenizer.json, or vocab.json + merges.txt (+ tokenizer_config.json, added_tokens.json).
  static std::unique_ptr<Tokenizer> from_hf_dir(const std::string& dir);
  virtual ~Tokenizer() = default;

  // Never adds BOS. With parse_special, added/special token strings in text map to their ids.
  virtual std::vector<int> encode(std::string_view text, bool parse_special) const = 0;
  // Raw bytes of the ids' text (may end in an incomplete UTF-8 sequence; use StreamDecoder to stream).
  // Mirrors llama.cpp's llama_detokenize(remove_special = skip_special, unparse_special =
  // !skip_special): skip_special hides control/unknown tokens; with an SPM space prefix the first
  // piece loses one leading space, except after a leading BOS removed by skip_special.
  virtual std::string decode(const std::vector<int>& ids, bool skip_special = false) const = 0;
  // Bytes of one token's text.
  virtual std::string token_bytes(int id) const = 0;
  virtual const VocabData& vocab() const = 0;
  virtual int vocab_size() const = 0;
  virtual bool is_eog(int id) const = 0;
  // Control or unknown tokens (<|im_end|>, <s>, <unk>); user-defined added tokens are not special.
  virtual bool is_special(int id) const = 0;
};

}  // namespace anelm::tok
