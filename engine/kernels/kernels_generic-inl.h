// Portable kernels written once and compiled into every ISA's file (the including TU's -m flags let the
// compiler vectorise the plain loops). Include inside a per-ISA anonymous namespace, after <cmath>,
// <cstdint>, <cstring>, <type_traits>, <vector>, fp16.h, quantize.h and kernels.h: each TU gets its own internal copy (no ODR clash between
// files built with different -m flags). No include guard on purpose.

// ---- elementwise --------------------------------------------------------------------------------

// Sum of a[i] * b[i] with 16 independent partial sums (vectorisable without -ffast-math).
inline float g_dot(const float* a, const float* b, int n) {
  float acc[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float s = 0.0f;
  for (int j = 0; j < 16; ++j) s += acc[j];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

inline float g_sum_squares(const float* x, int n) { return g_dot(x, x, n); }

void g_rmsnorm(const float* x, const float* w, float eps, int n, float* out) {
  const float scale = 1.0f / std::sqrt(g_sum_squares(x, n) / static_cast<float>(n) + eps);
  for (int i = 0; i < n; ++i) out[i] = x[i] * scale * w[i];
}

// (x - mean) / sqrt(var + eps) * w + b with var = mean((x - mean)^2), as ggml_norm then the weight
// and bias: two passes of 16 partial sums (vectorisable without -ffast-math).
void g_layer_norm(const float* x, const float* w, const float* b, float eps, int n, float* out) {
  float acc[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j) acc[j] += x[i + j];
  }
  float sum = 0.0f;
  for (int j = 0; j < 16; ++j) sum += acc[j];
  for (; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float sq[16] = {};
  for (i = 0; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j) sq[j] += (x[i + j] - mean) * (x[i + j] - mean);
  }
  float var = 0.0f;
  for (int j = 0; j < 16; ++j) var += sq[j];
  for (; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  const float scale = 1.0f / std::sqrt(var / static_cast<float>(n) + eps);
  for (i = 0; i < n; ++i) out[i] = (x[i] - mean) * scale * w[i] + b[i];
}

void g_rope(float* x, int n_heads, int head_dim, int rope_dim, RopeLayout layout, const float* cs) {
  const int half = rope_dim / 2;
  const bool neox = layout == RopeLayout::kHalf;
  for (int i = 0; i < half; ++i) {
    const float c = cs[i], s = cs[half + i];
    const int i0 = neox ? i : 2 * i;
    const int i1 = neox ? i + half : 2 * i + 1;
    for (int h = 0; h < n_heads; ++h) {
      float* xh = x + h * head_dim;
      const float a = xh[i0], b = xh[i1];
      xh[i0] = a * c - b * s;
      xh[i1] = a * s + b * c;
    }
  }
}

void g_softmax(float* x, int n) {
  float mx = x[0];
  for (int i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

float g_log_sum_exp(const float* x, int n) {
  float mx = x[0];
  for (int i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  float acc[8] = {};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += std::exp(x[i + j] - mx);
  }
  float sum = 0.0f;
  for (int j = 0; j < 8; ++j) sum += acc[j];
  for (; i < n; ++i) sum += std::exp(x[i] - mx);
  return mx + std::log(sum);
}

void g_silu_mul(const float* gate, const float* up, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// gelu_tanh(g) = 0.5 g (1 + tanh(u)) = g / (1 + exp(-2u)), u = sqrt(2/pi) (g + 0.044715 g^3):
// one exp, as the SIMD versions compute it.
void g_gelu_mul(const float* gate, const float* up, int n, float* out) {
  constexpr float kC = 0.7978845608028654f, kA = 0.044715f;
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-2.0f * kC * (g + kA * g * g * g))) * up[i];
  }
}

void g_gelu(const float* x, int n, float* out) {
  constexpr float kC = 0.7978845608028654f, kA = 0.044715f;
  for (int i = 0; i < n; ++i) {
    const float g = x[i];
    out[i] = g / (1.0f + std::exp(-2.0f * kC * (g + kA * g * g * g)));
  }
}

void g_add(const float* a, const float* b, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void g_store_kv(const float* src, DType kv, int n, void* __restrict dst) {
  if (kv == DType::kF16) {
    auto* d = static_cast<uint16_t*>(dst);
    for (int i = 0; i < n; ++i) d[i] = float_to_half(src[i]);
  } else {
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
  }
}

// Embedding lookup: once per token, so the one scalar row converter serves every ISA.
void g_dequantize_row(const void* w, DType t, int64_t row, int64_t cols, float* __restrict out) {
  row_to_f32(t, static_cast<const uint8_t*>(w) + row * dtype_row_bytes(t, cols), out, cols);
}

// Same float operations as ref::quantize_q8, so the result is bit-identical.
void g_quantize_q8(const float* x, int64_t n, QBlock8* __restrict out) {
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    float amax = 0.0f;
    for (int i = 0; i < kQBlock; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float id = amax >= kQ8MinAmax ? 1.0f / d : 0.0f;
    int32_t sum = 0;
    for (int i = 0; i < kQBlock; ++i) {
      const int q = static_cast<int>(std::nearbyint(xb[i] * id));
      out[b].qs[i] = static_cast<int8_t>(q);
      sum += q;
    }
    out[b].d = round_to_half(d);  // f16-rounded scale, as llama.cpp's Q8_0 activations
    out[b].sum = sum;
  }
}

// ---- attention ----------------------------------------------------------------------------------

inline float g_kv_at(const void* base, DType kv, int64_t i) {
  return kv == DType::kF16 ? half_to_float(static_cast<const uint16_t*>(base)[i])
                           : static_cast<const float*>(base)[i];
}

void g_attend_head(const float* q, const void* k, const void* v, DType kv, int n_pos, int head_dim,
                   float scale, float* __restrict scores, float* __restrict out) {
  for (int p = 0; p < n_pos; ++p) {
    float dot = 0.0f;
    for (int d = 0; d < head_dim; ++d) dot += q[d] * g_kv_at(k, kv, int64_t{p} * head_dim + d);
    scores[p] = dot * scale;
  }
  g_softmax(scores, n_pos);
  for (int d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int p = 0; p < n_pos; ++p) {
    const float s = scores[p];
    for (int d = 0; d < head_dim; ++d) out[d] += s * g_kv_at(v, kv, int64_t{p} * head_dim + d);
  }
}

#include "engine/kernels/attention_generic-inl.h"

// ---- matmul (portable: one row at a time, 8 partial sums per dot) --------------------------------

template <typename Load>
inline float g_dot(const float* x, int64_t n, Load load) {
  float acc[8] = {};
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += load(c + j) * x[c + j];
  }
  float s = 0.0f;
  for (int j = 0; j < 8; ++j) s += acc[j];
  for (; c < n; ++c) s += load(c) * x[c];
  return s;
}

void g_matmul_f32(const void* w, int64_t cols, const float* x, const void*, int n,
                  float* __restrict y, int64_t ldy, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* wr = static_cast<const float*>(w) + r * cols;
    for (int i = 0; i < n; ++i) y[i * ldy + r] = g_dot(x + i * cols, cols, [&](int64_t c) { return wr[c]; });
  }
}

void g_matmul_f16(const void* w, int64_t cols, const float* x, const void*, int n,
                  float* __restrict y, int64_t ldy, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* wr = static_cast<const uint16_t*>(w) + r * cols;
    for (int i = 0; i < n; ++i) {
      y[i * ldy + r] = g_dot(x + i * cols, cols, [&](int64_t c) { return half_to_float(wr[c]); });
    }
  }
}

void g_matmul_bf16(const void* w, int64_t cols, const float* x, const void*, int n,
                   float* __restrict y, int64_t ldy, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* wr = static_cast<const uint16_t*>(w) + r * cols;
    for (int i = 0; i < n; ++i) {
      y[i * ldy + r] = g_dot(x + i * cols, cols, [&](int64_t c) { return bf16_to_float(wr[c]); });
    }
  }
}

void g_matmul_q8_0(const void* w, int64_t cols, const float*, const void* xqv, int n,
                   float* __restrict y, int64_t ldy, int64_t r0, int64_t r1) {
  const auto* xq = static_cast<const QBlock8*>(xqv);
  const int64_t nb = cols / kQBlock;
  for (int64_t r = r0; r < r1; ++r) {
    const BlockQ8_0* wr = static_cast<const BlockQ8_0*>(w) + r * nb;
    for (int i = 0; i < n; ++i) {
      const QBlock8* xr = xq + i * nb;
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t isum = 0;
        for (int j = 0; j < kQBlock; ++j) isum += wr[b].qs[j] * xr[b].qs[j];
        acc += half_to_float(wr[b].d) * xr[b].d * static_cast<float>(isum);
      }
      y[i * ldy + r] = acc;
    }
  }
}

void g_matmul_q4_0(const void* w, int64_t cols, const float*, const void* xqv, int n,
                   float* __restrict y, int64_t ldy, int64_t r0, int64_t r1) {
  const auto* xq = static_cast<const QBlock8*>(xqv);
  const int64_t nb = cols / kQBlock;
  for (int64_t r = r0; r < r1; ++r) {
    const BlockQ4_0* wr = static_cast<const BlockQ4_0*>(w) + r * nb;
    for (int i = 0; i < n; ++i) {
      const QBlock8* xr = xq + i * nb;
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t isum = 0;
        for (int j = 0; j < 16; ++j) {
          isum += (wr[b].qs[j] & 0x0F) * xr[b].qs[j] + (wr[b].qs[j] >> 4) * xr[b].qs[j + 16];
        }
        isum -= 8 * xr[b].sum;
        acc += half_to_float(wr[b].d) * xr[b].d * static_cast<float>(isum);
      }
      y[i * ldy + r] = acc;
    }
  }
}

#include "engine/kernels/kernels_quant_generic-inl.h"

// Fills every slot with the portable versions; ISA files then override what they specialise.
#include "engine/kernels/deltanet_generic-inl.h"

KernelTable g_table(Isa isa) {
  KernelTable t;
  t.isa = isa;
  t.matmul[dtype_index(DType::kF32)] = g_matmul_f32;
  t.matmul[dtype_index(DType::kF16)] = g_matmul_f16;
  t.matmul[dtype_index(DType::kBF16)] = g_matmul_bf16;
  t.matmul[dtype_index(DType::kQ8_0)] = g_matmul_q8_0;
  t.matmul[dtype_index(DType::kQ4_0)] = g_matmul_q4_0;
  g_fill_block_types(t);
  t.quantize_q8 = g_quantize_q8;
  t.dequantize_row = g_dequantize_row;
  t.rmsnorm = g_rmsnorm;
  t.rope = g_rope;
  t.softmax = g_softmax;
  t.log_sum_exp = g_log_sum_exp;
  t.silu_mul = g_silu_mul;
  t.gelu_mul = g_gelu_mul;
  t.gelu = g_gelu;
  t.layer_norm = g_layer_norm;
  t.add = g_add;
  t.attend_head = g_attend_head;
  t.attend_causal = g_attend_causal;
  t.store_kv = g_store_kv;
  t.delta_rule = g_delta_rule;
  t.conv_silu = g_conv_silu;
  return t;
}
