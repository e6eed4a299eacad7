// Internal: the vocabulary as a byte trie laid out in preorder, so the mask walk is a linear scan
// that jumps over a whole subtree when its first byte is refused.
#pragma once

#include <cstdint>
#include <vector>

namespace anelm::grammar {

struct VocabTrie {
  // Node i (i >= 1; node 0 is the root, the empty prefix) is reached by byte[i] from the node at
  // depth[i] - 1 on the current path; its subtree is [i, skip[i]). Tokens whose bytes end exactly
  // at node i are tokens[tok_begin[i] .. tok_begin[i + 1]).
  std::vector<uint8_t> byte;
  std::vector<uint16_t> depth;
  std::vector<uint32_t> skip;
  std::vector<uint32_t> tok_begin;  // one more entry than there are nodes
  std::vector<int32_t> tokens;
  uint16_t max_depth = 0;
};

}  // namespace anelm::grammar
