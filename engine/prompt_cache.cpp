// Prompt cache: LRU list of compact KV snapshots; lookup by longest common token prefix.
#include "engine/prompt_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace anelm::engine {

namespace {

int common_prefix(std::span<const int> a, std::span<const int> b) {
  const auto m = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<int>(m.first - a.begin());
}

}  // namespace

PromptCache::PromptCache(const KvCache& layout, int n_layers, int n_kv_heads, int64_t budget_bytes)
    : n_kv_heads_(n_kv_heads), row_bytes_(layout.row_bytes()),
      state_floats_(static_cast<int64_t>(layout.recurrent_state().size())) {
  for (int l = 0; l < n_layers; ++l) {
    if (layout.has_kv(l)) kv_layers_.push_back(l);
  }
  stats_.budget_bytes = std::max<int64_t>(0, budget_bytes);
}

int64_t PromptCache::entry_bytes(int n_tokens) const {
  const int64_t rows = static_cast<int64_t>(kv_layers_.size()) * n_kv_heads_ * n_tokens;
  return 2 * rows * row_bytes_ + static_cast<int64_t>(n_tokens) * static_cast<int64_t>(sizeof(int)) +
         state_floats_ * static_cast<int64_t>(sizeof(float));
}

PromptCache::Hit PromptCache::lookup(std::span<const int> prompt) {
  Hit best;
  List::iterator best_it = lru_.end();
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    const int n = common_prefix(it->tokens, prompt);
    // A checkpoint's state is after all of its tokens: only a prompt holding all of them can use it.
    if (state_floats_ > 0 && n != static_cast<int>(it->tokens.size())) continue;
    if (n > best.tokens) {
      best.tokens = n;
      best_it = it;
    }
  }
  if (best_it == lru_.end()) return {};
  lru_.splice(lru_.begin(), lru_, best_it);  // most recently used; iterators stay valid
  best.entry = &*best_it;
  return best;
}

void PromptCache::restore(const Hit& hit, int from, int to, KvCache& kv) {
  if (!hit.entry) return;
  stats_.hits++;
  const Entry& e = *hit.entry;
  if (state_floats_ > 0) {
    std::copy(e.state.begin(), e.state.end(), kv.recurrent_state().begin());
    kv.set_recurrent_pos(to);
  }
  if (from >= to) return;
  const int64_t n = static_cast<int64_t>(e.tokens.size());
  const size_t bytes = static_cast<size_t>((to - from) * row_bytes_);
  for (size_t i = 0; i < kv_layers_.size(); ++i) {
    const int l = kv_layers_[i];
    for (int h = 0; h < n_kv_heads_; ++h) {
      const int64_t src = ((static_cast<int64_t>(i) * n_kv_heads_ + h) * n + from) * row_bytes_;
      const int64_t dst = static_cast<int64_t>(from) * row_bytes_;
      std::memcpy(static_cast<uint8_t*>(kv.k(l, h)) + dst, e.k.data() + src, bytes);
      std::memcpy(static_cast<uint8_t*>(kv.v(l, h)) + dst, e.v.data() + src, bytes);
    }
  }
}

void PromptCache::erase(List::iterator it) {
  stats_.bytes -= entry_bytes(static_cast<int>(it->tokens.size()));
  lru_.erase(it);
  stats_.entries = static_cast<int>(lru_.size());
}

bool PromptCache::store(std::span<const int> tokens, const KvCache& kv) {
  const int n = static_cast<int>(tokens.size());
  const int64_t need = entry_bytes(n);
  if (!enabled() || n == 0 || need > stats_.budget_bytes) return false;
  if (state_floats_ > 0 && kv.recurrent_pos() != n) return false;  // the state is not after these tokens
  for (auto it = lru_.begin(); it != lru_.end();) {
    const int common = common_prefix(it->tokens, tokens);
    const int held = static_cast<int>(it->tokens.size());
    // Already held (as this entry or, without recurrent state, a longer one): just refresh it.
    if (common == n && (state_floats_ == 0 || held == n)) {
      lru_.splice(lru_.begin(), lru_, it);
      return false;
    }
    auto next = std::next(it);
    // Superseded by the new entry (a checkpoint never is: it serves prompts the longer one cannot).
    if (common == held && state_floats_ == 0) erase(it);
    it = next;
  }
  while (stats_.bytes + need > stats_.budget_bytes) {
    erase(std::prev(lru_.end()));
    stats_.evictions++;
  }
  // One allocation per stored sequence (never per token); its size is bounded by the budget.
  Entry e;
  const size_t per_head = static_cast<size_t>(n * row_bytes_);
  try {
    e.tokens.assign(tokens.begin(), tokens.end());
    e.k.resize(kv_layers_.size() * static_cast<size_t>(n_kv_heads_) * per_head);
    e.v.resize(e.k.size());
    e.state.assign(kv.recurrent_state().begin(), kv.recurrent_state().end());
  } catch (const std::bad_alloc&) {
    return false;  // the cache is an optimisation: skip the entry rather than fail the request
  }
  for (size_t i = 0; i < kv_layers_.size(); ++i) {
    const int l = kv_layers_[i];
    for (int h = 0; h < n_kv_heads_; ++h) {
      const size_t dst = (i * static_cast<size_t>(n_kv_heads_) + static_cast<size_t>(h)) * per_head;
      std::memcpy(e.k.data() + dst, kv.k(l, h), per_head);
      std::memcpy(e.v.data() + dst, kv.v(l, h), per_head);
    }
  }
  lru_.push_front(std::move(e));
  stats_.bytes += need;
  stats_.entries = static_cast<int>(lru_.size());
  stats_.stores++;
  return true;
}

}  // namespace anelm::engine
