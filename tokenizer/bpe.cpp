// Byte-level BPE merge loop: a linked list of symbols and a min-heap of candidate pairs ordered by
// (rank, left position), the same order HF tokenizers and llama.cpp use.
#include "tokenizer/bpe.h"

#include <mutex>
#include <queue>
#include <stdexcept>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace anelm::tok {

BytePairEncoder::BytePairEncoder(const VocabData& vocab, const TokenIndex& index,
                                 const std::string& source)
    : index_(index), ignore_merges_(vocab.ignore_merges) {
  for (int b = 0; b < 256; ++b) {
    std::string s;
    unicode::append_utf8(s, byte_level::byte_to_cp(static_cast<uint8_t>(b)));
    byte_token_[b] = find_token(index, s);
  }
  merges_.reserve(vocab.merges.size() * 2);
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& m = vocab.merges[rank];
    const size_t sp = m.find(' ', 1);  // a merge part may itself be a space-free "Ġ"; never empty
    auto fail = [&](const std::string& why) {
      throw std::invalid_argument(source + ": merges[" + std::to_string(rank) + "] \"" + m + "\" " + why);
    };
    if (sp == std::string::npos || sp + 1 >= m.size()) fail("is not of the form \"a b\"");
    const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
    const int l = find_token(index, left), r = find_token(index, right);
    if (l < 0) fail("references unknown token \"" + std::string(left) + "\"");
    if (r < 0) fail("references unknown token \"" + std::string(right) + "\"");
    const int res = find_token(index, std::string(left) + std::string(right));
    if (res < 0) fail("produces \"" + std::string(left) + std::string(right) + "\", which is not in the vocabulary");
    merges_.emplace(pair_key(l, r), Merge{static_cast<int>(rank), res});  // first (lowest) rank wins
  }
}

void BytePairEncoder::encode_word(std::string_view word, std::vector<int>& out) const {
  if (word.empty()) return;
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::shared_lock lock(cache_mutex_);
    const auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int> ids;
  merge_word(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::unique_lock lock(cache_mutex_);
    if (cache_.size() >= kCacheMaxEntries) cache_.clear();
    cache_.emplace(std::string(word), std::move(ids));
  }
}

void BytePairEncoder::merge_word(std::string_view word, std::vector<int>& out) const {
  if (ignore_merges_) {  // Llama-3: a word that is already a token is emitted whole
    const int id = find_token(index_, byte_level::encode(word));
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  struct Symbol {
    int id;
    int prev, next;  // -1 at the ends
  };
  const int n = static_cast<int>(word.size());
  std::vector<Symbol> sym(n);
  for (int i = 0; i < n; ++i) {
    sym[i] = {byte_token_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  struct Candidate {
    int rank, left, left_id, right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int left) {
    if (left < 0) return;
    const int right = sym[left].next;
    if (right < 0 || sym[left].id < 0 || sym[right].id < 0) return;
    const auto it = merges_.find(pair_key(sym[left].id, sym[right].id));
    if (it != merges_.end()) heap.push({it->second.rank, left, sym[left].id, sym[right].id});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[c.left];
    // Stale entry: the left symbol changed, or its neighbour is no longer the right symbol.
    if (l.id != c.left_id || l.next < 0 || sym[l.next].id != c.right_id) continue;
    const int right = l.next;
    l.id = merges_.find(pair_key(c.left_id, c.right_id))->second.result;
    l.next = sym[right].next;
    if (l.next >= 0) sym[l.next].prev = c.left;
    sym[right].id = -2;  // dead
    push(l.prev);
    push(c.left);
  }
  for (int i = 0; i >= 0 && i < n; i = sym[i].next) {
    if (sym[i].id >= 0) out.push_back(sym[i].id);
  }
}

}  // namespace anelm::tok
