// Per-sequence key/value cache for every layer, F16 (as llama.cpp) or F32 storage.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model_config.h"
#include "engine/tensor.h"

namespace anelm::engine {

// Bytes of one cache of ctx positions (K and V). Throws Error(kResourceExhausted) naming the sizes
// (--parallel, --ctx, layers, heads) when `n` such caches overflow or exceed the machine's RAM: they
// are zeroed at construction, so all of it becomes resident. Called before anything is allocated.
int64_t check_kv_fits(const ModelConfig& cfg, int ctx, DType dtype, int n);

// Layout (one buffer each for K and V): [n_layers][n_kv_heads][ctx][head_dim] elements of dtype().
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
  int64_t bytes() const { return static_cast<int64_t>(k_.size() + v_.size()); }

  // [ctx][head_dim] block of `layer`, kv head `kv_head`.
  void* k(int layer, int kv_head) { return k_.data() + offset(layer, kv_head); }
  void* v(int layer, int kv_head) { return v_.data() + offset(layer, kv_head); }
  const void* k(int layer, int kv_head) const { return k_.data() + offset(layer, kv_head); }
  const void* v(int layer, int kv_head) const { return v_.data() + offset(layer, kv_head); }
  // Bytes of one position's head_dim vector.
  int64_t row_bytes() const { return row_bytes_; }

 private:
  KvCache() = default;
  int64_t offset(int layer, int kv_head) const {
    return (static_cast<int64_t>(layer) * n_kv_heads_ + kv_head) * ctx_ * row_bytes_;
  }

  int ctx_ = 0;
  int n_kv_heads_ = 0;
  int64_t row_bytes_ = 0;
  DType dtype_ = DType::kF16;
  std::vector<uint8_t> k_, v_;
};

}  // namespace anelm::engine
