// Prompt cache across requests: KV snapshots of finished sequences, keyed by their token ids, kept
// least-recently-used first within a byte budget (--cache-ram). Any later prompt that starts with a
// stored prefix copies those rows into the active KvCache instead of recomputing them.
//
// Models with recurrent layers (Qwen3.5's DeltaNet) cannot cut a state back to a shorter prefix, so
// there an entry is a checkpoint: its K/V rows plus the recurrent state after exactly its tokens,
// usable only by a prompt that starts with all of them. The generator takes checkpoints every
// kCheckpointEvery tokens of a sequence (see generator.h); shorter checkpoints are not superseded by
// longer ones.
//
// Sliding-window layers with a ring (KvCache) keep only their last R positions, and so does an entry
// of them: it serves a prefix only when it still holds the window before that prefix's end
// (ring_holds_window), i.e. a prompt that leaves the entry at most R - window + 1 tokens before its end.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <vector>

#include "engine/kv_cache.h"

namespace anelm::engine {

// Not thread-safe: owned by the Generator, driven by the one engine thread.
//
// Why an LRU of snapshots and not a radix tree: entries are few (a budget of 256 MB holds ~21,000
// tokens of Qwen2.5-0.5B KV in f16) and a lookup is one linear scan comparing token ids, which is
// microseconds against the milliseconds a single prefill token costs. Shared prefixes are stored
// once per entry; an entry that is a prefix of a newer one is dropped when the newer one is stored.
class PromptCache {
 public:
  struct Stats {
    int64_t budget_bytes = 0;
    int64_t bytes = 0;     // sum of entry_bytes() over the entries held; never above the budget
    int entries = 0;
    int64_t hits = 0;      // requests that took their prefix from an entry (restore() calls)
    int64_t stores = 0;    // snapshots taken
    int64_t evictions = 0;  // entries dropped to make room (superseded ones not counted)
  };
  struct Entry;
  struct Hit {
    const Entry* entry = nullptr;  // for restore(); valid until the next store()
    int tokens = 0;                // length of the common prefix of the prompt and that entry
  };

  PromptCache(const KvCache& layout, int n_layers, int n_kv_heads, int64_t budget_bytes);

  bool enabled() const { return stats_.budget_bytes > 0; }
  const Stats& stats() const { return stats_; }
  // Bytes an entry of `n_tokens` would take: K and V rows of every attention layer and kv head (a
  // ring's last ones only), the recurrent state (if any), plus the ids.
  int64_t entry_bytes(int n_tokens) const;

  // The entry sharing the longest prefix with `prompt` that can serve it (marks it most recently
  // used); tokens 0 when none does. Recurrent: the longest entry that `prompt` starts with entirely.
  Hit lookup(std::span<const int> prompt);
  // Whether the hit's entry can serve the prefix [0, to), to <= hit.tokens (rings: the window before
  // `to` is still in the entry; recurrent: to == hit.tokens).
  bool serves(const Hit& hit, int to) const;

  // Copies positions [from, to) of the hit's entry into `kv` (which must have this cache's layout):
  // n_layers x n_kv_heads memcpys of (to - from) rows for K and for V. Requires serves(hit, to).
  // Rows below `from` are left alone: the caller passes the prefix its active KV already holds. A
  // ring gets the window before `to`, whatever `from`. Recurrent: the entry's state replaces kv's.
  void restore(const Hit& hit, int from, int to, KvCache& kv);

  // Snapshots positions [0, tokens.size()) of `kv`, whose rows must hold exactly those ids.
  // Skipped (returns false) when disabled, when the entry alone exceeds the budget, or when a
  // stored entry already starts with `tokens`. Evicts least-recently-used entries to fit, and drops
  // entries that are a prefix of `tokens` (the new one serves them too).
  bool store(std::span<const int> tokens, const KvCache& kv);

  struct Entry {
    std::vector<int> tokens;
    // [attention layers][n_kv_heads][rows][row_bytes]: positions [n - rows, n) of n = tokens.size(),
    // rows = n, or for a ring min(n, R)
    std::vector<uint8_t> k, v;
    std::vector<float> state;   // recurrent layers' state after the tokens (empty without them)
  };

 private:
  using List = std::list<Entry>;  // front: most recently used
  void erase(List::iterator it);
  bool serves(int prefix, int entry_tokens) const;
  int rows(size_t i, int n_tokens) const {  // rows an entry of n_tokens keeps of kv layer i
    return rings_[i] > 0 && rings_[i] < n_tokens ? rings_[i] : n_tokens;
  }

  std::vector<int> kv_layers_;  // the layers with K/V
  std::vector<int> rings_, windows_;  // per kv layer: ring positions (0: none) and window
  int n_kv_heads_;
  int64_t row_bytes_;
  int64_t state_floats_;        // 0: no recurrent layers
  List lru_;
  Stats stats_;
};

}  // namespace anelm::engine
