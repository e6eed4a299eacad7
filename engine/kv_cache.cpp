// KV cache allocation (zeroed once) and explicit deep copy.
#include "engine/kv_cache.h"

#include "engine/error.h"

namespace anelm::engine {

KvCache::KvCache(const ModelConfig& cfg, int ctx, DType dtype)
    : ctx_(ctx), n_kv_heads_(cfg.n_kv_heads), dtype_(dtype) {
  if (dtype != DType::kF32 && dtype != DType::kF16) {
    throw Error(ErrorKind::kUnsupported, std::string("KV cache dtype must be f32 or f16, got ") + dtype_name(dtype));
  }
  if (ctx <= 0) throw Error(ErrorKind::kInvalidArgument, "KV cache ctx must be > 0, got " + std::to_string(ctx));
  row_bytes_ = static_cast<int64_t>(cfg.head_dim) * (dtype == DType::kF16 ? 2 : 4);
  const auto total = static_cast<size_t>(static_cast<int64_t>(cfg.n_layers) * n_kv_heads_ * ctx_ * row_bytes_);
  k_.assign(total, 0);
  v_.assign(total, 0);
}

KvCache KvCache::copy() const {
  KvCache c;
  c.ctx_ = ctx_;
  c.n_kv_heads_ = n_kv_heads_;
  c.row_bytes_ = row_bytes_;
  c.dtype_ = dtype_;
  c.k_ = k_;
  c.v_ = v_;
  return c;
}

}  // namespace anelm::engine
