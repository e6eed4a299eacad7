// AVX-512 kernel table (F/BW/VL/DQ + VNNI, F16C): float-weight matmuls with masked tails, Q8_0/Q4_0
// matmuls as integer dots over Q8 activations (vpdpbusd), F16 KV attention. Built with -mavx512*.
// GCC 12 reports false "__Y uninitialized" warnings inside avx512fintrin.h (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
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
namespace avx512_impl {
namespace {
#include "engine/kernels/kernels_generic-inl.h"

constexpr int kTokenBlock = 8;
// Decode GEMVs prefetch the row group this many groups ahead (a group = R rows streamed together).
constexpr int kPrefetchAhead = 1;  // tokens whose activations stay in L1 while a row range streams past

// Every cache line of the kBytes at p: a line every 64 bytes from p, and the line of the last byte.
// Blocks that are not a multiple of 64 bytes straddle one line more than kBytes / 64 at some offsets;
// leaving that line to the demand load cost the streaming GEMVs up to a tenth of their bandwidth.
// The Q8_0 pair (68 bytes) had one prefetch: two copies of an 87 MB GEMV side by side streamed
// 13.1-14.6 GB/s per thread, 14.3-16.6 with both ends, and Gemma 3 1B Q8_0's decode went from
// 22.7-24.2 to 24.4-26.1 tok/s (2 threads, Sapphire Rapids, 2026-12-02).
template <size_t kBytes>
[[gnu::always_inline]] inline void prefetch_lines(const char* p) {
#pragma GCC unroll 8
  for (size_t off = 0; off < kBytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
  _mm_prefetch(p + kBytes - 1, _MM_HINT_T0);
}

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


// ---- register-tiled float kernels: R rows x T tokens of accumulators ---------------------------
// Each 16-column step loads R weight vectors and T activation vectors for R*T FMAs (R = T = 4:
// 8 loads per 16 FMAs, so Zen 4's one-zmm-load-per-cycle no longer caps the FMA rate as the old
// 1 row x 4 tokens tile did at 5 loads per 4 FMAs). Decode uses R = 4, T = 1 with two accumulators
// per row (8 independent chains) and prefetches the rows R ahead. out [T][R] (token-major).
template <class W, int R, int T>
inline void float_block(const void* const* rows, int64_t cols, const float* x, float* out,
                        int64_t row_bytes) {
  static_assert(R >= 1 && R <= 4 && T >= 1 && T <= 4);
  constexpr int kSplit = T == 1 ? 2 : 1;  // accumulator sets along columns (latency hiding)
  __m512 acc[kSplit][R][T];
#pragma GCC unroll 16
  for (int s = 0; s < kSplit; ++s)
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[s][r][t] = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 16 * kSplit <= cols; c += 16 * kSplit) {
#pragma GCC unroll 16
    for (int s = 0; s < kSplit; ++s) {
      __m512 xv[T];
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(x + t * cols + c + 16 * s);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        if (T == 1 && s == 0) {
          _mm_prefetch(static_cast<const char*>(rows[r]) + kPrefetchAhead * R * row_bytes + c * (row_bytes / cols), _MM_HINT_T0);
        }
        const __m512 wv = W::load(rows[r], c + 16 * s, 0xFFFF);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) acc[s][r][t] = _mm512_fmadd_ps(wv, xv[t], acc[s][r][t]);
      }
    }
  }
  for (; c < cols; c += 16) {
    const __mmask16 m = tail_mask(cols - c);
    __m512 xv[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x + t * cols + c);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 wv = W::load(rows[r], c, m);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[0][r][t] = _mm512_fmadd_ps(wv, xv[t], acc[0][r][t]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      __m512 a = acc[0][r][t];
      if constexpr (kSplit == 2) a = _mm512_add_ps(a, acc[kSplit - 1][r][t]);
      out[t * R + r] = _mm512_reduce_add_ps(a);
    }
}

// Q8_0 / Q4_0 rows . one Q8 activation row (decode): R rows share each activation block load;
// R independent accumulator chains; the rows R ahead are prefetched.
template <int R>
inline void q8_0_rows(const void* const* rows, int64_t cols, const QBlock8* x, float* out, int64_t row_bytes) {
  const int64_t nb = cols / kQBlock;
  __m256 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
    const float dx = x[b].d;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const BlockQ8_0* w = static_cast<const BlockQ8_0*>(rows[r]) + b;
      if ((b & 1) == 0) _mm_prefetch(reinterpret_cast<const char*>(w) + kPrefetchAhead * R * row_bytes, _MM_HINT_T0);
      const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w->qs));
      const __m256i dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(wq), _mm256_sign_epi8(xq, wq));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(_cvtsh_ss(w->d) * dx), acc[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = hsum256(acc[r]);
}

// Q8_0 decode with two blocks per zmm: the activation pair and its scales are loaded once for
// all R rows; the sign trick uses a byte mask (AVX-512 has no vpsignb on zmm). 14 uops per 64
// weights per row instead of ~18 with one block per ymm. Odd nb ends with one ymm block.
template <int R>
inline void q8_0_rows2(const void* const* rows, int64_t cols, const QBlock8* x, float* out, int64_t row_bytes) {
  const int64_t nb = cols / kQBlock;
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const __m512i xq = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b + 1].qs)), 1);
    const __m512 dx = _mm512_insertf32x8(_mm512_set1_ps(x[b].d), _mm256_set1_ps(x[b + 1].d), 1);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const BlockQ8_0* w = static_cast<const BlockQ8_0*>(rows[r]) + b;
      prefetch_lines<2 * sizeof(BlockQ8_0)>(reinterpret_cast<const char*>(w) + kPrefetchAhead * R * row_bytes);
      const __m512i wq = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[0].qs))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[1].qs)), 1);
      const __m512i sx = _mm512_mask_sub_epi8(xq, _mm512_movepi8_mask(wq), zero, xq);  // x * sign(w)
      const __m512i dot = _mm512_dpbusd_epi32(zero, _mm512_abs_epi8(wq), sx);
      const __m256i dh = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(static_cast<short>(w[0].d))),
                                                 _mm_set1_epi16(static_cast<short>(w[1].d)), 1);
      const __m512 scale = _mm512_mul_ps(_mm512_cvtph_ps(dh), dx);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[r]);
    }
  }
  float tail[R] = {};
  if (b < nb) {
    const void* tail_rows[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) tail_rows[r] = static_cast<const BlockQ8_0*>(rows[r]) + b;
    q8_0_rows<R>(tail_rows, kQBlock, x + b, tail, 0);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]) + tail[r];
}

template <int R>
inline void q4_0_rows(const void* const* rows, int64_t cols, const QBlock8* x, float* out, int64_t row_bytes) {
  const int64_t nb = cols / kQBlock;
  const __m128i low4 = _mm_set1_epi8(0x0F);
  __m256 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
    const float dx = x[b].d;
    const __m256i init = _mm256_zextsi128_si256(_mm_cvtsi32_si128(-8 * x[b].sum));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const BlockQ4_0* w = static_cast<const BlockQ4_0*>(rows[r]) + b;
      if ((b & 3) == 0) _mm_prefetch(reinterpret_cast<const char*>(w) + kPrefetchAhead * R * row_bytes, _MM_HINT_T0);
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w->qs));
      const __m256i wq = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), low4), _mm_and_si128(raw, low4));
      const __m256i dot = _mm256_dpbusd_epi32(init, wq, xq);
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(_cvtsh_ss(w->d) * dx), acc[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = hsum256(acc[r]);
}

// Q4_0 decode with two blocks per zmm: nibbles of blocks (b, b+1) laid out as [lo b | hi b | lo b+1 |
// hi b+1], matching the activation pair; the -8 * sum(x) offsets start the vpdpbusd accumulators.
template <int R>
inline void q4_0_rows2(const void* const* rows, int64_t cols, const QBlock8* x, float* out, int64_t row_bytes) {
  const int64_t nb = cols / kQBlock;
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const __m512i xq = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b + 1].qs)), 1);
    const __m512 dx = _mm512_insertf32x8(_mm512_set1_ps(x[b].d), _mm256_set1_ps(x[b + 1].d), 1);
    const __m512i init = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, -8 * x[b + 1].sum, 0, 0, 0, 0, 0, 0, 0, -8 * x[b].sum);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const BlockQ4_0* w = static_cast<const BlockQ4_0*>(rows[r]) + b;
      _mm_prefetch(reinterpret_cast<const char*>(w) + kPrefetchAhead * R * row_bytes, _MM_HINT_T0);
      const __m128i raw0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[0].qs));
      const __m128i raw1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[1].qs));
      const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(raw0, raw0)), _mm256_set_m128i(raw1, raw1), 1);
      // 128-bit lanes 1 and 3 take the high nibbles (shift in 16-bit words, then mask bytes).
      const __m512i wq = _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4), low4);
      const __m512i dot = _mm512_dpbusd_epi32(init, wq, xq);
      const __m256i dh = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(static_cast<short>(w[0].d))),
                                                 _mm_set1_epi16(static_cast<short>(w[1].d)), 1);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(_mm512_cvtph_ps(dh), dx), acc[r]);
    }
  }
  float tail[R] = {};
  if (b < nb) {
    const void* tail_rows[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) tail_rows[r] = static_cast<const BlockQ4_0*>(rows[r]) + b;
    q4_0_rows<R>(tail_rows, kQBlock, x + b, tail, 0);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]) + tail[r];
}

// Tile adapters with one signature: the activation pointer is f32 or QBlock8 per weight type.
template <class W>
struct FloatKernel {
  using X = float;
  using WType = W;
  static constexpr DType kType = W::kType;
  static int64_t x_stride(int64_t cols) { return cols; }
  static constexpr bool kFloat = true;
  template <int R>
  static void rows(const void* const* r, int64_t cols, const float* x, float* out, int64_t rb) {
    float_block<W, R, 1>(r, cols, x, out, rb);
  }
};
struct PairQ8_0;
struct LaneQ8_0;
struct LaneQ4_0;
struct Q8_0Kernel {
  using PairDec = PairQ8_0;
  using LaneDec = LaneQ8_0;
  using X = QBlock8;
  using WType = void;
  static constexpr DType kType = DType::kQ8_0;
  static int64_t x_stride(int64_t cols) { return cols / kQBlock; }
  template <int T>
  static void tile(const void* row, int64_t cols, const QBlock8* x, float* out) { q8_0_tile<T>(row, cols, x, out); }
  static constexpr bool kFloat = false;
  template <int R>
  static void rows(const void* const* r, int64_t cols, const QBlock8* x, float* out, int64_t rb) {
    q8_0_rows2<R>(r, cols, x, out, rb);
  }
};
struct Q4_0Kernel {
  using LaneDec = LaneQ4_0;
  using X = QBlock8;
  using WType = void;
  static constexpr DType kType = DType::kQ4_0;
  static int64_t x_stride(int64_t cols) { return cols / kQBlock; }
  template <int T>
  static void tile(const void* row, int64_t cols, const QBlock8* x, float* out) { q4_0_tile<T>(row, cols, x, out); }
  static constexpr bool kFloat = false;
  template <int R>
  static void rows(const void* const* r, int64_t cols, const QBlock8* x, float* out, int64_t rb) {
    q4_0_rows2<R>(r, cols, x, out, rb);
  }
};

// Decode (n == 1): several rows per step sharing each activation load (GEMV).
constexpr int kQRows = 8;
template <class K>
void gemv_impl(const void* w, int64_t cols, const typename K::X* x, float* __restrict y, int64_t r0, int64_t r1) {
  const int64_t rb = dtype_row_bytes(K::kType, cols);
  const auto* base = static_cast<const uint8_t*>(w);
  // Float rows: 4 per step (2 accumulators each); quantised rows: kQRows per step (one zmm each).
  constexpr int kR = K::kFloat ? 4 : kQRows;
  int64_t r = r0;
  float out[kR];
  for (; r + kR <= r1; r += kR) {
    const void* rows[kR];
    for (int i = 0; i < kR; ++i) rows[i] = base + (r + i) * rb;
    K::template rows<kR>(rows, cols, x, out, rb);
    for (int i = 0; i < kR; ++i) y[r + i] = out[i];
  }
  for (; r < r1; ++r) {
    const void* rows[1] = {base + r * rb};
    K::template rows<1>(rows, cols, x, out, 0);
    y[r] = out[0];
  }
}

// Prefill with float weights: 4 rows x 4 tokens register tiles over token blocks of kTokenBlock.
template <class W>
void float_gemm(const void* w, int64_t cols, const float* x, int n, float* __restrict y, int64_t ldy,
                int64_t r0, int64_t r1) {
  const int64_t rb = dtype_row_bytes(W::kType, cols);
  const auto* base = static_cast<const uint8_t*>(w);
  float out[16];
  for (int i0 = 0; i0 < n; i0 += kTokenBlock) {
    const int i1 = n < i0 + kTokenBlock ? n : i0 + kTokenBlock;
    int64_t r = r0;
    for (; r < r1; r += 4) {
      const int nr = r1 - r >= 4 ? 4 : static_cast<int>(r1 - r);
      const void* rows[4];
      for (int j = 0; j < 4; ++j) rows[j] = base + (r + (j < nr ? j : 0)) * rb;
      for (int i = i0; i < i1; i += 4) {
        const int nt = i1 - i >= 4 ? 4 : i1 - i;
        const float* xi = x + i * cols;
        // Full 4x4 tiles; ragged edges fall back to narrower instantiations (same arithmetic).
        if (nr == 4) {
          switch (nt) {
            case 4: float_block<W, 4, 4>(rows, cols, xi, out, rb); break;
            case 3: float_block<W, 4, 3>(rows, cols, xi, out, rb); break;
            case 2: float_block<W, 4, 2>(rows, cols, xi, out, rb); break;
            default: float_block<W, 4, 1>(rows, cols, xi, out, rb); break;
          }
          for (int t = 0; t < nt; ++t)
            for (int j = 0; j < 4; ++j) y[(i + t) * ldy + r + j] = out[t * 4 + j];
        } else {
          for (int j = 0; j < nr; ++j) {
            const void* one[1] = {rows[j]};
            switch (nt) {
              case 4: float_block<W, 1, 4>(one, cols, xi, out, rb); break;
              case 3: float_block<W, 1, 3>(one, cols, xi, out, rb); break;
              case 2: float_block<W, 1, 2>(one, cols, xi, out, rb); break;
              default: float_block<W, 1, 1>(one, cols, xi, out, 0); break;
            }
            for (int t = 0; t < nt; ++t) y[(i + t) * ldy + r + j] = out[t];
          }
        }
      }
    }
  }
}

#include "engine/kernels/matmul_tiles-inl.h"

#define ANELM_QUANT_VNNI 1
#include "engine/kernels/kernels_quant_simd-inl.h"
#include "engine/kernels/kernels_quant_avx512-inl.h"
#include "engine/kernels/q32_lanes_avx512-inl.h"

// ---- Q8_0 prefill: activations repacked per token block into block pairs -----------------------
// XPair: two consecutive QBlock8 of one token as one zmm of x + 128 (unsigned, so vpdpbusd takes
// the signed weights as they are; -128 * sum(w), once per weight pair, starts every token's sum) plus
// their scales spread over the matching int32 lanes: the inner loop is load, vpdpbusd, convert,
// scale, FMA per (token, 64 weights). 128 B per pair: a tile of kXPairTokens tokens at 10240 columns
// is 160 KiB.
struct alignas(64) XPair {
  uint8_t qs[64];
  float d[16];
};
constexpr int kXPairTokens = 8;

inline void pack_xpairs(const QBlock8* x, int64_t nb, int nt, XPair* __restrict out) {
  const int64_t np = nb / 2;
  for (int t = 0; t < nt; ++t) {
    for (int64_t p = 0; p < np; ++p) {
      const QBlock8* xb = x + t * nb + 2 * p;
      XPair& o = out[t * np + p];
      const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[0].qs))),
                                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[1].qs)), 1);
      _mm512_store_si512(o.qs, _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80))));  // x + 128
      _mm512_store_ps(o.d, _mm512_insertf32x8(_mm512_set1_ps(xb[0].d), _mm256_set1_ps(xb[1].d), 1));
    }
  }
}

// Pair decoders for the packed-pair prefill: block pair p of a row as one zmm of signed int8 weights
// and their two f16 scales spread over the matching lanes. Q8_0 here; Q5_0 in kernels_quant_avx512-inl.h.
struct PairQ8_0 {
  static constexpr DType kType = DType::kQ8_0;
  static void pair(const void* row, int64_t p, __m512i& wq, __m512& dw) {
    const BlockQ8_0* wb = static_cast<const BlockQ8_0*>(row) + 2 * p;
    wq = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[0].qs))),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[1].qs)), 1);
    dw = _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(static_cast<short>(wb[0].d))),
                                                 _mm_set1_epi16(static_cast<short>(wb[1].d)), 1));
  }
};

// out[t] = pairs [p0, p1) of row w . token t, whose pairs are x[t * xs + p].
template <class Dec, int T>
inline void pair_tile(const void* w, int64_t p0, int64_t p1, const XPair* x, int64_t xs, float* out) {
  const __m512i zero = _mm512_setzero_si512(), bias = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t p = p0; p < p1; ++p) {
    __m512i wq;
    __m512 dw;
    Dec::pair(w, p, wq, dw);
    const __m512i init = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, bias, wq));  // -128 * sum(w)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const XPair& xp = x[t * xs + p];
      const __m512i dot = _mm512_dpbusd_epi32(init, _mm512_load_si512(xp.qs), wq);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_load_ps(xp.d)), acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) out[t] = _mm512_reduce_add_ps(acc[t]);
}

// XPair scratch of this thread, grown to the largest prefill chunk seen (never per token): 2 bytes
// per activation, 8 MiB for 512 tokens (the default chunk) of 8192 columns.
inline XPair* xpair_scratch(size_t n) {
  thread_local std::vector<XPair> v;
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Y[i][r] for a pair-decodable type with even nb: every token packed once, then rows in chunks of
// ~384 KB of weights (they stay in L2 beside one tile's activations, at most 160 KB) with every
// 8-token tile passing over a chunk, so the weights stream from memory once per call, not once per
// tile. Phi-4-mini's Q8_0 (4 GB) streamed 16 times per 128-token prefill and its prefill sat at
// 1.0x llama.cpp (Zen 5, 2026-12-02).
template <class Dec>
void gemm_pairs(const void* w, int64_t cols, const QBlock8* x, int n, float* __restrict y,
                int64_t ldy, int64_t r0, int64_t r1) {
  const int64_t nb = cols / kQBlock, np = nb / 2;
  const int64_t rb = dtype_row_bytes(Dec::kType, cols);
  XPair* packed = xpair_scratch(static_cast<size_t>(n * np));
  for (int i0 = 0; i0 < n; i0 += kXPairTokens) {
    pack_xpairs(x + i0 * nb, nb, std::min(kXPairTokens, n - i0), packed + i0 * np);
  }
  constexpr int64_t kChunkBytes = 384 * 1024;
  const int64_t chunk = std::max<int64_t>(1, kChunkBytes / rb);
  chunked_token_passes<kXPairTokens>(n, r0, r1, chunk, [&](int i0, int nt, int64_t a, int64_t e) {
    with_token_count(nt, [&](auto T) {
      sliced_rows<T>(np, blocks_per_l1_slice(np, T * sizeof(XPair)), y + i0 * ldy, ldy, a, e,
                     [&](int64_t r, int64_t p0, int64_t p1, float* out) {
                       pair_tile<Dec, T>(static_cast<const uint8_t*>(w) + r * rb, p0, p1, packed + i0 * np, np, out);
                     });
    });
  });
}

// Token blocks (activations stay cached) x rows x tiles of up to kQTile tokens (quantised weights:
// each weight block's load and |w| are shared by kQTile tokens).
constexpr int kQTile = 8;
constexpr int kQTokenBlock = 16;

template <class K>
void matmul_avx512(const void* w, int64_t cols, const float* xf, const void* xq, int n,
                   float* __restrict y, int64_t ldy, int64_t r0, int64_t r1) {
  const typename K::X* x = activations_of<K>(xf, xq);
  if (n == 1) {
    if constexpr (requires { K::kFewTokensDecode; }) {
      K::token_tiles(w, cols, x, n, y, 0, r0, r1);
    } else {
      gemv_impl<K>(w, cols, x, y, r0, r1);
    }
    return;
  }
  if constexpr (K::kFloat) {
    float_gemm<typename K::WType>(w, cols, x, n, y, ldy, r0, r1);
  } else {
    if constexpr (requires { K::kTokenTiles; }) {  // Q4_K, Q5_K, Q6_K: a batched decode step or a prefill
      K::token_tiles(w, cols, x, n, y, ldy, r0, r1);
      return;
    }
    if constexpr (requires { typename K::LaneDec; }) {  // 32-element blocks with one scale
      if (n >= kLaneMinTokens) {
        gemm_lanes<typename K::LaneDec>(w, cols, x, n, y, ldy, r0, r1);
        return;
      }
    }
    if constexpr (requires { typename K::PairDec; }) {  // Q8_0, Q5_0: packed-pair prefill
      const int64_t nb = cols / kQBlock;
      if (nb % 2 == 0) {
        gemm_pairs<typename K::PairDec>(w, cols, x, n, y, ldy, r0, r1);
        return;
      }
    }
    tiled_rows<K, kQTile, kQTokenBlock>(w, cols, x, n, y, ldy, r0, r1);
  }
}

// Bit-identical to ref::quantize_q8: same amax, same d and 1/d, x * id rounded to nearest even.
void quantize_q8(const float* x, int64_t n, QBlock8* __restrict out) {
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const __m512 v0 = _mm512_loadu_ps(x + b * kQBlock);
    const __m512 v1 = _mm512_loadu_ps(x + b * kQBlock + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float d = amax / 127.0f;
    const float id = amax >= kQ8MinAmax ? 1.0f / d : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, vid));
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs + 16), _mm512_cvtepi32_epi8(q1));
    out[b].d = round_to_half(d);  // f16-rounded scale, as llama.cpp's Q8_0 activations
    out[b].sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  }
}

// Bit-identical to ref::quantize_q8k: max is the first element of largest magnitude (its sign kept),
// iscale = -127 / max, q = min(127, x * iscale rounded to nearest even), bsums per 16, d = 1 / iscale.
void quantize_q8k(const float* x, int64_t n, QBlockK* __restrict out) {
  for (int64_t b = 0; b < n / kQKBlock; ++b) {
    const float* xb = x + b * kQKBlock;
    __m512 m = _mm512_setzero_ps();
    for (int i = 0; i < kQKBlock; i += 16) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(xb + i)));
    const float amax = _mm512_reduce_max_ps(m);
    QBlockK& o = out[b];
    if (amax == 0.0f) {
      o = QBlockK{};
      continue;
    }
    float max = 0.0f;
    for (int i = 0; i < kQKBlock; i += 16) {
      const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(xb + i)), _mm512_set1_ps(amax), _CMP_EQ_OQ);
      if (hit) {
        max = xb[i + __builtin_ctz(hit)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m512 vs = _mm512_set1_ps(iscale);
    for (int i = 0; i < kQKBlock; i += 16) {
      __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + i), vs));
      q = _mm512_min_epi32(q, _mm512_set1_epi32(127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o.qs + i), _mm512_cvtepi32_epi8(q));
      o.bsums[i / 16] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    o.d = 1.0f / iscale;
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

// out = gelu_tanh(gate) * up as g / (1 + e^(-2u)), u = sqrt(2/pi) (g + 0.044715 g^3) (g_gelu_mul).
void gelu_mul(const float* gate, const float* up, int n, float* out) {
  const __m512 one = _mm512_set1_ps(1.0f), k2c = _mm512_set1_ps(-2.0f * 0.7978845608028654f), ka = _mm512_set1_ps(0.044715f);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(ka, g), _mm512_mul_ps(g, g), g);
    const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, exp512(_mm512_mul_ps(k2c, inner))));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

// out = gelu_tanh(x) as x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3) (g_gelu).
void gelu(const float* x, int n, float* out) {
  const __m512 one = _mm512_set1_ps(1.0f), k2c = _mm512_set1_ps(-2.0f * 0.7978845608028654f), ka = _mm512_set1_ps(0.044715f);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(ka, g), _mm512_mul_ps(g, g), g);
    _mm512_mask_storeu_ps(out + i, m, _mm512_div_ps(g, _mm512_add_ps(one, exp512(_mm512_mul_ps(k2c, inner)))));
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

// Lane operations of the blocked causal attention (attention_simd-inl.h).
struct AttnSimd {
  using V = __m512;
  static constexpr int W = 16;
  static constexpr int kJT = 4;  // 16 accumulators + 4 query vectors + 1 broadcast of 32 registers
  static constexpr int kDT = 4;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V x) { _mm512_storeu_ps(p, x); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V exp(V x) { return exp512(x); }
  static float hsum(V x) { return _mm512_reduce_add_ps(x); }
  static float hmax(V x) { return _mm512_reduce_max_ps(x); }
  // Lane i = the sum of p[i]'s lanes: four rounds that each halve the lanes per sum and double the
  // sums per vector, then one permute back to positional order (round four leaves lane 4k + m
  // holding p[4m + k]).
  static V reduce_lanes(const V* p) {
    __m512 q[8], r[4], s[2];
    for (int i = 0; i < 8; ++i) {
      q[i] = _mm512_add_ps(_mm512_shuffle_f32x4(p[2 * i], p[2 * i + 1], 0x44),
                           _mm512_shuffle_f32x4(p[2 * i], p[2 * i + 1], 0xEE));
    }
    for (int i = 0; i < 4; ++i) {
      r[i] = _mm512_add_ps(_mm512_shuffle_f32x4(q[2 * i], q[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(q[2 * i], q[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
    for (int i = 0; i < 2; ++i) {
      s[i] = _mm512_add_ps(_mm512_shuffle_ps(r[2 * i], r[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(r[2 * i], r[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    const __m512 t = _mm512_add_ps(_mm512_shuffle_ps(s[0], s[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(s[0], s[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), t);
  }
  static V keep_le(V x, V j, V limit, float fill) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(j, limit, _CMP_LE_OQ), _mm512_set1_ps(fill), x);
  }
  static void to_f32(const uint16_t* src, int n, float* dst) {
    for (int i = 0; i < n; i += 16) {
      const __mmask16 m = tail_mask(n - i);
      _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + i)));
    }
  }
};
#include "engine/kernels/attention_simd-inl.h"

template <class K>
struct MatmulOf {
  static constexpr MatmulFn fn = matmul_avx512<K>;
};

}  // namespace
}  // namespace avx512_impl

const KernelTable& avx512_kernel_table() {
  using namespace avx512_impl;
  static const KernelTable table = [] {
    KernelTable t = g_table(Isa::kAvx512);
    t.matmul[dtype_index(DType::kF32)] = matmul_avx512<FloatKernel<WF32>>;
    t.matmul[dtype_index(DType::kF16)] = matmul_avx512<FloatKernel<WF16>>;
    t.matmul[dtype_index(DType::kBF16)] = matmul_avx512<FloatKernel<WBF16>>;
    t.matmul[dtype_index(DType::kQ8_0)] = matmul_avx512<Q8_0Kernel>;
    t.matmul[dtype_index(DType::kQ4_0)] = matmul_avx512<Q4_0Kernel>;
    fill_quant_simd<MatmulOf>(t);
    t.matmul[dtype_index(DType::kQ5_0)] = matmul_avx512<Q5_0Kernel512>;
    t.matmul[dtype_index(DType::kIQ4_NL)] = matmul_avx512<IQ4_NLKernel512>;
    t.matmul[dtype_index(DType::kQ4_K)] = matmul_avx512<Q4_KKernel512>;
    t.matmul[dtype_index(DType::kQ5_K)] = matmul_avx512<Q5_KKernel512>;
    t.matmul[dtype_index(DType::kQ6_K)] = matmul_avx512<Q6_KKernel512>;
    // Q2_K and Q3_K have no 512-bit kernels of their own: the AVX2 table's lead at every token count
    // (AMD EPYC Zen 5, bench_kernels q3_gate_up, one thread, 2026-12-01, Q2_K / Q3_K: 1 token 0.14 /
    // 0.21 ms against the generic 512-bit tiles' 0.28 / 0.55, 128 tokens 11.7 / 12.7 against 14.1 / 19.5).
    t.matmul[dtype_index(DType::kQ2_K)] = avx2_kernel_table().matmul[dtype_index(DType::kQ2_K)];
    t.matmul[dtype_index(DType::kQ3_K)] = avx2_kernel_table().matmul[dtype_index(DType::kQ3_K)];
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
