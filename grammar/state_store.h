// Internal: grammar states as sets of parse stacks, interned, with a memo of byte transitions.
//
// A parse stack is a chain of frames (position of the next element in an alternative, partial
// UTF-8 state, parent frame). Frames are hash-consed, so equal stacks have equal ids and a state
// (the set of live stacks, each topped by a terminal element) is a sorted id list, interned too.
// Transitions state x byte -> state are computed once and kept in a table of 256 entries per
// state: a lazily built DFA, which is what makes the vocabulary trie walk cheap.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/rules.h"

namespace anelm::grammar {

class StateStore {
 public:
  explicit StateStore(const Grammar& g);

  static constexpr int32_t kDead = -1;
  // More live stacks than this in one state means a grammar too ambiguous to follow: refused.
  static constexpr size_t kMaxStacks = 1024;

  int32_t initial() const { return initial_; }
  int32_t step(int32_t state, uint8_t byte) {
    size_t at = static_cast<size_t>(state) * 256 + byte;
    int32_t t = trans_[at];
    if (t == kUnknown) {
      t = compute(state, byte);
      trans_[at] = t;  // compute may grow trans_, so index again
    }
    return t;
  }
  bool can_end(int32_t state) const { return can_end_[static_cast<size_t>(state)] != 0; }
  // Only the empty stack is left: the grammar has matched and nothing else may follow.
  bool done(int32_t state) const { return sets_[static_cast<size_t>(state)] == std::vector<int32_t>{0}; }
  size_t size() const { return frames_.size() + sets_.size() * 64; }
  // Re-interns `state` of `other` (same grammar) here; used to start afresh when the memo is big.
  int32_t import(const StateStore& other, int32_t state);

 private:
  static constexpr int32_t kUnknown = -2;
  struct Frame {
    uint32_t pos;     // next element (End: the alternative is finished)
    uint32_t utf8;    // partial code point state when the element is a char set
    int32_t parent;   // frame to resume after this alternative; 0 = the empty stack
    bool operator==(const Frame&) const = default;
  };
  struct FrameHash {
    size_t operator()(const Frame& f) const {
      uint64_t h = (uint64_t{f.pos} << 32 | f.utf8) * 0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(f.parent)) * 0xC2B2AE3D27D4EB4Full));
    }
  };

  int32_t frame(uint32_t pos, uint32_t utf8, int32_t parent);
  // Adds to out the terminal-topped stacks reachable from `work` without consuming input.
  bool close(std::vector<int32_t>& work, std::vector<int32_t>& out);
  int32_t intern(std::vector<int32_t>& stacks);
  int32_t compute(int32_t state, uint8_t byte);
  int32_t import_frame(const StateStore& other, int32_t f, std::unordered_map<int32_t, int32_t>& memo);

  const Grammar& g_;
  std::vector<Frame> frames_;
  std::unordered_map<Frame, int32_t, FrameHash> frame_ids_;
  std::vector<std::vector<int32_t>> sets_;
  std::unordered_map<std::string, int32_t> set_ids_;
  std::vector<uint8_t> can_end_;
  std::vector<int32_t> trans_;
  int32_t initial_ = kDead;
  // Scratch reused by compute(): transitions are computed often while a new state is walked.
  std::vector<int32_t> work_, out_;
  std::vector<uint32_t> seen_;  // frame id -> epoch it was last reached in close()
  uint32_t epoch_ = 0;
  std::string key_;
};

}  // namespace anelm::grammar
