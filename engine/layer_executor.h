// The coarse seam between the forward pass and a device: one virtual call runs one whole decoder
// layer for a batch of tokens (CPU kernels today, ANE programs later). No virtual calls below this.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace anelm::engine {

class KvCache;
struct Activations;

// Consecutive rows of a batch that belong to one sequence: its tokens at positions [pos, pos + n).
struct SeqRows {
  int row = 0;             // first row of the batch
  int n = 0;
  int pos = 0;             // position of the first of these tokens in its sequence
  KvCache* kv = nullptr;   // the sequence's K/V: written at [pos, pos + n), read at [0, pos + i]
  // First cache position of this sequence: several short sequences may share one cache (embedding
  // batches), each at its own base. Only the CPU executor honours it; others are given 0.
  int kv_base = 0;
};

// One decoder layer's work over a batch whose rows are tokens of one or more sequences (continuous
// batching: the decode rows of every running sequence plus a prefill chunk). The linears see all n
// rows at once; attention runs per sequence over its own cache.
struct LayerBatch {
  int layer = 0;
  int n = 0;                      // rows in the batch (<= acts->max_batch)
  float* x = nullptr;             // [n][d_model] residual stream, updated in place
  Activations* acts = nullptr;    // scratch (x above may point into acts->x)
  std::span<const SeqRows> seqs;  // in row order, covering rows [0, n) exactly
  // Set on a pass's last layer when the LM head is all that reads its output: only rows out_rows
  // (ascending, possibly none) are read after it. The executor leaves row out_rows[i]'s output at
  // row i of x and may skip the other rows' work after the token mixer (every row's K/V is written
  // all the same). llama.cpp's graphs drop those rows there too (inp_out_ids).
  bool select_rows = false;
  std::span<const int> out_rows;
};

// Moves rows out_rows (ascending) of x [][d] to rows [0, out_rows.size()), in place: row
// out_rows[i] >= i, so no row is overwritten before it is read.
inline void move_rows_to_front(float* x, std::int64_t d, std::span<const int> out_rows) {
  for (std::size_t i = 0; i < out_rows.size(); ++i) {
    const std::int64_t from = out_rows[i], to = static_cast<std::int64_t>(i);
    if (from != to) std::copy_n(x + from * d, d, x + to * d);
  }
}

// fn(row, seq) for every row of [r0, r1) with the sequence it belongs to.
template <typename Fn>
void for_rows(std::span<const SeqRows> seqs, int r0, int r1, Fn&& fn) {
  for (const SeqRows& s : seqs) {
    const int b = s.row > r0 ? s.row : r0, e = s.row + s.n < r1 ? s.row + s.n : r1;
    for (int t = b; t < e; ++t) fn(t, s);
  }
}

// Runs x += attention(rmsnorm(x)); x += swiglu_ffn(rmsnorm(x)) for one layer, causal over the cache.
// Implementations hold their own weights/programs; an executor that cannot run a layer leaves it to
// the CPU executor (the transformer keeps one per layer). Called from the engine's driver thread only.
class LayerExecutor {
 public:
  virtual ~LayerExecutor() = default;
  virtual const char* name() const = 0;
  virtual void run_layer(const LayerBatch& batch) = 0;
};

}  // namespace anelm::engine
