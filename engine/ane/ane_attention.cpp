// CPU attention core of the ANE path (see ane_attention.h): RoPE -> KV store -> causal GQA
// attention.
#include "engine/ane/ane_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/activations.h"
#include "engine/kv_cache.h"

namespace anelm::engine {

namespace {

// Below this many multiply-adds of attention a pool wake-up costs more than it saves.
constexpr int64_t kInlineAttentionMacs = 128 * 1024;

// RoPE on row t's q [n_heads][hd] and k [n_kv][hd], then K/V rows stored at its position.
void rope_and_store(const ModelConfig& cfg, const kernels::KernelTable& k, const LayerBatch& b,
                    int t, const SeqRows& s) {
  Activations& a = *b.acts;
  KvCache& kv = *s.kv;
  const int pos = s.pos + t - s.row;
  const int hd = cfg.head_dim, q_dim = cfg.q_dim(), kv_dim = cfg.kv_dim();
  float* q = a.q.data() + static_cast<int64_t>(t) * q_dim;
  float* kr = a.k.data() + static_cast<int64_t>(t) * kv_dim;
  const float* vr = a.v.data() + static_cast<int64_t>(t) * kv_dim;
  const float* cs = a.rope_cs(t, pos);
  k.rope(q, cfg.n_heads, hd, cfg.rope_dim, cfg.rope_layout, cs);
  k.rope(kr, cfg.n_kv_heads, hd, cfg.rope_dim, cfg.rope_layout, cs);
  const int64_t at = static_cast<int64_t>(pos) * kv.row_bytes();
  for (int h = 0; h < cfg.n_kv_heads; ++h) {
    k.store_kv(kr + h * hd, kv.dtype(), hd, static_cast<uint8_t*>(kv.k(b.layer, h)) + at);
    k.store_kv(vr + h * hd, kv.dtype(), hd, static_cast<uint8_t*>(kv.v(b.layer, h)) + at);
  }
}

}  // namespace

void ane_attention_core(const ModelConfig& cfg, const kernels::KernelTable& k, ThreadPool& pool,
                        const LayerBatch& b) {
  Activations& a = *b.acts;
  const int n = b.n, hd = cfg.head_dim, q_dim = cfg.q_dim(), group = cfg.group_size();
  // All K/V of the batch first: token t reads positions [0, pos + t], written by tokens <= t.
  for_rows(b.seqs, 0, n, [&](int t, const SeqRows& s) { rope_and_store(cfg, k, b, t, s); });
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  auto run = [&](int64_t begin, int64_t end, int thread) {
    float* scores = a.scores.data() + static_cast<int64_t>(thread) * a.ctx;
    for (int64_t i = begin; i < end; ++i) {
      // Head-major order so each thread's contiguous share mixes short and long causal rows.
      const int h = static_cast<int>(i / n), t = static_cast<int>(i % n);
      const SeqRows* s = b.seqs.data();
      while (t >= s->row + s->n) ++s;
      const KvCache& kv = *s->kv;
      const int64_t off = static_cast<int64_t>(t) * q_dim + static_cast<int64_t>(h) * hd;
      k.attend_head(a.q.data() + off, kv.k(b.layer, h / group), kv.v(b.layer, h / group),
                    kv.dtype(), s->pos + t - s->row + 1, hd, scale, scores, a.att.data() + off);
    }
  };
  const int64_t items = static_cast<int64_t>(n) * cfg.n_heads;
  int max_pos = 0;
  for (const SeqRows& s : b.seqs) max_pos = std::max(max_pos, s.pos + s.n);
  if (items * max_pos * hd < kInlineAttentionMacs) {
    run(0, items, 0);
  } else {
    pool.parallel_for(items, run);
  }
}

void ane_qk_head_norms(const ModelConfig& cfg, const LayerWeights& L, const kernels::KernelTable& k,
                       const LayerBatch& b) {
  Activations& a = *b.acts;
  const int hd = cfg.head_dim;
  auto norm = [&](const TensorView& w, float* x, int rows) {
    if (w.empty()) return;
    const auto* weight = static_cast<const float*>(w.data);
    for (int r = 0; r < rows; ++r) {
      float* h = x + static_cast<int64_t>(r) * hd;
      k.rmsnorm(h, weight, cfg.rms_eps, hd, h);
    }
  };
  norm(L.q_norm, a.q.data(), b.n * cfg.n_heads);
  norm(L.k_norm, a.k.data(), b.n * cfg.n_kv_heads);
}

void ane_output_gate(const ModelConfig& cfg, const LayerBatch& b) {
  Activations& a = *b.acts;
  const int64_t m = static_cast<int64_t>(b.n) * cfg.q_dim();
  float* o = a.att.data();
  const float* g = a.q_gate.data();
  for (int64_t i = 0; i < m; ++i) o[i] = o[i] / (1.0f + std::exp(-g[i]));
}

}  // namespace anelm::engine
