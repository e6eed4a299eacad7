// CPU decoder layer: RMSNorm -> fused QKV (+bias) -> RoPE -> KV store -> causal GQA attention ->
// output projection + residual -> RMSNorm -> fused gate/up -> SiLU*up -> down + residual.
#include "engine/cpu_executor.h"

#include <algorithm>
#include <cmath>

#include "engine/activations.h"
#include "engine/kv_cache.h"

namespace anelm::engine {

namespace {

// Row granularity of a thread's share (16 floats = one cache line of each output row block).
constexpr int64_t kRowGrain = 16;

// Token count from which per-token elementwise work (norms, activation quantisation, SiLU, RoPE and
// KV stores) is split across the pool: a prefill batch of 128 tokens spent ~15% of its time in these
// loops on one thread while the others waited. Decode stays inline.
constexpr int kParallelTokens = 16;

// fn(t0, t1) over token ranges covering [0, n): on the pool for a prefill batch, inline otherwise.
template <typename Fn>
void for_tokens(ThreadPool& pool, int n, Fn&& fn) {
  if (n < kParallelTokens) {
    fn(0, n);
    return;
  }
  pool.parallel_for(n, [&](int64_t b, int64_t e, int) { fn(static_cast<int>(b), static_cast<int>(e)); }, 4, 2);
}

// Qwen3: RMSNorm over each of `rows` heads of head_dim values, in place (a no-op without the weight).
void head_norm(const TensorView& w, float* x, int rows, const ModelConfig& cfg, const kernels::KernelTable& k) {
  if (w.empty()) return;
  const auto* weight = static_cast<const float*>(w.data);
  for (int r = 0; r < rows; ++r) {
    float* h = x + static_cast<int64_t>(r) * cfg.head_dim;
    k.rmsnorm(h, weight, cfg.rms_eps, cfg.head_dim, h);
  }
}

void add_bias(const TensorView& b, float* y, int n, int dim, const kernels::KernelTable& k) {
  if (b.empty()) return;
  const auto* bias = static_cast<const float*>(b.data);
  for (int t = 0; t < n; ++t) k.add(y + static_cast<int64_t>(t) * dim, bias, dim, y + static_cast<int64_t>(t) * dim);
}

}  // namespace

void parallel_linear(ThreadPool& pool, const kernels::KernelTable& k, const float* in, int n,
                     int64_t cols, std::span<const LinearOut> outs, QBlock8* xq, QBlockK* xk,
                     int64_t inline_macs) {
  int64_t total_rows = 0;
  bool q8 = false, q8k = false;  // a mix (llama.cpp's Q4_K_M) may need both forms
  bool all_bf16 = true;          // every matrix on the bf16 tiles, which read only the float rows
  for (const LinearOut& o : outs) {
    total_rows += o.w->rows();
    const int bf16_from = k.bf16_min_tokens[dtype_index(o.w->dtype)];
    const bool bf16 = bf16_from > 0 && n >= bf16_from;
    all_bf16 = all_bf16 && bf16;
    q8 = q8 || (uses_q8_activations(o.w->dtype) && !bf16);
    q8k = q8k || (uses_q8k_activations(o.w->dtype) && !bf16);
  }
  for_tokens(pool, n, [&](int t0, int t1) {
    const int64_t at = static_cast<int64_t>(t0) * cols, count = static_cast<int64_t>(t1 - t0) * cols;
    if (q8) k.quantize_q8(in + at, count, xq + at / kQBlock);
    if (q8k) k.quantize_q8k(in + at, count, xk + at / kQKBlock);
  });
  auto run = [&](int64_t begin, int64_t end, int) {
    int64_t offset = 0;
    for (const LinearOut& o : outs) {
      const int64_t rows = o.w->rows();
      const int64_t r0 = begin > offset ? begin - offset : 0;
      const int64_t r1 = end - offset < rows ? end - offset : rows;
      if (r0 < r1) {
        const void* xa = uses_q8k_activations(o.w->dtype) ? static_cast<const void*>(xk) : xq;
        k.matmul[dtype_index(o.w->dtype)](o.w->data, cols, in, xa, n, o.y, rows, r0, r1);
      }
      offset += rows;
    }
  };
  if (total_rows * cols * n < inline_macs) {
    run(0, total_rows, 0);
  } else {
    // Two shares per thread: each share's first rows wait on memory before its prefetches run
    // ahead (a decode step of Qwen2.5-0.5B Q8_0, 2 threads: 8 shares 19.9 ms, 2 shares 19.4, 4
    // sequences 23.2 -> 22.2 ms), and a prefill batch's kernels set up per call (the AMX path packs
    // every token's activations: with 8 shares that setup was a fifth of the work). The bf16 tiles
    // take one: their per-call packing of every token was 7% of a 2048-token prefill.
    pool.parallel_for(total_rows, run, kRowGrain, all_bf16 ? 1 : 2);
  }
}

CpuExecutor::CpuExecutor(const ModelConfig& cfg, const ModelWeights& weights, ThreadPool& pool,
                         const kernels::KernelTable& kernels, int64_t inline_macs)
    : cfg_(cfg), w_(weights), pool_(pool), k_(kernels), inline_macs_(inline_macs) {}

void CpuExecutor::run_layer(const LayerBatch& b) {
  const LayerWeights& L = w_.layers[static_cast<size_t>(b.layer)];
  Activations& a = *b.acts;
  const int n = b.n, d = cfg_.d_model, q_dim = cfg_.q_dim(), kv_dim = cfg_.kv_dim(), d_ff = cfg_.d_ff;
  const auto* attn_norm = static_cast<const float*>(L.attn_norm.data);
  const auto* ffn_norm = static_cast<const float*>(L.ffn_norm.data);

  // ---- attention block: x += wo . attention(rope(wq . norm(x)), rope(wk . norm(x)), wv . norm(x))
  for_tokens(pool_, n, [&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) k_.rmsnorm(b.x + t * d, attn_norm, cfg_.rms_eps, d, a.xb.data() + t * d);
  });
  const LinearOut qkv[] = {{&L.wq, a.q.data()}, {&L.wk, a.k.data()}, {&L.wv, a.v.data()}};
  parallel_linear(pool_, k_, a.xb.data(), n, d, qkv, a.xq.data(), a.xk.data(), inline_macs_);
  add_bias(L.bq, a.q.data(), n, q_dim, k_);
  add_bias(L.bk, a.k.data(), n, kv_dim, k_);
  add_bias(L.bv, a.v.data(), n, kv_dim, k_);
  head_norm(L.q_norm, a.q.data(), n * cfg_.n_heads, cfg_, k_);
  head_norm(L.k_norm, a.k.data(), n * cfg_.n_kv_heads, cfg_, k_);
  attention(b);
  const LinearOut o[] = {{&L.wo, a.proj.data()}};
  parallel_linear(pool_, k_, a.att.data(), n, q_dim, o, a.xq.data(), a.xk.data(), inline_macs_);
  k_.add(b.x, a.proj.data(), n * d, b.x);

  // ---- feed-forward block: x += w_down . (silu(w_gate . norm(x)) * (w_up . norm(x)))
  for_tokens(pool_, n, [&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) k_.rmsnorm(b.x + t * d, ffn_norm, cfg_.rms_eps, d, a.xb.data() + t * d);
  });
  const LinearOut gate_up[] = {{&L.w_gate, a.gate.data()}, {&L.w_up, a.up.data()}};
  parallel_linear(pool_, k_, a.xb.data(), n, d, gate_up, a.xq.data(), a.xk.data(), inline_macs_);
  for_tokens(pool_, n, [&](int t0, int t1) {
    const int64_t at = static_cast<int64_t>(t0) * d_ff;
    k_.silu_mul(a.gate.data() + at, a.up.data() + at, (t1 - t0) * d_ff, a.gate.data() + at);
  });
  const LinearOut down[] = {{&L.w_down, a.proj.data()}};
  parallel_linear(pool_, k_, a.gate.data(), n, d_ff, down, a.xq.data(), a.xk.data(), inline_macs_);
  k_.add(b.x, a.proj.data(), n * d, b.x);
}

// RoPE on q/k and K/V stores for every row at its sequence's position, then blocked causal attention
// (attend_causal) over units of (sequence, query block, kv head): each unit reads its head's K/V
// once for all the group's heads.
void CpuExecutor::attention(const LayerBatch& b) {
  Activations& a = *b.acts;
  const int hd = cfg_.head_dim, q_dim = cfg_.q_dim(), kv_dim = cfg_.kv_dim();
  const int n_heads = cfg_.n_heads, n_kv = cfg_.n_kv_heads, group = cfg_.group_size();
  for_tokens(pool_, b.n, [&](int t0, int t1) {
    for_rows(b.seqs, t0, t1, [&](int t, const SeqRows& s) {
      const int pos = s.pos + t - s.row;
      KvCache& kv = *s.kv;
      float* q = a.q.data() + static_cast<int64_t>(t) * q_dim;
      float* kr = a.k.data() + static_cast<int64_t>(t) * kv_dim;
      const float* vr = a.v.data() + static_cast<int64_t>(t) * kv_dim;
      const float* cs = a.rope_cs(t, pos);
      k_.rope(q, n_heads, hd, cfg_.rope_dim, cfg_.rope_layout, cs);
      k_.rope(kr, n_kv, hd, cfg_.rope_dim, cfg_.rope_layout, cs);
      const int64_t at = static_cast<int64_t>(s.kv_base + pos) * kv.row_bytes();
      for (int h = 0; h < n_kv; ++h) {
        k_.store_kv(kr + h * hd, kv.dtype(), hd, static_cast<uint8_t*>(kv.k(b.layer, h)) + at);
        k_.store_kv(vr + h * hd, kv.dtype(), hd, static_cast<uint8_t*>(kv.v(b.layer, h)) + at);
      }
    });
  });
  // A query block fills one kernel pass (kAttentionMaxRows token x head rows): fewer tokens would
  // re-read K/V for half-empty passes, more would not share the reads (passes run one by one).
  const int block = std::max(1, static_cast<int>(kernels::kAttentionMaxRows) / group);
  auto blocks = [&](const SeqRows& s) { return (s.n + block - 1) / block; };
  int64_t units = 0, work = 0;
  for (const SeqRows& s : b.seqs) {
    units += static_cast<int64_t>(blocks(s)) * n_kv;
    work += static_cast<int64_t>(s.n) * n_heads * (s.pos + s.n) * hd;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
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
      const int64_t base = static_cast<int64_t>(s.kv_base) * s.kv->row_bytes();
      args.k = static_cast<const uint8_t*>(s.kv->k(b.layer, h)) + base;
      args.v = static_cast<const uint8_t*>(s.kv->v(b.layer, h)) + base;
      args.kv = s.kv->dtype();
      args.n_q = std::min(block, s.n - t0);
      args.pos0 = s.pos + t0;
      args.group = group;
      args.head_dim = hd;
      args.scale = scale;
      k_.attend_causal(args, scratch);
    }
  };
  if (work < inline_macs_) {
    run(0, units, 0);
  } else {
    pool_.parallel_for(units, run);
  }
}

}  // namespace anelm::engine
