// CPU decoder layer: RMSNorm -> the layer's token mixer + residual -> RMSNorm -> fused gate/up ->
// SiLU*up -> down + residual (Granite: the residual branches and layer 0's input scaled; Gemma 3:
// GELU*up, and each branch RMSNormed before its residual add; GPT-2: LayerNorms with biases and
// up + bias -> GELU -> down + bias); and the fused row-parallel linear every CPU matmul goes through.
#include "engine/cpu_executor.h"

#include <algorithm>
#include <cmath>

#include "engine/activations.h"
#include "engine/kv_cache.h"

namespace anelm::engine {

namespace {

// Row granularity of a thread's share (16 floats = one cache line of each output row block).
constexpr int64_t kRowGrain = 16;
// Up to this many tokens a matmul streams its weights once at memory speed (decode, few-token
// batches): its shares taper (ThreadPool::parallel_for).
constexpr int kTaperTokens = 8;

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
    // take one: their per-call packing of every token was 7% of a 2048-token prefill. A few
    // tokens' shares taper: two shares each leave a thread idle for the length of the other's
    // speed difference; a prefill keeps whole shares (its tiles pack per call).
    pool.parallel_for(total_rows, run, kRowGrain, all_bf16 ? 1 : 2, /*taper=*/n <= kTaperTokens);
  }
}

CpuExecutor::CpuExecutor(const ModelConfig& cfg, const ModelWeights& weights, ThreadPool& pool,
                         const kernels::KernelTable& kernels, int64_t inline_macs)
    : cfg_(cfg), w_(weights), pool_(pool), k_(kernels), inline_macs_(inline_macs),
      attention_(CpuContext{cfg, weights, pool, kernels, inline_macs}),
      deltanet_(CpuContext{cfg, weights, pool, kernels, inline_macs}) {
  for (int l = 0; l < cfg.n_layers; ++l) {
    mixers_.push_back(cfg.mixer(l) == Mixer::kDeltaNet ? static_cast<CpuMixer*>(&deltanet_) : &attention_);
  }
}

void CpuExecutor::run_layer(const LayerBatch& b) {
  const LayerWeights& L = w_.layers[static_cast<size_t>(b.layer)];
  Activations& a = *b.acts;
  const int d = cfg_.d_model, d_ff = cfg_.d_ff;
  int n = b.n;
  const auto* attn_norm = static_cast<const float*>(L.attn_norm.data);
  const auto* ffn_norm = static_cast<const float*>(L.ffn_norm.data);

  // Granite scales the token embeddings before the first layer (the CPU runs every layer of a
  // model with multipliers: the ANE programs have none).
  if (b.layer == 0 && cfg_.embedding_scale != 1.0f) scale_rows(b.x, n, d, cfg_.embedding_scale);

  // ---- token mixer: x += mixer(norm(x)) (attention or Gated DeltaNet, per the layer's kind);
  // post-LN (BERT): x = norm(x + mixer(x)), and the FFN reads that x
  const bool post_ln = cfg_.norm_after_residual;
  if (post_ln) {
    std::copy_n(b.x, static_cast<int64_t>(n) * d, a.xb.data());
  } else {
    norm_rows(attn_norm, L.attn_norm_b, b.x, n, a.xb.data());
  }
  mixers_[static_cast<size_t>(b.layer)]->mix(b);
  post_norm(L.attn_post_norm, a.proj.data(), n);
  add_residual(b.x, a.proj.data(), n, d);
  // The last layer of a pass that only samples: the FFN runs for the rows the LM head reads.
  if (b.select_rows) {
    move_rows_to_front(b.x, d, b.out_rows);
    n = static_cast<int>(b.out_rows.size());
    if (n == 0) return;
  }
  if (post_ln) {
    norm_rows(attn_norm, L.attn_norm_b, b.x, n, b.x);
    std::copy_n(b.x, static_cast<int64_t>(n) * d, a.xb.data());
  }

  // ---- feed-forward block: x += w_down . (silu(w_gate . norm(x)) * (w_up . norm(x)))
  if (!post_ln) norm_rows(ffn_norm, L.ffn_norm_b, b.x, n, a.xb.data());
  if (!cfg_.gated_ffn) {
    ffn_ungated(L, a, n);
  } else {
    const LinearOut gate_up[] = {{&L.w_gate, a.gate.data()}, {&L.w_up, a.up.data()}};
    parallel_linear(pool_, k_, a.xb.data(), n, d, gate_up, a.xq.data(), a.xk.data(), inline_macs_);
    for_tokens(pool_, n, [&](int t0, int t1) {
      const int64_t at = static_cast<int64_t>(t0) * d_ff;
      const auto act = cfg_.ffn_act == FfnAct::kGeluTanh ? k_.gelu_mul : k_.silu_mul;
      act(a.gate.data() + at, a.up.data() + at, (t1 - t0) * d_ff, a.gate.data() + at);
    });
  }
  const LinearOut down[] = {{&L.w_down, a.proj.data()}};
  parallel_linear(pool_, k_, a.gate.data(), n, d_ff, down, a.xq.data(), a.xk.data(), inline_macs_);
  add_bias_rows(pool_, k_, L.b_down, a.proj.data(), n, d);
  post_norm(L.ffn_post_norm, a.proj.data(), n);
  add_residual(b.x, a.proj.data(), n, d);
  if (post_ln) norm_rows(ffn_norm, L.ffn_norm_b, b.x, n, b.x);
}

// A layer norm of rows x [n][d_model] into out (may alias x): RMSNorm, or LayerNorm with its bias (GPT-2, BERT).
void CpuExecutor::norm_rows(const float* w, const TensorView& bias, const float* x, int n, float* out) {
  const int d = cfg_.d_model;
  const auto* b = static_cast<const float*>(bias.data);
  for_tokens(pool_, n, [&](int t0, int t1) {
    for (int64_t t = t0; t < t1; ++t) {
      if (cfg_.layer_norm) {
        k_.layer_norm(x + t * d, w, b, cfg_.rms_eps, d, out + t * d);
      } else {
        k_.rmsnorm(x + t * d, w, cfg_.rms_eps, d, out + t * d);
      }
    }
  });
}

// GPT-2's FFN up to the down projection: gate rows = gelu(w_up . xb + b_up) (a.gate is the buffer
// the down projection reads).
void CpuExecutor::ffn_ungated(const LayerWeights& L, Activations& a, int n) {
  const int d_ff = cfg_.d_ff;
  const LinearOut up[] = {{&L.w_up, a.gate.data()}};
  parallel_linear(pool_, k_, a.xb.data(), n, cfg_.d_model, up, a.xq.data(), a.xk.data(), inline_macs_);
  const auto* bias = static_cast<const float*>(L.b_up.data);
  for_tokens(pool_, n, [&](int t0, int t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* row = a.gate.data() + t * d_ff;
      if (bias) k_.add(row, bias, d_ff, row);
      k_.gelu(row, d_ff, row);
    }
  });
}

// Gemma 3: RMSNorm of a branch's output rows [n][d_model] in place; nothing without the weight.
void CpuExecutor::post_norm(const TensorView& w, float* out, int n) {
  if (w.empty()) return;
  const auto* weight = static_cast<const float*>(w.data);
  const int d = cfg_.d_model;
  for_tokens(pool_, n, [&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) k_.rmsnorm(out + static_cast<int64_t>(t) * d, weight, cfg_.rms_eps, d, out + static_cast<int64_t>(t) * d);
  });
}

void CpuExecutor::scale_rows(float* x, int n, int d, float s) {
  for_tokens(pool_, n, [&](int t0, int t1) {
    for (int64_t i = static_cast<int64_t>(t0) * d; i < static_cast<int64_t>(t1) * d; ++i) x[i] *= s;
  });
}

// x += residual_scale * out (Granite's residual multiplier; 1 for every other family).
void CpuExecutor::add_residual(float* x, float* out, int n, int d) {
  if (cfg_.residual_scale != 1.0f) scale_rows(out, n, d, cfg_.residual_scale);
  k_.add(x, out, n * d, x);
}

}  // namespace anelm::engine
