// Builds the vocabulary byte trie once per model.
#include <algorithm>
#include <numeric>

#include "grammar/grammar.h"
#include "grammar/vocab_trie.h"

namespace anelm::grammar {

Vocab::Vocab(std::vector<std::string> token_bytes, std::vector<bool> usable, std::vector<int> eog)
    : bytes_(std::move(token_bytes)), kind_(bytes_.size(), kNever) {
  if (usable.size() != bytes_.size()) throw Error("Vocab: usable has a different size from token_bytes");
  // Longer tokens exist only as junk; they are never allowed rather than deepening the walk.
  constexpr size_t kMaxTokenBytes = 1024;
  std::vector<int32_t> order;
  for (size_t i = 0; i < bytes_.size(); ++i) {
    // A usable token with no bytes would let the model stall without advancing the grammar.
    if (usable[i] && !bytes_[i].empty() && bytes_[i].size() <= kMaxTokenBytes) {
      kind_[i] = kText;
      order.push_back(static_cast<int32_t>(i));
    }
  }
  for (int id : eog) {
    if (id < 0 || static_cast<size_t>(id) >= bytes_.size()) throw Error("Vocab: end-of-generation id out of range");
    kind_[static_cast<size_t>(id)] = kEog;
  }
  std::erase_if(order, [&](int32_t t) { return kind_[static_cast<size_t>(t)] != kText; });
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return bytes_[a] < bytes_[b]; });

  auto trie = std::make_shared<VocabTrie>();
  VocabTrie& t = *trie;
  t.byte.push_back(0), t.depth.push_back(0), t.skip.push_back(0), t.tok_begin.push_back(0);
  // Tokens come in byte order, so each node's tokens are contiguous in `order` and nodes are
  // created in preorder. path[k] is the node at depth k + 1 on the current path.
  std::vector<uint32_t> path;
  const std::string* prev = nullptr;
  for (size_t k = 0; k < order.size(); ++k) {
    const std::string& s = bytes_[static_cast<size_t>(order[k])];
    size_t common = 0;
    if (prev) {
      size_t n = std::min(prev->size(), s.size());
      while (common < n && (*prev)[common] == s[common]) ++common;
    }
    while (path.size() > common) {
      t.skip[path.back()] = static_cast<uint32_t>(t.byte.size());
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<uint32_t>(t.byte.size()));
      t.byte.push_back(static_cast<uint8_t>(s[d]));
      t.depth.push_back(static_cast<uint16_t>(d + 1));
      t.skip.push_back(0);
      t.tok_begin.push_back(static_cast<uint32_t>(k));  // tokens of earlier nodes end before k
    }
    t.max_depth = std::max<uint16_t>(t.max_depth, static_cast<uint16_t>(s.size()));
    prev = &s;
  }
  for (uint32_t node : path) t.skip[node] = static_cast<uint32_t>(t.byte.size());
  t.skip[0] = static_cast<uint32_t>(t.byte.size());
  // tok_begin[i] was set when node i was created; a node's tokens run to the next node's start.
  t.tok_begin.push_back(static_cast<uint32_t>(order.size()));
  t.tokens = std::move(order);
  trie_ = std::move(trie);
}

}  // namespace anelm::grammar
