// KV cache allocation (zeroed once) and explicit deep copy.
#include "engine/kv_cache.h"

#include <unistd.h>

#include <new>

#include "engine/error.h"

namespace anelm::engine {

namespace {

int64_t recurrent_state_floats(const ModelConfig& cfg) {
  const int64_t per_layer = cfg.deltanet.conv_state_floats() + cfg.deltanet.delta_state_floats();
  return static_cast<int64_t>(cfg.n_layers - cfg.n_attention_layers()) * per_layer;
}

// Rows per kv head of `layer`'s block: ctx, or 2R for a ring (KvCache's layout).
int64_t layer_rows(const ModelConfig& cfg, int layer, int ctx, int max_batch) {
  const int r = kv_ring_positions(cfg, layer, ctx, max_batch);
  return r > 0 ? 2 * static_cast<int64_t>(r) : ctx;
}

}  // namespace

int kv_ring_positions(const ModelConfig& cfg, int layer, int ctx, int max_batch) {
  const int w = cfg.window(layer);
  if (w <= 0 || max_batch <= 0 || cfg.mixer(layer) != Mixer::kAttention) return 0;
  const int64_t r = static_cast<int64_t>(w) + max_batch - 1;
  return 2 * r < ctx ? static_cast<int>(r) : 0;
}

int64_t check_kv_fits(const ModelConfig& cfg, int ctx, DType dtype, int n, int max_batch) {
  const int64_t row_bytes = static_cast<int64_t>(cfg.head_dim) * (dtype == DType::kF16 ? 2 : 4);
  // K and V: 2 x n x n_kv_heads x (rows of every attention layer: ctx, or a ring's 2R) x row_bytes,
  // with every product checked, plus the recurrent layers' state (bounded by validate()).
  const int kv_layers = cfg.n_attention_layers();
  int64_t rows = 0;
  for (int l = 0; l < cfg.n_layers; ++l) {
    if (cfg.mixer(l) == Mixer::kAttention) rows += layer_rows(cfg, l, ctx, max_batch);
  }
  const int64_t rec = recurrent_state_floats(cfg) * 4;
  int64_t one = 0, all = 0;
  const bool overflow = kv_layers < 0 || cfg.n_kv_heads < 0 || row_bytes < 0 || n < 1 || ctx < 0 ||
                        __builtin_mul_overflow(rows, static_cast<int64_t>(cfg.n_kv_heads), &one) ||
                        __builtin_mul_overflow(one, row_bytes, &one) || __builtin_mul_overflow(one, 2, &one) || __builtin_add_overflow(one, rec, &one) ||
                        __builtin_mul_overflow(one, static_cast<int64_t>(n), &all);
  const std::string what = "not enough memory for the KV cache: ";
  const std::string for_ctx = std::string(" for ") + (n > 1 ? "--parallel " + std::to_string(n) + " x " : "") +
                              "--ctx " + std::to_string(ctx) + " (" + std::to_string(kv_layers) + " layers x " +
                              std::to_string(cfg.n_kv_heads) + " kv heads x head_dim " + std::to_string(cfg.head_dim) +
                              " x " + dtype_name(dtype) + ", K and V)";
  if (overflow) throw Error(ErrorKind::kResourceExhausted, what + "more than 2^63 bytes" + for_ctx);
  // The cache is zeroed, so all of it becomes resident: more than the machine's RAM cannot work,
  // and on Linux's default overcommit such an allocation may succeed and be killed later instead.
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const int64_t ram = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
  if (ram > 0 && all > ram) {
    throw Error(ErrorKind::kResourceExhausted, what + std::to_string(all) + " bytes" + for_ctx +
                                                   "; this machine has " + std::to_string(ram) + " bytes of RAM");
  }
  return one;
}

KvCache::KvCache(const ModelConfig& cfg, int ctx, DType dtype, int max_batch)
    : ctx_(ctx), n_kv_heads_(cfg.n_kv_heads), dtype_(dtype) {
  if (dtype != DType::kF32 && dtype != DType::kF16) {
    throw Error(ErrorKind::kUnsupported, std::string("KV cache dtype must be f32 or f16, got ") + dtype_name(dtype));
  }
  if (ctx <= 0) throw Error(ErrorKind::kInvalidArgument, "KV cache ctx must be > 0, got " + std::to_string(ctx));
  row_bytes_ = static_cast<int64_t>(cfg.head_dim) * (dtype == DType::kF16 ? 2 : 4);
  const int64_t rec = recurrent_state_floats(cfg);
  const int64_t both = check_kv_fits(cfg, ctx, dtype, 1, max_batch) - rec * 4;
  const auto n_layers = static_cast<size_t>(cfg.n_layers);
  slot_.assign(n_layers, -1);
  rec_off_.assign(n_layers, -1);
  ring_.assign(n_layers, 0);
  window_.assign(n_layers, 0);
  rows_.assign(n_layers, 0);
  off_.assign(n_layers, 0);
  conv_floats_ = cfg.deltanet.conv_state_floats();
  int kv = 0;
  int64_t off = 0, kv_off = 0;
  for (int l = 0; l < cfg.n_layers; ++l) {
    const auto i = static_cast<size_t>(l);
    if (cfg.mixer(l) == Mixer::kAttention) {
      slot_[i] = kv++;
      ring_[i] = kv_ring_positions(cfg, l, ctx, max_batch);
      window_[i] = cfg.window(l);
      rows_[i] = layer_rows(cfg, l, ctx, max_batch);
      off_[i] = kv_off;
      kv_off += rows_[i] * n_kv_heads_ * row_bytes_;
    } else {
      rec_off_[static_cast<size_t>(l)] = off;
      off += conv_floats_ + cfg.deltanet.delta_state_floats();
    }
  }
  try {
    k_.assign(static_cast<size_t>(both / 2), 0);
    v_.assign(static_cast<size_t>(both / 2), 0);
    rec_.assign(static_cast<size_t>(rec), 0.0f);
  } catch (const std::bad_alloc&) {
    k_ = {};
    v_ = {};
    throw Error(ErrorKind::kResourceExhausted, "not enough memory for the KV cache: " + std::to_string(both) +
                                                   " bytes for --ctx " + std::to_string(ctx));
  }
}

bool KvCache::can_resume(int prefix, int held) const {
  for (size_t l = 0; l < ring_.size(); ++l) {
    if (!ring_holds_window(prefix, held, ring_[l], window_[l])) return false;
  }
  return true;
}

KvCache KvCache::copy() const {
  KvCache c;
  c.ctx_ = ctx_;
  c.n_kv_heads_ = n_kv_heads_;
  c.row_bytes_ = row_bytes_;
  c.dtype_ = dtype_;
  c.k_ = k_;
  c.v_ = v_;
  c.slot_ = slot_;
  c.ring_ = ring_;
  c.window_ = window_;
  c.rows_ = rows_;
  c.off_ = off_;
  c.rec_off_ = rec_off_;
  c.conv_floats_ = conv_floats_;
  c.rec_ = rec_;
  c.rec_pos_ = rec_pos_;
  return c;
}

}  // namespace anelm::engine
