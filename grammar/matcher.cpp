// The per-request matcher: token checks, the vocabulary mask and advancing the state.
#include <algorithm>

#include "grammar/grammar.h"
#include "grammar/state_store.h"
#include "grammar/vocab_trie.h"

namespace anelm::grammar {
namespace {
// Past this size the transition memo is rebuilt from the current state alone, so a long
// generation cannot grow it without bound.
constexpr size_t kStoreLimit = 4u << 20;
}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> g, std::shared_ptr<const Vocab> v)
    : grammar_(std::move(g)), vocab_(std::move(v)) {
  if (!grammar_ || !vocab_) throw Error("Matcher needs a grammar and a vocabulary");
  store_ = std::make_shared<StateStore>(*grammar_);
  state_ = store_->initial();
}

int32_t Matcher::walk(std::string_view bytes) const {
  int32_t s = state_;
  for (char c : bytes) {
    if (s < 0) break;
    s = store_->step(s, static_cast<uint8_t>(c));
  }
  return s;
}

bool Matcher::allows(int token) const {
  if (token < 0 || token >= vocab_->size() || state_ < 0) return false;
  switch (vocab_->kind_[static_cast<size_t>(token)]) {
    case Vocab::kEog: return can_end();
    case Vocab::kText: return walk(vocab_->bytes_[static_cast<size_t>(token)]) >= 0;
    default: return false;
  }
}

int Matcher::fill_mask(std::span<uint8_t> allowed) const {
  if (allowed.size() < static_cast<size_t>(vocab_->size())) throw Error("fill_mask: span smaller than the vocabulary");
  std::fill(allowed.begin(), allowed.end(), uint8_t{0});
  if (state_ < 0) return 0;
  StateStore& store = *store_;
  const size_t n_tok = vocab_->kind_.size();
  if (const std::vector<uint64_t>* bits = store.cached_mask(state_)) {
    int count = 0;
    for (size_t w = 0; w < bits->size(); ++w) {
      for (uint64_t word = (*bits)[w]; word; word &= word - 1) {
        allowed[w * 64 + static_cast<size_t>(__builtin_ctzll(word))] = 1;
        ++count;
      }
    }
    return count;
  }
  const VocabTrie& t = *vocab_->trie_;
  int count = 0;
  // states[d] = grammar state after the first d bytes of the current trie path.
  std::vector<int32_t> states(static_cast<size_t>(t.max_depth) + 1);
  states[0] = state_;
  const uint32_t n = static_cast<uint32_t>(t.byte.size());
  for (uint32_t i = 1; i < n;) {
    const uint16_t d = t.depth[i];
    const int32_t s = store.step(states[d - 1], t.byte[i]);
    if (s < 0) {
      i = t.skip[i];  // every token below starts with a refused prefix
      continue;
    }
    states[d] = s;
    for (uint32_t k = t.tok_begin[i]; k < t.tok_begin[i + 1]; ++k) {
      allowed[static_cast<size_t>(t.tokens[k])] = 1;
      ++count;
    }
    ++i;
  }
  if (can_end()) {
    for (size_t id = 0; id < n_tok; ++id) {
      if (vocab_->kind_[id] == Vocab::kEog) allowed[id] = 1, ++count;
    }
  }
  // The walk may have grown the store's tables but never changes state_'s meaning: cache it.
  std::vector<uint64_t>& bits = store.new_mask(state_, n_tok);
  for (size_t id = 0; id < n_tok; ++id)
    if (allowed[id]) bits[id / 64] |= uint64_t{1} << (id % 64);
  return count;
}

void Matcher::maybe_compact() {
  if (store_->size() <= kStoreLimit) return;
  // A fresh memo for this matcher only: copies may still hold ids into the old one.
  auto fresh = std::make_shared<StateStore>(*grammar_);
  state_ = fresh->import(*store_, state_);
  store_ = std::move(fresh);
}

bool Matcher::accept_token(int token) {
  if (!allows(token)) return false;
  if (vocab_->kind_[static_cast<size_t>(token)] == Vocab::kEog) return true;  // the text is complete
  return accept_bytes(vocab_->bytes_[static_cast<size_t>(token)]);
}

bool Matcher::accept_bytes(std::string_view bytes) {
  int32_t s = walk(bytes);
  if (s < 0) return false;
  state_ = s;
  maybe_compact();
  return true;
}

bool Matcher::can_end() const { return state_ >= 0 && store_->can_end(state_); }

bool Matcher::done() const { return state_ >= 0 && store_->done(state_); }

}  // namespace anelm::grammar
