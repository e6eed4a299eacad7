// Byte-level BPE (GPT-2 / Qwen2 / Llama-3): merges applied by rank to one pre-tokenized word.
#pragma once

#include <array>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace anelm::tok {

// Immutable after construction; encode_word() is thread-safe (the word cache has its own lock).
class BytePairEncoder {
 public:
  // Throws std::invalid_argument naming `source` and the merge when a merge references a token
  // that is not in the vocabulary.
  BytePairEncoder(const VocabData& vocab, const TokenIndex& index, const std::string& source);

  // Appends the ids of one word given as raw bytes.
  void encode_word(std::string_view word, std::vector<int>& out) const;

 private:
  struct Merge {
    int rank;
    int result;  // token id of the merged pair
  };
  static uint64_t pair_key(int left, int right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  void merge_word(std::string_view word, std::vector<int>& out) const;

  const TokenIndex& index_;
  bool ignore_merges_;
  std::array<int, 256> byte_token_{};           // id of each byte's one-character token, -1 if absent
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank and result id

  // Per-word cache: words repeat a lot in prompts. Bounded; cleared wholesale when full.
  static constexpr size_t kCacheMaxEntries = 1 << 16;
  static constexpr size_t kCacheMaxWordBytes = 64;
  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int>, StringHash, std::equal_to<>> cache_;
};

}  // namespace anelm::tok
