// KV cache allocation (zeroed once) and explicit deep copy.
#include "engine/kv_cache.h"

#include <unistd.h>

#include <new>

#include "engine/error.h"

namespace anelm::engine {

KvCache::KvCache(const ModelConfig& cfg, int ctx, DType dtype)
    : ctx_(ctx), n_kv_heads_(cfg.n_kv_heads), dtype_(dtype) {
  if (dtype != DType::kF32 && dtype != DType::kF16) {
    throw Error(ErrorKind::kUnsupported, std::string("KV cache dtype must be f32 or f16, got ") + dtype_name(dtype));
  }
  if (ctx <= 0) throw Error(ErrorKind::kInvalidArgument, "KV cache ctx must be > 0, got " + std::to_string(ctx));
  row_bytes_ = static_cast<int64_t>(cfg.head_dim) * (dtype == DType::kF16 ? 2 : 4);
  // K and V: 2 x n_layers x n_kv_heads x ctx x row_bytes, with every product checked.
  int64_t total = 0, both = 0;
  const bool overflow = cfg.n_layers < 0 || n_kv_heads_ < 0 || row_bytes_ < 0 ||
                        __builtin_mul_overflow(static_cast<int64_t>(cfg.n_layers), n_kv_heads_, &total) ||
                        __builtin_mul_overflow(total, static_cast<int64_t>(ctx_), &total) ||
                        __builtin_mul_overflow(total, row_bytes_, &total) || __builtin_mul_overflow(total, 2, &both);
  const std::string what = "not enough memory for the KV cache: ";
  const std::string for_ctx = " for --ctx " + std::to_string(ctx) + " (" + std::to_string(cfg.n_layers) +
                              " layers x " + std::to_string(n_kv_heads_) + " kv heads x head_dim " +
                              std::to_string(cfg.head_dim) + " x " + dtype_name(dtype) + ", K and V)";
  if (overflow) throw Error(ErrorKind::kResourceExhausted, what + "more than 2^63 bytes" + for_ctx);
  // The cache is zeroed, so all of it becomes resident: more than the machine's RAM cannot work,
  // and on Linux's default overcommit such an allocation may succeed and be killed later instead.
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const int64_t ram = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
  if (ram > 0 && both > ram) {
    throw Error(ErrorKind::kResourceExhausted, what + std::to_string(both) + " bytes" + for_ctx +
                                                   "; this machine has " + std::to_string(ram) + " bytes of RAM");
  }
  try {
    k_.assign(static_cast<size_t>(total), 0);
    v_.assign(static_cast<size_t>(total), 0);
  } catch (const std::bad_alloc&) {
    k_ = {};
    v_ = {};
    throw Error(ErrorKind::kResourceExhausted, what + std::to_string(both) + " bytes" + for_ctx);
  }
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
