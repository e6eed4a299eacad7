// AVX2 + FMA + F16C kernel table: float-weight matmuls (8 lanes, scalar tails); Q8_0, Q4_0, Q5_0,
// IQ4_NL, Q4_1 and Q5_1 matmuls as integer dots over Q8 activations (maddubs/madd, llama.cpp's sign
// trick; 8 rows side by side for a few tokens, 8-row panels for a prefill: panel_avx2-inl.h);
// Q2_K..Q6_K and IQ4_XS over Q8_K activations (kernels_quant_avx2-inl.h); vectorised activation
// quantisers; F16 KV attention. Every quantised type has its own entry below: none runs the
// generic per-row tiles of kernels_quant_simd-inl.h, whose block helpers this file still uses.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/dtype.h"

namespace anelm::engine::kernels {
namespace avx2_impl {
namespace {
#include "engine/kernels/kernels_generic-inl.h"


inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// ---- float weights --------------------------------------------------------------------------------

struct WF32 {
  static constexpr DType kType = DType::kF32;
  static __m256 load(const void* row, int64_t c) { return _mm256_loadu_ps(static_cast<const float*>(row) + c); }
  static float scalar(const void* row, int64_t c) { return static_cast<const float*>(row)[c]; }
};
struct WF16 {
  static constexpr DType kType = DType::kF16;
  static __m256 load(const void* row, int64_t c) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + c)));
  }
  static float scalar(const void* row, int64_t c) { return half_to_float(static_cast<const uint16_t*>(row)[c]); }
};
struct WBF16 {
  static constexpr DType kType = DType::kBF16;
  static __m256 load(const void* row, int64_t c) {
    const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + c)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  }
  static float scalar(const void* row, int64_t c) { return bf16_to_float(static_cast<const uint16_t*>(row)[c]); }
};

// out[t] = W_row . x[t] for t < T. Accumulators are named variables (GCC spills arrays of vectors).
template <class W, int T>
inline void float_tile(const void* row, int64_t cols, const float* x, float* out) {
  static_assert(T >= 1 && T <= 4);
  const __m256 z = _mm256_setzero_ps();
  __m256 a0 = z, a1 = z, a2 = z, a3 = z, b0 = z, b1 = z, b2 = z, b3 = z;
  const float* x0 = x;
  const float* x1 = x + (T > 1 ? cols : 0);
  const float* x2 = x + (T > 2 ? 2 * cols : 0);
  const float* x3 = x + (T > 3 ? 3 * cols : 0);
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    const __m256 w0 = W::load(row, c);
    const __m256 w1 = W::load(row, c + 8);
    a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x0 + c), a0);
    b0 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x0 + c + 8), b0);
    if constexpr (T > 1) {
      a1 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x1 + c), a1);
      b1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x1 + c + 8), b1);
    }
    if constexpr (T > 2) {
      a2 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x2 + c), a2);
      b2 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x2 + c + 8), b2);
    }
    if constexpr (T > 3) {
      a3 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x3 + c), a3);
      b3 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x3 + c + 8), b3);
    }
  }
  for (; c + 8 <= cols; c += 8) {
    const __m256 w = W::load(row, c);
    a0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x0 + c), a0);
    if constexpr (T > 1) a1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x1 + c), a1);
    if constexpr (T > 2) a2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x2 + c), a2);
    if constexpr (T > 3) a3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x3 + c), a3);
  }
  out[0] = hsum256(_mm256_add_ps(a0, b0));
  if constexpr (T > 1) out[1] = hsum256(_mm256_add_ps(a1, b1));
  if constexpr (T > 2) out[2] = hsum256(_mm256_add_ps(a2, b2));
  if constexpr (T > 3) out[3] = hsum256(_mm256_add_ps(a3, b3));
  for (; c < cols; ++c) {
    const float w = W::scalar(row, c);
    for (int t = 0; t < T; ++t) out[t] += w * x[t * cols + c];
  }
}

// ---- quantised weights ----------------------------------------------------------------------------

// Q8_0, Q4_0 and Q5_0: panel_avx2-inl.h (one path for any token count). The other block types:
// kernels_quant_avx2-inl.h.

template <class W>
struct FloatKernel {
  using X = float;
  static constexpr DType kType = W::kType;
  static int64_t x_stride(int64_t cols) { return cols; }
  template <int T>
  static void tile(const void* row, int64_t cols, const float* x, float* out) { float_tile<W, T>(row, cols, x, out); }
};

#include "engine/kernels/matmul_tiles-inl.h"

// ---- exp-based elementwise kernels (8 lanes, scalar tails) ----------------------------------------

// e^x for x in [-87.3, 88.3] (clamped): x = n ln2 + r, degree-6 Taylor for e^r, 2^n via the exponent.
inline __m256 exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504089f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n for n in [-126, 127]: build the float's exponent bits directly.
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline float max_of(const float* x, int n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  float mx = _mm_cvtss_f32(h);
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  return mx;
}

void softmax(float* x, int n) {
  const float mx = max_of(x, n);
  __m256 sum = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(mx)));
    sum = _mm256_add_ps(sum, e);
    _mm256_storeu_ps(x + i, e);
  }
  float s = hsum256(sum);
  for (; i < n; ++i) s += x[i] = std::exp(x[i] - mx);
  const float inv = 1.0f / s;
  for (i = 0; i < n; ++i) x[i] *= inv;
}

float log_sum_exp(const float* x, int n) {
  const float mx = max_of(x, n);
  __m256 sum = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) sum = _mm256_add_ps(sum, exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(mx))));
  float s = hsum256(sum);
  for (; i < n; ++i) s += std::exp(x[i] - mx);
  return mx + std::log(s);
}

void silu_mul(const float* gate, const float* up, int n, float* out) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 s = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// out = gelu_tanh(gate) * up as g / (1 + e^(-2u)), u = sqrt(2/pi) (g + 0.044715 g^3) (g_gelu_mul).
void gelu_mul(const float* gate, const float* up, int n, float* out) {
  const __m256 k2c = _mm256_set1_ps(-2.0f * 0.7978845608028654f), ka = _mm256_set1_ps(0.044715f);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(ka, g), _mm256_mul_ps(g, g), g);
    const __m256 s = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), exp256(_mm256_mul_ps(k2c, inner))));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
  g_gelu_mul(gate + i, up + i, n - i, out + i);
}

// out = gelu_tanh(x) as x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3) (g_gelu).
void gelu(const float* x, int n, float* out) {
  const __m256 k2c = _mm256_set1_ps(-2.0f * 0.7978845608028654f), ka = _mm256_set1_ps(0.044715f);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(x + i);
    const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(ka, g), _mm256_mul_ps(g, g), g);
    _mm256_storeu_ps(out + i, _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), exp256(_mm256_mul_ps(k2c, inner)))));
  }
  g_gelu(x + i, n - i, out + i);
}

// ---- attention (head_dim % 8 == 0; otherwise the generic version) -------------------------------

inline __m256 load_kv(const void* base, DType kv, int64_t i) {
  if (kv == DType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i)));
  }
  return _mm256_loadu_ps(static_cast<const float*>(base) + i);
}

void attend_head(const float* q, const void* k, const void* v, DType kv, int n_pos, int head_dim,
                 float scale, float* __restrict scores, float* __restrict out) {
  if (head_dim % 8 != 0) {
    g_attend_head(q, k, v, kv, n_pos, head_dim, scale, scores, out);
    return;
  }
  for (int p = 0; p < n_pos; ++p) {
    __m256 acc = _mm256_setzero_ps();
    for (int d = 0; d < head_dim; d += 8) {
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), load_kv(k, kv, int64_t{p} * head_dim + d), acc);
    }
    scores[p] = hsum256(acc) * scale;
  }
  softmax(scores, n_pos);
  for (int d = 0; d < head_dim; d += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int p = 0; p < n_pos; ++p) {
      acc = _mm256_fmadd_ps(_mm256_set1_ps(scores[p]), load_kv(v, kv, int64_t{p} * head_dim + d), acc);
    }
    _mm256_storeu_ps(out + d, acc);
  }
}

void store_kv(const float* src, DType kv, int n, void* __restrict dst) {
  if (kv != DType::kF16) {
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
    return;
  }
  auto* d = static_cast<uint16_t*>(dst);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), h);
  }
  for (; i < n; ++i) d[i] = float_to_half(src[i]);
}

// Lane operations of the blocked causal attention (attention_simd-inl.h).
struct AttnSimd {
  using V = __m256;
  static constexpr int W = 8;
  static constexpr int kJT = 2;  // 8 accumulators + 4 query vectors + 1 broadcast of 16 registers
  static constexpr int kDT = 2;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V x) { _mm256_storeu_ps(p, x); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V exp(V x) { return exp256(x); }
  static float hsum(V x) { return hsum256(x); }
  static float hmax(V x) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
  // Lane i = the sum of p[i]'s lanes: two rounds of pairwise adds within 128-bit halves, then the
  // halves' partial sums added.
  static V reduce_lanes(const V* p) {
    const __m256 g0 = _mm256_hadd_ps(_mm256_hadd_ps(p[0], p[1]), _mm256_hadd_ps(p[2], p[3]));
    const __m256 g1 = _mm256_hadd_ps(_mm256_hadd_ps(p[4], p[5]), _mm256_hadd_ps(p[6], p[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(g0, g1, 0x20), _mm256_permute2f128_ps(g0, g1, 0x31));
  }
  static V keep_le(V x, V j, V limit, float fill) {
    return _mm256_blendv_ps(_mm256_set1_ps(fill), x, _mm256_cmp_ps(j, limit, _CMP_LE_OQ));
  }
  static void to_f32(const uint16_t* src, int n, float* dst) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    }
    for (; i < n; ++i) dst[i] = half_to_float(src[i]);
  }
};
#include "engine/kernels/attention_simd-inl.h"

#include "engine/kernels/kernels_quant_simd-inl.h"
#include "engine/kernels/kernels_quant_avx2-inl.h"
#include "engine/kernels/panel_avx2-inl.h"  // after the quant helpers: the panels use qs_nibbles, qs_fives

// ---- activation quantisers (bit-identical to the reference) ---------------------------------------

// 32 int32 (four vectors, in order) -> 32 int8 in order (values already within int8).
inline __m256i pack_epi32_epi8(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

inline __m256 abs256(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline float hmax256(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

// As ref::quantize_q8: same amax, d and 1/d; x * id rounded to nearest even (the MXCSR default).
void quantize_q8(const float* x, int64_t n, QBlock8* __restrict out) {
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
    const float amax = hmax256(_mm256_max_ps(_mm256_max_ps(abs256(v[0]), abs256(v[1])), _mm256_max_ps(abs256(v[2]), abs256(v[3]))));
    const float d = amax / 127.0f;
    const float id = amax >= kQ8MinAmax ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], vid));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), pack_epi32_epi8(q[0], q[1], q[2], q[3]));
    out[b].d = round_to_half(d);  // f16-rounded scale, as llama.cpp's Q8_0 activations
    out[b].sum = qs_hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
  }
}

// As ref::quantize_q8k: max is the first element of largest magnitude (its sign kept), iscale =
// -127 / max, q = min(127, x * iscale rounded to nearest even), bsums per 16, d = 1 / iscale.
void quantize_q8k(const float* x, int64_t n, QBlockK* __restrict out) {
  for (int64_t b = 0; b < n / kQKBlock; ++b) {
    const float* xb = x + b * kQKBlock;
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < kQKBlock; i += 8) m = _mm256_max_ps(m, abs256(_mm256_loadu_ps(xb + i)));
    const float amax = hmax256(m);
    QBlockK& o = out[b];
    if (amax == 0.0f) {
      std::memset(&o, 0, sizeof(o));
      continue;
    }
    float max = 0.0f;
    for (int i = 0; i < kQKBlock; i += 8) {
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs256(_mm256_loadu_ps(xb + i)), _mm256_set1_ps(amax), _CMP_EQ_OQ));
      if (hit) {
        max = xb[i + __builtin_ctz(static_cast<unsigned>(hit))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127);
    alignas(32) int32_t sums[16];
    for (int i = 0; i < kQKBlock; i += 32) {
      __m256i q[4];
      for (int j = 0; j < 4; ++j) q[j] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + i + 8 * j), vs)), top);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.qs + i), pack_epi32_epi8(q[0], q[1], q[2], q[3]));
      // Sums of 16: lanes of q0 + q1 and q2 + q3, reduced pairwise (hadd stays within 128-bit lanes).
      const __m256i h = _mm256_hadd_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
      const __m256i h2 = _mm256_hadd_epi32(h, h);  // lane: s01lo, s23lo, ..., per 128-bit half
      sums[i / 16] = _mm256_extract_epi32(h2, 0) + _mm256_extract_epi32(h2, 4);
      sums[i / 16 + 1] = _mm256_extract_epi32(h2, 1) + _mm256_extract_epi32(h2, 5);
    }
    for (int g = 0; g < kQKBlock / 16; ++g) o.bsums[g] = static_cast<int16_t>(sums[g]);
    o.d = 1.0f / iscale;
  }
}

}  // namespace
}  // namespace avx2_impl

const KernelTable& avx2_kernel_table() {
  using namespace avx2_impl;
  static const KernelTable table = [] {
    KernelTable t = g_table(Isa::kAvx2);
    t.matmul[dtype_index(DType::kF32)] = matmul_impl<FloatKernel<WF32>>;
    t.matmul[dtype_index(DType::kF16)] = matmul_impl<FloatKernel<WF16>>;
    t.matmul[dtype_index(DType::kBF16)] = matmul_impl<FloatKernel<WBF16>>;
    t.matmul[dtype_index(DType::kQ8_0)] = panel_matmul<PanelQ8_0>;
    t.matmul[dtype_index(DType::kQ4_0)] = panel_matmul<PanelQ4_0>;
    t.matmul[dtype_index(DType::kQ5_0)] = panel_matmul<PanelQ5_0>;
    t.matmul[dtype_index(DType::kIQ4_NL)] = panel_matmul<PanelIQ4_NL>;
    t.matmul[dtype_index(DType::kQ4_1)] = panel_matmul<PanelQ1<false>>;
    t.matmul[dtype_index(DType::kQ5_1)] = panel_matmul<PanelQ1<true>>;
    t.matmul[dtype_index(DType::kQ4_K)] = k2_matmul<Q4_KKernel2>;
    t.matmul[dtype_index(DType::kQ5_K)] = k2_matmul<Q5_KKernel2>;
    t.matmul[dtype_index(DType::kQ6_K)] = k2_matmul<Q6_KKernel2>;
    t.matmul[dtype_index(DType::kQ2_K)] = k2_matmul<Q2_KKernel2>;
    t.matmul[dtype_index(DType::kQ3_K)] = k2_matmul<Q3_KKernel2>;
    t.matmul[dtype_index(DType::kIQ4_XS)] = k2_matmul<IQ4_XSKernel2>;
    t.quantize_q8 = quantize_q8;
    t.quantize_q8k = quantize_q8k;
    t.softmax = softmax;
    t.log_sum_exp = log_sum_exp;
    t.silu_mul = silu_mul;
    t.gelu_mul = gelu_mul;
    t.gelu = gelu;
    t.attend_head = attend_head;
    t.attend_causal = attend_causal;
    t.store_kv = store_kv;
    return t;
  }();
  return table;
}

}  // namespace anelm::engine::kernels
