// Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1 and Q5_1 weights times any number of tokens on AVX2: many (a
// prefill) through a per-thread panel of 8 interleaved rows, few (decode) from the rows directly with
// the same sums in the same order.
//
// Per-row tiles spent ~8 vector ops per (row, token, block): the integer dot (3 ops) plus
// converting, scaling and accumulating one 8-lane dot whose lanes all belong to one sum. Here a group
// of 8 rows is decoded and interleaved once per call (per block, 4-byte pieces of the 8 rows side by
// side, and the 8 row scales as floats), so the 8 int32 lanes of a maddubs/madd are the 8 rows' partial
// dots: one weight load serves 8 rows, a 4-byte broadcast of the token serves all lanes, and a block
// ends with one convert and one FMA per token against (row scales x token scale). The panel chunk stays
// in L2 while every token tile passes over it.
// Include inside the AVX2 namespace.

constexpr int kPanelRows = 8;
constexpr int kPanelMinTokens = 8;  // fewer tokens: group_tile (packing costs a pass over the rows)
// Per block: the 8 rows' values, their scales as floats and, for a type with a min, their mins.
template <class P>
constexpr int64_t kPanelBlockBytes = kPanelRows * kQBlock + kPanelRows * sizeof(float) * (P::kMin ? 2 : 1);
constexpr int64_t kPanelChunkBytes = 96 * 1024;  // with a 4-token tile of activations, well inside L2

// Q8_0: signed weights, dotted by the sign trick (|w| as u8 times x with w's sign).
struct PanelQ8_0 {
  using Block = BlockQ8_0;
  static constexpr DType kType = DType::kQ8_0;
  static constexpr bool kSigned = true;
  static constexpr int kOffset = 0;
  static constexpr bool kMin = false;
  static __m256i values(const Block& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }
};
// Q4_0: the nibbles as u8 0..15 (low nibbles are elements 0..15, high ones 16..31) dotted directly with
// x; the -8 offset enters as -8 * sum(x) per block and token.
struct PanelQ4_0 {
  using Block = BlockQ4_0;
  static constexpr DType kType = DType::kQ4_0;
  static constexpr bool kSigned = false;
  static constexpr int kOffset = 8;
  static constexpr bool kMin = false;
  static __m256i values(const Block& b) { return qs_nibbles(b.qs); }
};
// Q5_0 (the bulk of a Q4_K_M file whose rows are not a multiple of 256, e.g. Gemma 3's 1152): the
// nibbles with the fifth bit as u8 0..31, the -16 offset as -16 * sum(x) per block and token.
struct PanelQ5_0 {
  using Block = BlockQ5_0;
  static constexpr DType kType = DType::kQ5_0;
  static constexpr bool kSigned = false;
  static constexpr int kOffset = 16;
  static constexpr bool kMin = false;
  static __m256i values(const Block& b) { return qs_fives(b.qs, b.qh); }
};

// IQ4_NL (the 4-bit blocks of 32 that IQ4_XS files fall back to where a row is not a multiple of 256):
// the nibbles looked up as signed levels, dotted like Q8_0.
struct PanelIQ4_NL {
  using Block = BlockIQ4_NL;
  static constexpr DType kType = DType::kIQ4_NL;
  static constexpr bool kSigned = true;
  static constexpr int kOffset = 0;
  static constexpr bool kMin = false;
  static __m256i values(const Block& b) { return qs_iq4_levels(b.qs); }
};

// Q4_1 / Q5_1 (Q5_1: the bulk of a Q5_K_M file whose rows are not a multiple of 256, e.g. Gemma 3's
// 1152): w = d * q + m with q unsigned, so a block adds d * x.d * dot(q, x) + m * (x.d * sum(x)).
template <bool kFifthBit>
struct PanelQ1 {
  using Block = std::conditional_t<kFifthBit, BlockQ5_1, BlockQ4_1>;
  static constexpr DType kType = kFifthBit ? DType::kQ5_1 : DType::kQ4_1;
  static constexpr bool kSigned = false;
  static constexpr int kOffset = 0;
  static constexpr bool kMin = true;
  static __m256i values(const Block& b) {
    if constexpr (kFifthBit) return qs_fives(b.qs, b.qh);
    else return qs_nibbles(b.qs);
  }
};

// The 8 rows' fp16 fields (scales or mins) of block b side by side, widened at once (exact).
template <class P, class F>
inline __m256 rows_f16(const typename P::Block* const* rows, int64_t b, F field) {
  __m128i h = _mm_cvtsi32_si128(field(rows[0][b]));
  h = _mm_insert_epi16(h, field(rows[1][b]), 1);
  h = _mm_insert_epi16(h, field(rows[2][b]), 2);
  h = _mm_insert_epi16(h, field(rows[3][b]), 3);
  h = _mm_insert_epi16(h, field(rows[4][b]), 4);
  h = _mm_insert_epi16(h, field(rows[5][b]), 5);
  h = _mm_insert_epi16(h, field(rows[6][b]), 6);
  h = _mm_insert_epi16(h, field(rows[7][b]), 7);
  return _mm256_cvtph_ps(h);
}
template <class P>
inline __m256 rows_d(const typename P::Block* const* rows, int64_t b) {
  return rows_f16<P>(rows, b, [](const typename P::Block& x) { return x.d; });
}
template <class P>
inline __m256 rows_m(const typename P::Block* const* rows, int64_t b) {
  if constexpr (P::kMin) return rows_f16<P>(rows, b, [](const typename P::Block& x) { return x.m; });
  else return _mm256_setzero_ps();
}

// A block's contribution to token t's 8 row sums, the same operations in panel_tile and group_tile:
// isum * (row scales x token scale), then for a type with a min + mins x (token scale x sum(x)).
template <class P>
inline __m256 block_fma(__m256i isum, __m256 dw, __m256 mw, const QBlock8& xb, __m256 acc) {
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, _mm256_set1_ps(xb.d)), acc);
  if constexpr (P::kMin) acc = _mm256_fmadd_ps(mw, _mm256_set1_ps(xb.d * static_cast<float>(xb.sum)), acc);
  return acc;
}

// Rows rows[0..7] (nb blocks each) -> panel: per block, 8 vectors k = 0..7 holding values 4k..4k+3 of
// each row in row order (an 8x8 transpose of 32-bit pieces), then the 8 row scales (and mins).
template <class P>
inline void panel_pack(const typename P::Block* const* rows, int64_t nb, uint8_t* out) {
  for (int64_t b = 0; b < nb; ++b, out += kPanelBlockBytes<P>) {
    __m256i v[8], t[8], u[8];
    for (int i = 0; i < 8; ++i) v[i] = P::values(rows[i][b]);
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);  // r_i0 r_{i+1}0 r_i1 r_{i+1}1 | pieces 4, 5
      t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);  // pieces 2, 3 | 6, 7
    }
    for (int h = 0; h < 8; h += 4) {
      u[h] = _mm256_unpacklo_epi64(t[h], t[h + 2]);  // piece 0 of four rows | piece 4
      u[h + 1] = _mm256_unpackhi_epi64(t[h], t[h + 2]);  // 1 | 5
      u[h + 2] = _mm256_unpacklo_epi64(t[h + 1], t[h + 3]);  // 2 | 6
      u[h + 3] = _mm256_unpackhi_epi64(t[h + 1], t[h + 3]);  // 3 | 7
    }
    auto* o = reinterpret_cast<__m256i*>(out);
    for (int k = 0; k < 4; ++k) {
      _mm256_storeu_si256(o + k, _mm256_permute2x128_si256(u[k], u[4 + k], 0x20));
      _mm256_storeu_si256(o + 4 + k, _mm256_permute2x128_si256(u[k], u[4 + k], 0x31));
    }
    float* s = reinterpret_cast<float*>(out + kPanelRows * kQBlock);
    _mm256_storeu_ps(s, rows_d<P>(rows, b));
    if constexpr (P::kMin) _mm256_storeu_ps(s + kPanelRows, rows_m<P>(rows, b));
  }
}

// The first nr lanes of each token's accumulator to its row of y (a last partial group of rows).
template <int T>
inline void store_lanes(const __m256* acc, float* y, int64_t ldy, int nr) {
  if (nr == kPanelRows) {
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
    return;
  }
  alignas(32) float part[kPanelRows];
  for (int t = 0; t < T; ++t) {
    _mm256_store_ps(part, acc[t]);
    std::memcpy(y + t * ldy, part, sizeof(float) * nr);
  }
}

// The 8 rows of a panel group . T tokens (x: T rows of nb blocks, xs apart) -> y[t * ldy + 0..nr-1].
template <class P, int T>
inline void panel_tile(const uint8_t* panel, int64_t nb, const QBlock8* x, int64_t xs, float* y, int64_t ldy, int nr) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b, panel += kPanelBlockBytes<P>) {
    __m256i isum[T];
    for (int t = 0; t < T; ++t) {
      // Q4_0's / Q5_0's offset, exact in int32: every lane (row) gets -offset * sum(x).
      isum[t] = P::kSigned ? _mm256_setzero_si256() : _mm256_set1_epi32(-P::kOffset * x[t * xs + b].sum);
    }
    for (int k = 0; k < 8; ++k) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel) + k);
      const __m256i uw = P::kSigned ? _mm256_sign_epi8(w, w) : w;
      for (int t = 0; t < T; ++t) {
        int32_t piece;
        std::memcpy(&piece, x[t * xs + b].qs + 4 * k, 4);
        __m256i sx = _mm256_set1_epi32(piece);
        if constexpr (P::kSigned) sx = _mm256_sign_epi8(sx, w);
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(uw, sx), ones));
      }
    }
    const float* s = reinterpret_cast<const float*>(panel + kPanelRows * kQBlock);
    const __m256 dw = _mm256_loadu_ps(s), mw = P::kMin ? _mm256_loadu_ps(s + kPanelRows) : _mm256_setzero_ps();
    for (int t = 0; t < T; ++t) acc[t] = block_fma<P>(isum[t], dw, mw, x[t * xs + b], acc[t]);
  }
  store_lanes<T>(acc, y, ldy, nr);
}

// Fewer tokens (decode, a batched decode step): the panels' sums in the panels' order, straight from
// the rows, while the next group's next_bytes are prefetched (spread over the blocks). Each row's
// block is dotted on its own (8 int32 lanes of partial sums), the 8 rows' lanes are folded into one
// vector of their exact block dots (quad_dots), which is converted and FMA'd against (row scales x
// token scale) in block order as panel_tile does: a token gets bit-identical results whichever path
// and batch it runs in, so a sequence decoded alone and one decoded beside a prefill chunk agree to
// the bit.

// Two rows' int32 lanes interleaved and added: per 128-bit lane, rows (a, b, a, b).
inline __m256i pair32(__m256i a, __m256i b) {
  return _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
}
// Two such pairs: per 128-bit lane, rows (a0, a1, b0, b1).
inline __m256i pair64(__m256i a, __m256i b) {
  return _mm256_add_epi32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
}

// rows[0..3] dotted with each token's block b: per token, the four rows' sums over each 128-bit
// half. Rows are folded pairwise as they are dotted, so only a few vectors stay live (with all eight
// rows' values and dots held at once the 16 ymm registers spilled); interleave-and-add, not hadd:
// hadd costs two shuffles and an add per instruction, an unpack one shuffle.
template <class P, int T>
inline void quad_dots(const typename P::Block* const* rows, int64_t b, const __m256i* xq, __m256i* out) {
  const __m256i ones = _mm256_set1_epi16(1);
  auto dot = [&](__m256i v, __m256i x) {
    const __m256i u = P::kSigned ? _mm256_sign_epi8(v, v) : v;
    const __m256i sx = P::kSigned ? _mm256_sign_epi8(x, v) : x;
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, sx), ones);
  };
  for (int pair = 0; pair < 2; ++pair) {
    const __m256i va = P::values(rows[2 * pair][b]), vb = P::values(rows[2 * pair + 1][b]);
    for (int t = 0; t < T; ++t) {
      const __m256i s = pair32(dot(va, xq[t]), dot(vb, xq[t]));
      out[t] = pair == 0 ? s : pair64(out[t], s);
    }
  }
}

template <class P, int T>
inline void group_tile(const typename P::Block* const* rows, int64_t nb, const QBlock8* x, int64_t xs, float* y,
                       int64_t ldy, int nr, const char* next, int64_t next_bytes) {
  const int64_t per_block = (next_bytes / 64 + nb - 1) / nb;
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t l = b * per_block; l < (b + 1) * per_block && l * 64 < next_bytes; ++l) {
      _mm_prefetch(next + l * 64, _MM_HINT_T0);
    }
    __m256i xq[T], lo[T], hi[T];
    for (int t = 0; t < T; ++t) xq[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t * xs + b].qs));
    quad_dots<P, T>(rows, b, xq, lo);
    quad_dots<P, T>(rows + 4, b, xq, hi);
    const __m256 dw = rows_d<P>(rows, b), mw = rows_m<P>(rows, b);  // exactly the floats the panel stores
    for (int t = 0; t < T; ++t) {
      const QBlock8& xb = x[t * xs + b];
      // Rows 0-3 over both 128-bit halves, then rows 4-7: the 8 rows' exact block dots.
      __m256i isum = _mm256_add_epi32(_mm256_permute2x128_si256(lo[t], hi[t], 0x20),
                                      _mm256_permute2x128_si256(lo[t], hi[t], 0x31));
      if constexpr (!P::kSigned) isum = _mm256_add_epi32(isum, _mm256_set1_epi32(-P::kOffset * xb.sum));
      acc[t] = block_fma<P>(isum, dw, mw, xb, acc[t]);
    }
  }
  store_lanes<T>(acc, y, ldy, nr);
}

#include "engine/kernels/panel_driver-inl.h"
