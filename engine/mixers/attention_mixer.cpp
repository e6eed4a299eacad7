// Attention mixer: fused Q/K/V projection -> (bias) -> (Q/K head norm) -> RoPE (not on NoPE layers)
// + KV store -> causal GQA attention -> (sigmoid output gate) -> output projection into acts.proj.
#include "engine/mixers/attention_mixer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/activations.h"
#include "engine/cpu_executor.h"
#include "engine/kv_cache.h"

namespace anelm::engine {

namespace {

// Attention work (multiply-adds) from which its units go to the pool. Lower than a matmul's
// inline_macs: a unit is a whole head over the cached positions, so even a decode step's heads
// split evenly, and a hand-off costs ~1 us. GPT-2 124M Q8_0 decode at 128-192 positions (12 heads,
// 98-147K multiply-adds per layer, inline before): 323-333 -> 332-348 tok/s (Zen 5, 2026-12-02); no
// change at 8-72 positions.
constexpr int64_t kAttentionInlineMacs = 16 * 1024;

// Qwen3: RMSNorm over each of `rows` heads of head_dim values, in place (a no-op without the weight).
void head_norm(const TensorView& w, float* x, int rows, const ModelConfig& cfg, const kernels::KernelTable& k) {
  if (w.empty()) return;
  const auto* weight = static_cast<const float*>(w.data);
  for (int r = 0; r < rows; ++r) {
    float* h = x + static_cast<int64_t>(r) * cfg.head_dim;
    k.rmsnorm(h, weight, cfg.rms_eps, cfg.head_dim, h);
  }
}

}  // namespace

void AttentionMixer::mix(const LayerBatch& b) {
  const ModelConfig& cfg = c_.cfg;
  const LayerWeights& L = c_.w.layers[static_cast<size_t>(b.layer)];
  Activations& a = *b.acts;
  const int n = b.n, d = cfg.d_model, q_dim = cfg.q_dim(), kv_dim = cfg.kv_dim(), hd = cfg.head_dim;
  // Gated attention (Qwen3.5) projects [query | gate] per head: the queries are gathered into a.q
  // and the gates stay in a.q_gate for after the attention.
  float* q_out = cfg.attn_output_gate ? a.q_gate.data() : a.q.data();
  const LinearOut qkv[] = {{&L.wq, q_out}, {&L.wk, a.k.data()}, {&L.wv, a.v.data()}};
  parallel_linear(c_.pool, c_.k, a.xb.data(), n, d, qkv, a.xq.data(), a.xk.data(), c_.inline_macs);
  if (cfg.attn_output_gate) {
    for (int t = 0; t < n; ++t) {
      for (int h = 0; h < cfg.n_heads; ++h) {
        std::memcpy(a.q.data() + static_cast<int64_t>(t) * q_dim + h * hd,
                    a.q_gate.data() + (static_cast<int64_t>(t) * cfg.n_heads + h) * 2 * hd, sizeof(float) * static_cast<size_t>(hd));
      }
    }
  }
  add_bias_rows(c_.pool, c_.k, L.bq, a.q.data(), n, q_dim);
  add_bias_rows(c_.pool, c_.k, L.bk, a.k.data(), n, kv_dim);
  add_bias_rows(c_.pool, c_.k, L.bv, a.v.data(), n, kv_dim);
  head_norm(L.q_norm, a.q.data(), n * cfg.n_heads, cfg, c_.k);
  head_norm(L.k_norm, a.k.data(), n * cfg.n_kv_heads, cfg, c_.k);
  attend(b);
  if (cfg.attn_output_gate) {
    for_tokens(c_.pool, n, [&](int t0, int t1) {
      for (int t = t0; t < t1; ++t) {
        for (int h = 0; h < cfg.n_heads; ++h) {
          float* o = a.att.data() + static_cast<int64_t>(t) * q_dim + h * hd;
          const float* g = a.q_gate.data() + (static_cast<int64_t>(t) * cfg.n_heads + h) * 2 * hd + hd;
          for (int i = 0; i < hd; ++i) o[i] = o[i] / (1.0f + std::exp(-g[i]));
        }
      }
    });
  }
  const LinearOut o[] = {{&L.wo, a.proj.data()}};
  parallel_linear(c_.pool, c_.k, a.att.data(), n, q_dim, o, a.xq.data(), a.xk.data(), c_.inline_macs);
  add_bias_rows(c_.pool, c_.k, L.bo, a.proj.data(), n, d);  // GPT-2
}

// RoPE on q/k and K/V stores for every row at its sequence's position, then blocked causal attention
// (attend_causal) over units of (sequence, query block, kv head): each unit reads its head's K/V
// once for all the group's heads. A bidirectional model's rows see their whole sequence, so every
// row of a sequence must be in the batch (the embedder runs an encoder's input in one pass).
void AttentionMixer::attend(const LayerBatch& b) {
  const ModelConfig& cfg_ = c_.cfg;
  const kernels::KernelTable& k_ = c_.k;
  ThreadPool& pool_ = c_.pool;
  Activations& a = *b.acts;
  const int hd = cfg_.head_dim, q_dim = cfg_.q_dim(), kv_dim = cfg_.kv_dim();
  const int n_heads = cfg_.n_heads, n_kv = cfg_.n_kv_heads, group = cfg_.group_size();
  const bool rope = cfg_.rope(b.layer);
  for_tokens(pool_, b.n, [&](int t0, int t1) {
    for_rows(b.seqs, t0, t1, [&](int t, const SeqRows& s) {
      const int pos = s.pos + t - s.row;
      KvCache& kv = *s.kv;
      float* q = a.q.data() + static_cast<int64_t>(t) * q_dim;
      float* kr = a.k.data() + static_cast<int64_t>(t) * kv_dim;
      const float* vr = a.v.data() + static_cast<int64_t>(t) * kv_dim;
      if (rope) {  // NoPE layers (SmolLM3's every 4th) attend without positions
        const float* cs = a.rope_cs(t, pos, cfg_.swa(b.layer));
        k_.rope(q, n_heads, hd, cfg_.rope_dim, cfg_.rope_layout, cs);
        k_.rope(kr, n_kv, hd, cfg_.rope_dim, cfg_.rope_layout, cs);
      }
      // A ring (a windowed layer, KvCache) keeps each position twice, R rows apart. Rings are
      // never packed (kv_base 0: the embedder's caches have none).
      const int ring = kv.ring(b.layer);
      for (int64_t row = kv.row(b.layer, s.kv_base + pos), copies = ring > 0 ? 2 : 1; copies-- > 0; row += ring) {
        const int64_t at = row * kv.row_bytes();
        for (int h = 0; h < n_kv; ++h) {
          k_.store_kv(kr + h * hd, kv.dtype(), hd, static_cast<uint8_t*>(kv.k(b.layer, h)) + at);
          k_.store_kv(vr + h * hd, kv.dtype(), hd, static_cast<uint8_t*>(kv.v(b.layer, h)) + at);
        }
      }
    });
  });
  // A query block fills one kernel pass (kAttentionMaxRows token x head rows): fewer tokens would
  // re-read K/V for half-empty passes, more would not share the reads (passes run one by one).
  // Bidirectional attention (BERT) takes one token per unit: it attends every position of its
  // input, which the causal kernel computes for the input's last position.
  const bool causal = cfg_.causal;
  const int block = causal ? std::max(1, static_cast<int>(kernels::kAttentionMaxRows) / group) : 1;
  auto blocks = [&](const SeqRows& s) { return (s.n + block - 1) / block; };
  int64_t units = 0, work = 0;
  for (const SeqRows& s : b.seqs) {
    units += static_cast<int64_t>(blocks(s)) * n_kv;
    work += static_cast<int64_t>(s.n) * n_heads * (s.pos + s.n) * hd;
  }
  const float scale = cfg_.attn_scale();  // 1/sqrt(head_dim), or Granite's attention multiplier
  auto run = [&](int64_t begin, int64_t end, int thread) {
    float* scratch = a.attn_scratch.data() + thread * a.attn_scratch_floats;
    size_t si = 0;
    int64_t first = 0;  // first unit of b.seqs[si]
    for (int64_t u = begin; u < end; ++u) {
      while (u >= first + static_cast<int64_t>(blocks(b.seqs[si])) * n_kv) first += blocks(b.seqs[si++]) * n_kv;
      const SeqRows& s = b.seqs[si];
      // Last query blocks first: they attend over the most positions, so the tail of the dynamic
      // schedule holds the short units and the threads finish together.
      const int qb = blocks(s) - 1 - static_cast<int>((u - first) / n_kv), h = static_cast<int>((u - first) % n_kv);
      const int t0 = qb * block;
      const int64_t off = static_cast<int64_t>(s.row + t0) * q_dim + static_cast<int64_t>(h) * group * hd;
      kernels::AttentionArgs args;
      args.q = a.q.data() + off;
      args.out = a.att.data() + off;
      args.ld = q_dim;
      args.n_q = std::min(block, s.n - t0);
      args.pos0 = causal ? s.pos + t0 : s.pos + s.n - 1;
      args.window = cfg_.window(b.layer);  // Gemma 3's local layers
      // A ring's rows from the first query's window on are the positions in order (KvCache).
      if (s.kv->ring(b.layer) > 0) args.kv_first = std::max(0, args.pos0 - args.window + 1);
      const int64_t base = (s.kv->ring(b.layer) > 0 ? s.kv->row(b.layer, args.kv_first) : s.kv_base) * s.kv->row_bytes();
      args.k = static_cast<const uint8_t*>(s.kv->k(b.layer, h)) + base;
      args.v = static_cast<const uint8_t*>(s.kv->v(b.layer, h)) + base;
      args.kv = s.kv->dtype();
      args.group = group;
      args.head_dim = hd;
      args.scale = scale;
      k_.attend_causal(args, scratch);
    }
  };
  if (work < std::min(c_.inline_macs, kAttentionInlineMacs)) {
    run(0, units, 0);
  } else {
    pool_.parallel_for(units, run);
  }
}

}  // namespace anelm::engine
