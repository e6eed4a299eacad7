// Per-sequence state of every layer: the key/value cache of attention layers, F16 (as llama.cpp) or
// F32 storage, and the F32 recurrent state of DeltaNet layers (hybrid models such as Qwen3.5).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model_config.h"
#include "engine/tensor.h"

namespace anelm::engine {

// Bytes of one cache of ctx positions (K and V, plus any recurrent state). Throws Error(kResourceExhausted) naming the sizes
// (--parallel, --ctx, layers, heads) when `n` such caches overflow or exceed the machine's RAM: they
// are zeroed at construction, so all of it becomes resident. Called before anything is allocated.
// max_batch: as KvCache's (the sliding-window layers' rings).
int64_t check_kv_fits(const ModelConfig& cfg, int ctx, DType dtype, int n, int max_batch = 0);

// The ring of a sliding-window layer (Gemma 3's local layers), in positions: R = window + max_batch - 1
// holds a pass of up to max_batch tokens together with the window of its first token. 0 (a full
// cache of ctx positions) for other layers, without max_batch, or when its 2R rows are not fewer.
int kv_ring_positions(const ModelConfig& cfg, int layer, int ctx, int max_batch);

// Whether a ring of `ring` positions (0: a full cache) of a layer with that window, after positions
// [0, held) were written, still holds what a pass continuing at position `prefix` reads: positions
// from prefix - window + 1 on (the ring keeps [held - ring, held)).
inline bool ring_holds_window(int prefix, int held, int ring, int window) {
  return prefix <= 0 || ring <= 0 || prefix - window + 1 >= held - ring;
}

// Layout (one buffer each for K and V): per attention layer [n_kv_heads][rows][head_dim] elements of
// dtype(), rows = ctx (position p in row p), or for a ring of R positions rows = 2R: position p in
// rows p % R and p % R + R, so any R consecutive positions are R consecutive rows (a ring the
// kernels read as one block: AttentionArgs::kv_first). A query head attends over one contiguous
// [n_pos][head_dim] block, which is what KernelTable::attend_head and attend_causal read. Positions
// [0, n) are valid once a forward pass wrote them (a ring: the last R of them); the cache does not
// track n itself (the generator does). Not copyable: copy() is the explicit, expensive way.
class KvCache {
 public:
  // dtype: kF32 or kF16. max_batch > 0: the most tokens of this sequence one forward pass writes,
  // which lets sliding-window layers keep a ring (kv_ring_positions); 0: full caches only.
  KvCache(const ModelConfig& cfg, int ctx, DType dtype, int max_batch = 0);
  KvCache(KvCache&&) = default;
  KvCache& operator=(KvCache&&) = default;
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  KvCache copy() const;  // deep copy (e.g. to fork a sequence)

  int ctx() const { return ctx_; }
  DType dtype() const { return dtype_; }
  int64_t bytes() const { return static_cast<int64_t>(k_.size() + v_.size()) + recurrent_bytes(); }

  // Whether `layer` keeps K/V here (an attention layer) rather than a recurrent state.
  bool has_kv(int layer) const { return slot_[static_cast<size_t>(layer)] >= 0; }
  // [rows][head_dim] block of `layer` (an attention layer), kv head `kv_head`.
  void* k(int layer, int kv_head) { return k_.data() + offset(layer, kv_head); }
  void* v(int layer, int kv_head) { return v_.data() + offset(layer, kv_head); }
  const void* k(int layer, int kv_head) const { return k_.data() + offset(layer, kv_head); }
  const void* v(int layer, int kv_head) const { return v_.data() + offset(layer, kv_head); }
  // Bytes of one position's head_dim vector.
  int64_t row_bytes() const { return row_bytes_; }
  // The ring size of `layer` in positions (0: a full cache), and the first row holding `pos` (a ring
  // also holds it R rows later: a writer stores both).
  int ring(int layer) const { return ring_[static_cast<size_t>(layer)]; }
  int window(int layer) const { return window_[static_cast<size_t>(layer)]; }  // set for rings only
  int64_t row(int layer, int pos) const {
    const int r = ring(layer);
    return r > 0 ? pos % r : pos;
  }
  // Whether, holding positions [0, held), the cache can continue from the prefix [0, prefix) (the
  // next pass writing position prefix): a ring must still hold the window before it. Always for 0
  // and without rings.
  bool can_resume(int prefix, int held) const;

  // DeltaNet layers: [conv_kernel - 1][conv_dim] inputs (oldest first) and [n_v_heads][d_v][d_k]
  // delta-rule matrices (each head's S transposed, as llama.cpp), zero at a sequence's start.
  float* conv_state(int layer) { return rec_.data() + rec_off_[static_cast<size_t>(layer)]; }
  float* delta_state(int layer) { return conv_state(layer) + conv_floats_; }
  int64_t recurrent_bytes() const { return static_cast<int64_t>(rec_.size() * sizeof(float)); }
  // How many tokens the recurrent state has absorbed (it cannot be cut back to a shorter prefix); -1
  // while a pass is writing it or after one was abandoned. Always 0 without recurrent layers.
  int recurrent_pos() const { return rec_pos_; }
  void set_recurrent_pos(int pos) { rec_pos_ = rec_.empty() ? 0 : pos; }
  // The recurrent state: what a checkpoint saves and restores (empty without recurrent layers).
  std::span<float> recurrent_state() { return rec_; }
  std::span<const float> recurrent_state() const { return rec_; }

 private:
  KvCache() = default;
  int64_t offset(int layer, int kv_head) const {
    const auto l = static_cast<size_t>(layer);
    return off_[l] + static_cast<int64_t>(kv_head) * rows_[l] * row_bytes_;
  }

  std::vector<int> slot_;  // [n_layers] a layer's index among the attention layers, -1: recurrent
  std::vector<int> ring_;  // [n_layers] ring positions R of a windowed layer, 0: a full cache
  std::vector<int> window_;  // [n_layers] the layer's window (rings only)
  std::vector<int64_t> rows_;  // [n_layers] rows per kv head: ctx, or 2R
  std::vector<int64_t> off_;   // [n_layers] byte offset of the layer's block in k_ and v_
  std::vector<int64_t> rec_off_;  // [n_layers] offset of a recurrent layer's state in rec_
  int64_t conv_floats_ = 0;
  std::vector<float> rec_;
  int rec_pos_ = 0;
  int ctx_ = 0;
  int n_kv_heads_ = 0;
  int64_t row_bytes_ = 0;
  DType dtype_ = DType::kF16;
  std::vector<uint8_t> k_, v_;
};

}  // namespace anelm::engine
