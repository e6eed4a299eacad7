// Deliberately naive scalar kernels: the oracle every fast kernel, the transformer and the ANE path are
// checked against. Never optimise this file; clarity over speed (double accumulators where it helps).
#pragma once

#include <cstdint>

#include "engine/kernels/dtype.h"
#include "engine/kernels/kernels.h"

namespace anelm::engine::kernels::ref {

// One weight element W[r][c] of a row-major [rows][cols] tensor of type t, as f32.
float weight_at(const void* w, DType t, int64_t cols, int64_t r, int64_t c);

// Embedding lookup: out[cols] = W[row][:] dequantised.
void dequantize_row(const void* w, DType t, int64_t row, int64_t cols, float* __restrict out);

// y[i][r] = sum_c W[r][c] * x[i][c]; W [rows][cols] of type t, x [n][cols], y [n][rows].
void matmul(const void* w, DType t, int64_t rows, int64_t cols, const float* x, int n,
            float* __restrict y);

// Q8 activation quantisation (cols % 32 == 0): q = round-half-even(x * 127 / amax), d = f16(amax / 127).
void quantize_q8(const float* x, int64_t n, QBlock8* __restrict out);
void dequantize_q8(const QBlock8* q, int64_t n, float* __restrict out);

// Q8_K activation quantisation (n % 256 == 0), as llama.cpp's quantize_row_q8_K_ref: see QBlockK.
void quantize_q8k(const float* x, int64_t n, QBlockK* __restrict out);
void dequantize_q8k(const QBlockK* q, int64_t n, float* __restrict out);

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]; out may alias x.
void rmsnorm(const float* x, const float* w, float eps, int n, float* out);

// Rotates the first rope_dim dims of each of n_heads heads ([n_heads][head_dim], in place) for
// position pos: pair i uses angle pos * theta^(-2i/rope_dim) / freq_factors[i] (freq_factors: null,
// or rope_dim/2 divisors: Llama-3's rope scaling, GGUF rope_freqs). Pairs per RopeLayout.
void rope(float* x, int n_heads, int head_dim, int rope_dim, int pos, float theta, RopeLayout layout,
          const float* freq_factors = nullptr);

// In-place softmax over x[0..n).
void softmax(float* x, int n);

// max(x) + log(sum(exp(x - max(x)))), accumulated in double.
float log_sum_exp(const float* x, int n);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
void silu_mul(const float* gate, const float* up, int n, float* out);

// out[i] = gelu(gate[i]) * up[i] with the tanh approximation (GeGLU: Gemma's
// gelu_pytorch_tanh, ggml's gelu): gelu(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))).
void gelu_mul(const float* gate, const float* up, int n, float* out);

// out[i] = gelu(x[i]), the same tanh approximation (GPT-2's FFN activation, ggml_gelu's formula).
void gelu(const float* x, int n, float* out);

// LayerNorm: out[i] = (x[i] - mean) / sqrt(var + eps) * w[i] + b[i], var = mean((x - mean)^2)
// (ggml_norm, then the weight and the bias); double accumulators. out may alias x.
void layer_norm(const float* x, const float* w, const float* b, float eps, int n, float* out);

// out[i] = a[i] + b[i]; out may alias a.
void add(const float* a, const float* b, int n, float* out);

// Causal attention of one query over cached positions [0, n_pos) with grouped-query heads.
// q [n_heads][head_dim]; k, v [n_pos][n_kv_heads][head_dim] f32; out [n_heads][head_dim];
// query head h reads kv head h / (n_heads / n_kv_heads); scores scaled by 1/sqrt(head_dim).
void attention(const float* q, const float* k, const float* v, int n_pos, int n_heads,
               int n_kv_heads, int head_dim, float* __restrict out);

// One head, same contract as KernelTable::attend_head: k, v [n_pos][head_dim] of type kv (F32/F16);
// scores [n_pos] scratch; out [head_dim] = softmax(q.k * scale) . v.
void attend_head(const float* q, const void* k, const void* v, DType kv, int n_pos, int head_dim,
                 float scale, float* __restrict scores, float* __restrict out);

// Same contract as KernelTable::attend_causal: every (token t, head h) row is attend_head over
// positions [0, pos0 + t] of the group's K/V (window > 0: the last `window` of them; two-pass
// softmax, double accumulators).
void attend_causal(const AttentionArgs& a);

// KernelTable::delta_rule, step by step as the spec writes it (decay, predict, correct, write,
// read), with double accumulators.
void delta_rule(const DeltaRuleArgs& a);

// KernelTable::conv_silu: the window of each token gathered explicitly from state and inputs.
void conv_silu(const ConvArgs& a);

}  // namespace anelm::engine::kernels::ref
