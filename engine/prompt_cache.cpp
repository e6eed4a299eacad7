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
    if (!layout.has_kv(l)) continue;
    kv_layers_.push_back(l);
    rings_.push_back(layout.ring(l));
    windows_.push_back(layout.window(l));
  }
  stats_.budget_bytes = std::max<int64_t>(0, budget_bytes);
}

int64_t PromptCache::entry_bytes(int n_tokens) const {
  int64_t rows_all = 0;
  for (size_t i = 0; i < kv_layers_.size(); ++i) rows_all += rows(i, n_tokens);
  return 2 * rows_all * n_kv_heads_ * row_bytes_ + static_cast<int64_t>(n_tokens) * static_cast<int64_t>(sizeof(int)) +
         state_floats_ * static_cast<int64_t>(sizeof(float));
}

bool PromptCache::serves(int prefix, int entry_tokens) const {
  // A checkpoint's state is after all of its tokens: only a prompt holding all of them can use it.
  if (state_floats_ > 0 && prefix != entry_tokens) return false;
  for (size_t i = 0; i < rings_.size(); ++i) {
    if (!ring_holds_window(prefix, entry_tokens, rings_[i], windows_[i])) return false;
  }
  return true;
}

bool PromptCache::serves(const Hit& hit, int to) const {
  return hit.entry && to <= hit.tokens && serves(to, static_cast<int>(hit.entry->tokens.size()));
}

PromptCache::Hit PromptCache::lookup(std::span<const int> prompt) {
  Hit best;
  List::iterator best_it = lru_.end();
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    const int n = common_prefix(it->tokens, prompt);
    if (!serves(n, static_cast<int>(it->tokens.size()))) continue;
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
  const int n = static_cast<int>(e.tokens.size());
  int64_t layer_off = 0;  // bytes of one of K/V before kv layer i in the entry
  for (size_t i = 0; i < kv_layers_.size(); ++i) {
    const int l = kv_layers_[i], rows_i = rows(i, n), ring = rings_[i];
    // Positions [lo, to) of this layer; the entry holds [n - rows_i, n). A ring takes the window
    // before `to`, row by row (position p in rows p % R and p % R + R).
    const int lo = ring > 0 ? std::max(0, to - windows_[i] + 1) : from;
    for (int h = 0; h < n_kv_heads_ && lo < to; ++h) {
      const int64_t head = layer_off + static_cast<int64_t>(h) * rows_i * row_bytes_;
      auto copy = [&](int p0, int p1, int64_t row) {
        const int64_t src = head + static_cast<int64_t>(p0 - (n - rows_i)) * row_bytes_;
        const auto bytes = static_cast<size_t>((p1 - p0) * row_bytes_);
        std::memcpy(static_cast<uint8_t*>(kv.k(l, h)) + row * row_bytes_, e.k.data() + src, bytes);
        std::memcpy(static_cast<uint8_t*>(kv.v(l, h)) + row * row_bytes_, e.v.data() + src, bytes);
      };
      if (ring == 0) {
        copy(lo, to, lo);
        continue;
      }
      for (int p = lo; p < to; ++p) {
        copy(p, p + 1, kv.row(l, p));
        copy(p, p + 1, kv.row(l, p) + ring);
      }
    }
    layer_off += static_cast<int64_t>(n_kv_heads_) * rows_i * row_bytes_;
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
    // Already held (as this entry, or a longer one that serves it): just refresh it.
    if (common == n && serves(n, held)) {
      lru_.splice(lru_.begin(), lru_, it);
      return false;
    }
    auto next = std::next(it);
    // Superseded by the new entry when it serves every prefix the old one does (a checkpoint never
    // is, nor an entry a ring has moved past).
    if (common == held && serves(held, n)) erase(it);
    it = next;
  }
  while (stats_.bytes + need > stats_.budget_bytes) {
    erase(std::prev(lru_.end()));
    stats_.evictions++;
  }
  // One allocation per stored sequence (never per token); its size is bounded by the budget.
  Entry e;
  const int64_t state_bytes = state_floats_ * static_cast<int64_t>(sizeof(float));
  try {
    e.tokens.assign(tokens.begin(), tokens.end());
    e.k.resize(static_cast<size_t>((need - state_bytes - n * static_cast<int64_t>(sizeof(int))) / 2));
    e.v.resize(e.k.size());
    e.state.assign(kv.recurrent_state().begin(), kv.recurrent_state().end());
  } catch (const std::bad_alloc&) {
    return false;  // the cache is an optimisation: skip the entry rather than fail the request
  }
  size_t dst = 0;
  for (size_t i = 0; i < kv_layers_.size(); ++i) {
    const int l = kv_layers_[i], rows_i = rows(i, n);
    // Positions [n - rows_i, n): consecutive rows from row(n - rows_i) on (a ring's last R: the
    // doubled rows make them one run).
    const int64_t src = kv.row(l, n - rows_i) * row_bytes_;
    const auto per_head = static_cast<size_t>(rows_i * row_bytes_);
    for (int h = 0; h < n_kv_heads_; ++h, dst += per_head) {
      std::memcpy(e.k.data() + dst, static_cast<const uint8_t*>(kv.k(l, h)) + src, per_head);
      std::memcpy(e.v.data() + dst, static_cast<const uint8_t*>(kv.v(l, h)) + src, per_head);
    }
  }
  lru_.push_front(std::move(e));
  stats_.bytes += need;
  stats_.entries = static_cast<int>(lru_.size());
  stats_.stores++;
  return true;
}

}  // namespace anelm::engine
