// Grammar state interning and byte transitions.
#include "grammar/state_store.h"

#include <algorithm>

namespace anelm::grammar {

StateStore::StateStore(const Grammar& g) : g_(g) {
  frames_.push_back(Frame{0, 0, -1});  // id 0: the empty stack (the whole input matched)
  std::vector<int32_t> work, out;
  for (uint32_t a = g.rule_alts[g.root]; a < g.rule_alts[g.root + 1]; ++a) work.push_back(frame(g.alt_starts[a], 0, 0));
  close(work, out);
  initial_ = intern(out);
}

int32_t StateStore::frame(uint32_t pos, uint32_t utf8, int32_t parent) {
  // A finished alternative is its parent: resolving it here keeps equal stacks equal.
  while (utf8 == 0 && parent >= 0 && g_.elems[pos].kind == ElemKind::End) {
    if (parent == 0) return 0;
    const Frame& p = frames_[static_cast<size_t>(parent)];
    pos = p.pos, utf8 = p.utf8, parent = p.parent;
  }
  Frame f{pos, utf8, parent};
  auto [it, added] = frame_ids_.try_emplace(f, static_cast<int32_t>(frames_.size()));
  if (added) frames_.push_back(f);
  return it->second;
}

void StateStore::close(std::vector<int32_t>& work, std::vector<int32_t>& out) {
  if (++epoch_ == 0) std::fill(seen_.begin(), seen_.end(), 0u), epoch_ = 1;
  size_t visited = 0;
  bool cut = false;
  while (!work.empty()) {
    int32_t id = work.back();
    work.pop_back();
    if (seen_.size() < frames_.size()) seen_.resize(frames_.size() * 2, 0);
    if (seen_[static_cast<size_t>(id)] == epoch_) continue;
    seen_[static_cast<size_t>(id)] = epoch_;
    if (id == 0) {  // the finished parse is always kept: it decides whether the text may end
      out.push_back(0);
      continue;
    }
    if (++visited > kMaxClosureWork || out.size() >= kMaxStacks) {
      cut = true;
      continue;  // drain the work list (cheap) so that a finished parse still in it is kept
    }
    Frame f = frames_[static_cast<size_t>(id)];
    const Elem& e = g_.elems[f.pos];
    if (e.kind != ElemKind::Ref) {  // frame() never leaves an End on top
      out.push_back(id);
      continue;
    }
    // Tail call: a reference that ends its alternative returns straight to the parent, so
    // right recursion (repetitions) does not deepen the stack.
    int32_t next = g_.elems[f.pos + 1].kind == ElemKind::End ? f.parent : frame(f.pos + 1, 0, f.parent);
    for (uint32_t a = g_.rule_alts[e.value]; a < g_.rule_alts[e.value + 1]; ++a) {
      work.push_back(frame(g_.alt_starts[a], 0, next));
    }
  }
  pruned_ += cut;
}

int32_t StateStore::intern(std::vector<int32_t>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.empty()) return kDead;
  if (stacks.size() > kMaxStacks) stacks.resize(kMaxStacks), ++pruned_;  // 0, the finished parse, sorts first
  key_.assign(reinterpret_cast<const char*>(stacks.data()), stacks.size() * sizeof(int32_t));
  if (auto it = set_ids_.find(key_); it != set_ids_.end()) return it->second;
  auto id = static_cast<int32_t>(sets_.size());
  set_ids_.emplace(key_, id);
  can_end_.push_back(stacks.front() == 0);
  sets_.push_back(stacks);
  trans_.resize(sets_.size() * 256, kUnknown);
  return id;
}

int32_t StateStore::compute(int32_t state, uint8_t byte) {
  std::vector<int32_t>& work = work_;
  std::vector<int32_t>& out = out_;
  work.clear(), out.clear();
  for (int32_t id : sets_[static_cast<size_t>(state)]) {
    if (id == 0) continue;  // the finished parse takes no more input
    Frame f = frames_[static_cast<size_t>(id)];
    const Elem& e = g_.elems[f.pos];
    if (e.kind == ElemKind::Byte) {
      if (e.value == byte) work.push_back(frame(f.pos + 1, 0, f.parent));
    } else {
      uint32_t u = g_.charsets[e.value].step(f.utf8, byte);
      if (u == CharSet::kReject) continue;
      if (u == 0) work.push_back(frame(f.pos + 1, 0, f.parent));
      else out.push_back(frame(f.pos, u, f.parent));  // mid code point: still on this element
    }
  }
  close(work, out);
  return intern(out);
}

int32_t StateStore::import_frame(const StateStore& other, int32_t f, std::unordered_map<int32_t, int32_t>& memo) {
  // Parents first, iteratively: stacks can be as deep as the text is nested.
  std::vector<int32_t> chain;
  for (int32_t x = f; x != 0 && !memo.count(x); x = other.frames_[static_cast<size_t>(x)].parent) chain.push_back(x);
  memo[0] = 0;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Frame& of = other.frames_[static_cast<size_t>(*it)];
    Frame nf{of.pos, of.utf8, memo.at(of.parent)};
    auto [slot, added] = frame_ids_.try_emplace(nf, static_cast<int32_t>(frames_.size()));
    if (added) frames_.push_back(nf);
    memo[*it] = slot->second;
  }
  return memo.at(f);
}

int32_t StateStore::import(const StateStore& other, int32_t state) {
  if (state < 0) return kDead;
  std::unordered_map<int32_t, int32_t> memo;
  std::vector<int32_t> stacks;
  for (int32_t id : other.sets_[static_cast<size_t>(state)]) stacks.push_back(import_frame(other, id, memo));
  return intern(stacks);
}

}  // namespace anelm::grammar
