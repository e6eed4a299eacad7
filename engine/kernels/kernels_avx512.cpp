// AVX-512 kernel table (F/BW/VL/DQ + VNNI, F16C): float-weight matmuls with masked tails, Q8_0/Q4_0
// matmuls as integer dots over Q8 activations (vpdpbusd), F16 KV attention. Built with -mavx512*.
// GCC 12 reports false "__Y uninitialized" warnings inside avx512fintrin.h (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/kernels/fp16.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/quant.h"

namespace anelm::engine::kernels {
namespace avx512_impl {
namespace {
#include "engine/kernels/kernels_generic-inl.h"

constexpr int kTokenBlock = 8;  // tokens whose activations stay in L1 while a row range streams past
constexpr int kTile = 4;         // tokens sharing one load of each weight vector (registers)

inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// ---- float weights: 16 columns per step, weight vector shared by up to kTile tokens --------------

struct WF32 {
  static constexpr DType kType = DType::kF32;
  static __m512 load(const void* row, int64_t c, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(row) + c);
  }
};
struct WF16 {
  static constexpr DType kType = DType::kF16;
  static __m512 load(const void* row, int64_t c, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(row) + c));
  }
};
struct WBF16 {
  static constexpr DType kType = DType::kBF16;
  static __m512 load(const void* row, int64_t c, __mmask16 m) {
    const __m512i u = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(row) + c));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
  }
};

// out[t] = W_row . x[t] for t < T; x rows are `cols` apart. Two accumulators per token hide FMA
// latency. Accumulators are named variables, not arrays: GCC 12 spills __m512 arrays to the stack
// on every iteration (measured 2.5x slower).
template <class W, int T>
inline void float_tile(const void* row, int64_t cols, const float* x, float* out) {
  static_assert(T >= 1 && T <= 4);
  const __m512 z = _mm512_setzero_ps();
  __m512 a0 = z, a1 = z, a2 = z, a3 = z, b0 = z, b1 = z, b2 = z, b3 = z;
  const float* x0 = x;
  const float* x1 = x + (T > 1 ? cols : 0);
  const float* x2 = x + (T > 2 ? 2 * cols : 0);
  const float* x3 = x + (T > 3 ? 3 * cols : 0);
  int64_t c = 0;
  for (; c + 32 <= cols; c += 32) {
    const __m512 w0 = W::load(row, c, 0xFFFF);
    const __m512 w1 = W::load(row, c + 16, 0xFFFF);
    a0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x0 + c), a0);
    b0 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x0 + c + 16), b0);
    if constexpr (T > 1) {
      a1 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x1 + c), a1);
      b1 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x1 + c + 16), b1);
    }
    if constexpr (T > 2) {
      a2 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x2 + c), a2);
      b2 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x2 + c + 16), b2);
    }
    if constexpr (T > 3) {
      a3 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x3 + c), a3);
      b3 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x3 + c + 16), b3);
    }
  }
  for (; c < cols; c += 16) {
    const __mmask16 m = tail_mask(cols - c);
    const __m512 w = W::load(row, c, m);
    a0 = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(m, x0 + c), a0);
    if constexpr (T > 1) a1 = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(m, x1 + c), a1);
    if constexpr (T > 2) a2 = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(m, x2 + c), a2);
    if constexpr (T > 3) a3 = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(m, x3 + c), a3);
  }
  out[0] = _mm512_reduce_add_ps(_mm512_add_ps(a0, b0));
  if constexpr (T > 1) out[1] = _mm512_reduce_add_ps(_mm512_add_ps(a1, b1));
  if constexpr (T > 2) out[2] = _mm512_reduce_add_ps(_mm512_add_ps(a2, b2));
  if constexpr (T > 3) out[3] = _mm512_reduce_add_ps(_mm512_add_ps(a3, b3));
}

// ---- quantised weights: one 32-element block per ymm, integer dot with vpdpbusd -----------------

// Q8_0 row . Q8 activations: |w| (u8) times sign(x, w) (s8) with vpdpbusd, exact in int32
// (|w| <= 128, |x| <= 127); the llama.cpp sign trick, one vpsignb per (row, token, block).
template <int T>
inline void q8_0_tile(const void* row, int64_t cols, const QBlock8* x, float* out) {
  const int64_t nb = cols / kQBlock;
  const auto* w = static_cast<const BlockQ8_0*>(row);
  __m256 acc0[T], acc1[T];  // two sets (even/odd blocks) hide FMA latency; static indices keep them in registers
  for (int t = 0; t < T; ++t) acc0[t] = acc1[t] = _mm256_setzero_ps();
  auto block = [&](int64_t b, __m256* acc) __attribute__((always_inline)) {
    const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs));
    const __m256i aw = _mm256_abs_epi8(wq);
    const float dw = _cvtsh_ss(w[b].d);
    for (int t = 0; t < T; ++t) {
      const QBlock8& xb = x[t * nb + b];
      const __m256i sx = _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs)), wq);
      const __m256i dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw, sx);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * xb.d), acc[t]);
    }
  };
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    block(b, acc0);
    block(b + 1, acc1);
  }
  if (b < nb) block(b, acc0);
  for (int t = 0; t < T; ++t) out[t] = hsum256(_mm256_add_ps(acc0[t], acc1[t]));
}

// Q4_0 row . Q8 activations: nibbles (0..15) as u8 times x as s8, minus 8 * sum(x).
template <int T>
inline void q4_0_tile(const void* row, int64_t cols, const QBlock8* x, float* out) {
  const int64_t nb = cols / kQBlock;
  const auto* w = static_cast<const BlockQ4_0*>(row);
  const __m128i low4 = _mm_set1_epi8(0x0F);
  __m256 acc0[T], acc1[T];  // two sets (even/odd blocks) hide FMA latency; static indices keep them in registers
  for (int t = 0; t < T; ++t) acc0[t] = acc1[t] = _mm256_setzero_ps();
  auto block = [&](int64_t b, __m256* acc) __attribute__((always_inline)) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs));
    const __m256i wq = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), low4), _mm_and_si128(raw, low4));
    const float dw = _cvtsh_ss(w[b].d);
    for (int t = 0; t < T; ++t) {
      const QBlock8& xb = x[t * nb + b];
      const __m256i init = _mm256_zextsi128_si256(_mm_cvtsi32_si128(-8 * xb.sum));
      const __m256i dot = _mm256_dpbusd_epi32(init, wq, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs)));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * xb.d), acc[t]);
    }
  };
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    block(b, acc0);
    block(b + 1, acc1);
  }
  if (b < nb) block(b, acc0);
  for (int t = 0; t < T; ++t) out[t] = hsum256(_mm256_add_ps(acc0[t], acc1[t]));
}

// Tile adapters with one signature: the activation pointer is f32 or QBlock8 per weight type.
template <class W>
struct FloatKernel {
  using X = float;
  static constexpr DType kType = W::kType;
  static int64_t x_stride(int64_t cols) { return cols; }
  template <int T>
  static void tile(const void* row, int64_t cols, const float* x, float* out) { float_tile<W, T>(row, cols, x, out); }
};
struct Q8_0Kernel {
  using X = QBlock8;
  static constexpr DType kType = DType::kQ8_0;
  static int64_t x_stride(int64_t cols) { return cols / kQBlock; }
  template <int T>
  static void tile(const void* row, int64_t cols, const QBlock8* x, float* out) { q8_0_tile<T>(row, cols, x, out); }
};
struct Q4_0Kernel {
  using X = QBlock8;
  static constexpr DType kType = DType::kQ4_0;
  static int64_t x_stride(int64_t cols) { return cols / kQBlock; }
  template <int T>
  static void tile(const void* row, int64_t cols, const QBlock8* x, float* out) { q4_0_tile<T>(row, cols, x, out); }
};

// Token blocks (activations stay cached) x rows x tiles of up to kTile tokens.
template <class K>
void matmul_impl(const void* w, int64_t cols, const float* xf, const QBlock8* xq, int n,
                 float* __restrict y, int64_t ldy, int64_t r0, int64_t r1) {
  const typename K::X* x;
  if constexpr (std::is_same_v<typename K::X, float>) {
    x = xf;
    (void)xq;
  } else {
    x = xq;
    (void)xf;
  }
  const int64_t xs = K::x_stride(cols);
  const int64_t rb = weight_row_bytes(K::kType, cols);
  float out[kTile];
  for (int i0 = 0; i0 < n; i0 += kTokenBlock) {
    const int i1 = n < i0 + kTokenBlock ? n : i0 + kTokenBlock;
    for (int64_t r = r0; r < r1; ++r) {
      const void* row = static_cast<const uint8_t*>(w) + r * rb;
      int i = i0;
      for (; i + kTile <= i1; i += kTile) {
        K::template tile<kTile>(row, cols, x + i * xs, out);
        for (int t = 0; t < kTile; ++t) y[(i + t) * ldy + r] = out[t];
      }
      switch (i1 - i) {
        case 3: K::template tile<3>(row, cols, x + i * xs, out); break;
        case 2: K::template tile<2>(row, cols, x + i * xs, out); break;
        case 1: K::template tile<1>(row, cols, x + i * xs, out); break;
        default: break;
      }
      for (int t = 0; t < i1 - i; ++t) y[(i + t) * ldy + r] = out[t];
    }
  }
}

// Bit-identical to ref::quantize_q8: same amax, same d and 1/d, x * id rounded to nearest even.
void quantize_q8(const float* x, int64_t n, QBlock8* __restrict out) {
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const __m512 v0 = _mm512_loadu_ps(x + b * kQBlock);
    const __m512 v1 = _mm512_loadu_ps(x + b * kQBlock + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, vid));
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs + 16), _mm512_cvtepi32_epi8(q1));
    out[b].d = half_to_float(float_to_half(d));  // f16-rounded scale, as llama.cpp's Q8_0 activations
    out[b].sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  }
}

// ---- exp-based elementwise kernels -------------------------------------------------------------

// e^x for x in [-87.3, 88.3] (clamped): x = n ln2 + r, |r| <= ln2/2, degree-6 Taylor polynomial
// for e^r (relative error ~1.2e-7), then scale by 2^n.
inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504089f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

inline float max_of(const float* x, int n) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  for (int i = 0; i < n; i += 16) m = _mm512_max_ps(m, _mm512_mask_loadu_ps(m, tail_mask(n - i), x + i));
  return _mm512_reduce_max_ps(m);
}

void softmax(float* x, int n) {
  const __m512 mx = _mm512_set1_ps(max_of(x, n));
  __m512 sum = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mx));
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(m, e));
    _mm512_mask_storeu_ps(x + i, m, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv));
  }
}

float log_sum_exp(const float* x, int n) {
  const float mx = max_of(x, n);
  const __m512 vmx = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(m, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vmx))));
  }
  return mx + std::log(_mm512_reduce_add_ps(sum));
}

// out = gate / (1 + e^-gate) * up; out may alias gate.
void silu_mul(const float* gate, const float* up, int n, float* out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

// ---- attention over an F32/F16 KV cache ----------------------------------------------------------

inline __m512 load_kv(const void* base, DType kv, int64_t i, __mmask16 m) {
  if (kv == DType::kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(base) + i));
  }
  return _mm512_maskz_loadu_ps(m, static_cast<const float*>(base) + i);
}

void attend_head(const float* q, const void* k, const void* v, DType kv, int n_pos, int head_dim,
                 float scale, float* __restrict scores, float* __restrict out) {
  for (int p = 0; p < n_pos; ++p) {
    __m512 acc = _mm512_setzero_ps();
    for (int d = 0; d < head_dim; d += 16) {
      const __mmask16 m = tail_mask(head_dim - d);
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), load_kv(k, kv, int64_t{p} * head_dim + d, m), acc);
    }
    scores[p] = _mm512_reduce_add_ps(acc) * scale;
  }
  softmax(scores, n_pos);
  for (int d = 0; d < head_dim; d += 16) {
    const __mmask16 m = tail_mask(head_dim - d);
    __m512 acc = _mm512_setzero_ps();
    for (int p = 0; p < n_pos; ++p) {
      acc = _mm512_fmadd_ps(_mm512_set1_ps(scores[p]), load_kv(v, kv, int64_t{p} * head_dim + d, m), acc);
    }
    _mm512_mask_storeu_ps(out + d, m, acc);
  }
}

void store_kv(const float* src, DType kv, int n, void* __restrict dst) {
  if (kv != DType::kF16) {
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
    return;
  }
  auto* d = static_cast<uint16_t*>(dst);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(d + i, m, h);
  }
}

}  // namespace
}  // namespace avx512_impl

const KernelTable& avx512_kernel_table() {
  using namespace avx512_impl;
  static const KernelTable table = [] {
    KernelTable t = g_table(Isa::kAvx512);
    t.matmul[dtype_index(DType::kF32)] = matmul_impl<FloatKernel<WF32>>;
    t.matmul[dtype_index(DType::kF16)] = matmul_impl<FloatKernel<WF16>>;
    t.matmul[dtype_index(DType::kBF16)] = matmul_impl<FloatKernel<WBF16>>;
    t.matmul[dtype_index(DType::kQ8_0)] = matmul_impl<Q8_0Kernel>;
    t.matmul[dtype_index(DType::kQ4_0)] = matmul_impl<Q4_0Kernel>;
    t.quantize_q8 = quantize_q8;
    t.softmax = softmax;
    t.log_sum_exp = log_sum_exp;
    t.silu_mul = silu_mul;
    t.attend_head = attend_head;
    t.store_kv = store_kv;
    return t;
  }();
  return table;
}

}  // namespace anelm::engine::kernels
