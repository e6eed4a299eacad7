// Internal: the compiled form of a grammar. Rules are lists of alternatives; each alternative is a
// run of elements in one flat array, closed by an End element, so a parse position is one index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace anelm::grammar {

enum class ElemKind : uint8_t { End, Byte, Chars, Ref };

struct Elem {
  ElemKind kind;
  uint32_t value;  // Byte: the byte; Chars: index into Grammar::charsets; Ref: rule id
};

struct CodeRange {
  uint32_t lo, hi;  // inclusive code points
};

// A set of Unicode scalar values matched over UTF-8 bytes. A match in progress is a small state
// (the bits decoded so far and the bytes still due), so a token may end inside a code point.
class CharSet {
 public:
  explicit CharSet(std::vector<CodeRange> ranges);  // sorts, merges, drops surrogates

  static constexpr uint32_t kReject = 0xFFFFFFFFu;
  // Feeds one byte from `state` (0 = at a code point boundary). Returns kReject, 0 when a code point
  // of the set is complete, or the new partial state (non-zero).
  uint32_t step(uint32_t state, uint8_t byte) const;
  bool contains(uint32_t cp) const { return intersects(cp, cp); }
  bool intersects(uint32_t lo, uint32_t hi) const;
  const std::vector<CodeRange>& ranges() const { return ranges_; }

 private:
  std::vector<CodeRange> ranges_;
};

class Grammar {
 public:
  std::vector<Elem> elems;
  std::vector<uint32_t> alt_starts;  // every alternative's first element, rule after rule
  std::vector<uint32_t> rule_alts;   // rule r's alternatives: alt_starts[rule_alts[r]..rule_alts[r+1])
  std::vector<CharSet> charsets;
  std::vector<std::string> rule_names;
  uint32_t root = 0;
};

}  // namespace anelm::grammar
