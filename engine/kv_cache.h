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
int64_t check_kv_fits(const ModelConfig& cfg, int ctx, DType dtype, int n);

// Layout (one buffer each for K and V): [attention layers][n_kv_heads][ctx][head_dim] elements of dtype().
// A query head attends over one contiguous [n_pos][head_dim] block, which is what
// KernelTable::attend_head and attend_causal read. Positions [0, n) are valid once a forward pass wrote them; the
// cache does not track n itself (the generator does). Not copyable: copy() is the explicit,
// expensive way.
class KvCache {
 public:
  KvCache(const ModelConfig& cfg, int ctx, DType dtype);  // dtype: kF32 or kF16
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
  // [ctx][head_dim] block of `layer` (an attention layer), kv head `kv_head`.
  void* k(int layer, int kv_head) { return k_.data() + offset(layer, kv_head); }
  void* v(int layer, int kv_head) { return v_.data() + offset(layer, kv_head); }
  const void* k(int layer, int kv_head) const { return k_.data() + offset(layer, kv_head); }
  const void* v(int layer, int kv_head) const { return v_.data() + offset(layer, kv_head); }
  // Bytes of one position's head_dim vector.
  int64_t row_bytes() const { return row_bytes_; }

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
    return (static_cast<int64_t>(slot_[static_cast<size_t>(layer)]) * n_kv_heads_ + kv_head) * ctx_ * row_bytes_;
  }

  std::vector<int> slot_;  // [n_layers] a layer's index among the attention layers, -1: recurrent
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
