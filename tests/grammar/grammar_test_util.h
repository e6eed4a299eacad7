// Helpers shared by the grammar tests: a one-byte-per-token vocabulary, whole-text matching, and
// the Qwen2.5 vocabulary decoded to bytes.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "grammar/grammar.h"

namespace anelm::grammar::testing {

// 256 tokens, token i = byte i; token 256 = end of generation.
std::shared_ptr<const Vocab> byte_vocab();

// Does the grammar accept exactly this text (fed at once, then required to be able to end)?
bool matches(const std::shared_ptr<const Grammar>& g, std::string_view text);
bool matches_gbnf(const std::string& gbnf, std::string_view text);

// The Qwen2.5-0.5B-Instruct vocabulary (151936 ids) with token bytes decoded from byte-level BPE;
// nullopt when the shared model files are absent.
struct QwenVocab {
  std::shared_ptr<const Vocab> vocab;
  std::vector<std::string> bytes;  // per id
  std::vector<int> eog;
};
std::optional<QwenVocab> load_qwen_vocab();

}  // namespace anelm::grammar::testing
