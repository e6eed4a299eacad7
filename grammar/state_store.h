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
  // Live parse stacks kept per state. A grammar that is ambiguous for longer (an alternation of
  // thousands of rules, an optional repeated thousands of times, an exponential chain) keeps the
  // first kMaxStacks found and drops the rest: every kept stack is a real parse, so the output still
  // matches the grammar and can still be completed; only some of the valid texts become
  // unreachable. The matcher never dies of it.
  static constexpr size_t kMaxStacks = 4096;
  // Frames one closure may visit (its cost per computed transition), for the same reason.
  static constexpr size_t kMaxClosureWork = 64 * kMaxStacks;

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
  bool done(int32_t state) const {
    const std::vector<int32_t>& s = sets_[static_cast<size_t>(state)];
    return s.size() == 1 && s[0] == 0;
  }
  size_t stacks(int32_t state) const { return sets_[static_cast<size_t>(state)].size(); }
  size_t pruned() const { return pruned_; }  // closures cut at kMaxStacks / kMaxClosureWork
  size_t size() const { return frames_.size() + sets_.size() * 64; }
  // Re-interns `state` of `other` (same grammar) here; used to start afresh when the memo is big.
  int32_t import(const StateStore& other, int32_t state);

  // Token masks of recently masked states (a bit per token), so a state the generation comes back
  // to (inside a string, between members) costs a copy, not a trie walk. At most kMaskCacheStates
  // per store (about 19 KB each for a 152k vocabulary); the oldest is replaced.
  static constexpr size_t kMaskCacheStates = 64;
  const std::vector<uint64_t>* cached_mask(int32_t state) const {
    auto it = mask_index_.find(state);
    return it == mask_index_.end() ? nullptr : &masks_[it->second].second;
  }
  std::vector<uint64_t>& new_mask(int32_t state, size_t tokens) {
    size_t slot;
    if (masks_.size() < kMaskCacheStates) {
      slot = masks_.size();
      masks_.emplace_back();
    } else {
      slot = next_mask_slot_;
      next_mask_slot_ = (next_mask_slot_ + 1) % kMaskCacheStates;
      mask_index_.erase(masks_[slot].first);
    }
    masks_[slot].first = state;
    masks_[slot].second.assign((tokens + 63) / 64, 0);
    mask_index_[state] = slot;
    return masks_[slot].second;
  }

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
  // Adds to out the terminal-topped stacks reachable from `work` without consuming input (at most
  // kMaxStacks of them).
  void close(std::vector<int32_t>& work, std::vector<int32_t>& out);
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
  size_t pruned_ = 0;
  std::vector<std::pair<int32_t, std::vector<uint64_t>>> masks_;
  std::unordered_map<int32_t, size_t> mask_index_;
  size_t next_mask_slot_ = 0;
  std::string key_;
};

}  // namespace anelm::grammar
