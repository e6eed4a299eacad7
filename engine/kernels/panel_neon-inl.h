// Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1 and Q5_1 weights (the blocks of 32) times any number of tokens on
// NEON (ARMv8.2 dotprod), the structure of panel_avx2-inl.h on 128-bit vectors: many tokens (a
// prefill) through a per-thread panel of 4 interleaved rows, few (decode) from the rows directly, both
// with the same integer block dots and the same float operations in the same order, so a token's
// results do not depend on its pass.
//
// The per-row tiles (kernels_quant_neon-inl.h) spend per (row, token, block) two dots, a convert and an
// FMA into a vector whose 4 lanes all belong to one sum, then a horizontal add. In a panel a block's
// 4-byte pieces of 4 rows sit side by side, so vdotq_laneq_s32 (one piece of the token broadcast from a
// lane) fills the 4 int32 lanes with the 4 rows' partial dots: 8 dots per block give the 4 rows' exact
// block sums, then one convert and one FMA per token for 4 rows. Q4_0 is decoded to signed values
// (nibble - 8) once, when packed or read, so no offset correction is needed. Q4_1 / Q5_1 (w = d * q + m)
// keep q unsigned (0..31 fits a signed byte) and add m * (x.d * sum(x)) per block with one more FMA.
// Correctness is tested under qemu-aarch64 against the scalar reference; the speed of this path has
// not been measured (no Arm hardware in development). Include inside the NEON namespace after h2f and
// the Dec* decoders of the blocks of 32 (kernels_quant_neon-inl.h).

constexpr int kPanelRows = 4;
constexpr int kPanelMinTokens = 8;  // fewer tokens: group_tile (packing costs a pass over the rows)
// Per block: the 4 rows' values, their scales as floats and, for a type with a min, their mins.
template <class P>
constexpr int64_t kPanelBlockBytes = kPanelRows * kQBlock + kPanelRows * sizeof(float) * (P::kMin ? 2 : 1);
constexpr int64_t kPanelChunkBytes = 96 * 1024;  // with a 4-token tile of activations, well inside L2

// The 4 rows' fp16 fields (scales or mins) of block b as floats (exact conversions, as h2f).
template <class P, class F>
inline float32x4_t rows_f16(const typename P::Block* const* rows, int64_t b, F field) {
  const uint16_t h[kPanelRows] = {field(rows[0][b]), field(rows[1][b]), field(rows[2][b]), field(rows[3][b])};
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}
template <class P>
inline float32x4_t row_scales(const typename P::Block* const* rows, int64_t b) {
  return rows_f16<P>(rows, b, [](const typename P::Block& x) { return x.d; });
}
template <class P>
inline float32x4_t row_mins(const typename P::Block* const* rows, int64_t b) {
  if constexpr (P::kMin) return rows_f16<P>(rows, b, [](const typename P::Block& x) { return x.m; });
  else return vdupq_n_f32(0.0f);
}

// Rows rows[0..3] (nb blocks each) -> panel: per block, 8 vectors k = 0..7 holding values 4k..4k+3 of
// each row in row order (a 4x4 transpose of 32-bit pieces per half block), then the 4 row scales (and
// mins).
template <class P>
inline void panel_pack(const typename P::Block* const* rows, int64_t nb, uint8_t* out) {
  for (int64_t b = 0; b < nb; ++b, out += kPanelBlockBytes<P>) {
    int32x4_t half[2][kPanelRows];
    for (int i = 0; i < kPanelRows; ++i) {
      int8x16_t q0, q1;
      P::decode(rows[i][b], q0, q1);
      half[0][i] = vreinterpretq_s32_s8(q0), half[1][i] = vreinterpretq_s32_s8(q1);
    }
    auto* o = reinterpret_cast<int32_t*>(out);
    for (int h = 0; h < 2; ++h) {
      const int32x4_t* v = half[h];
      const int32x4_t t0 = vtrn1q_s32(v[0], v[1]), t1 = vtrn2q_s32(v[0], v[1]);  // a0 b0 a2 b2 | a1 b1 a3 b3
      const int32x4_t t2 = vtrn1q_s32(v[2], v[3]), t3 = vtrn2q_s32(v[2], v[3]);
      auto lo64 = [](int32x4_t a, int32x4_t c) {
        return vreinterpretq_s32_s64(vtrn1q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(c)));
      };
      auto hi64 = [](int32x4_t a, int32x4_t c) {
        return vreinterpretq_s32_s64(vtrn2q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(c)));
      };
      vst1q_s32(o + 16 * h + 0, lo64(t0, t2));  // piece 0 of the 4 rows
      vst1q_s32(o + 16 * h + 4, lo64(t1, t3));  // piece 1
      vst1q_s32(o + 16 * h + 8, hi64(t0, t2));  // piece 2
      vst1q_s32(o + 16 * h + 12, hi64(t1, t3));  // piece 3
    }
    float* s = reinterpret_cast<float*>(out + kPanelRows * kQBlock);
    vst1q_f32(s, row_scales<P>(rows, b));
    if constexpr (P::kMin) vst1q_f32(s + kPanelRows, row_mins<P>(rows, b));
  }
}

// The first nr lanes of each token's accumulator to its row of y (a last partial group of rows).
template <int T>
inline void store_lanes(const float32x4_t* acc, float* y, int64_t ldy, int nr) {
  for (int t = 0; t < T; ++t) {
    if (nr == kPanelRows) {
      vst1q_f32(y + t * ldy, acc[t]);
    } else {
      float part[kPanelRows];
      vst1q_f32(part, acc[t]);
      std::memcpy(y + t * ldy, part, sizeof(float) * nr);
    }
  }
}

// The block's scaled sum into acc, the same float operations in both paths: isum * (row scales x token
// scale), then for a type with a min + mins x (token scale x sum(x)).
template <class P>
inline float32x4_t add_block(float32x4_t acc, int32x4_t isum, float32x4_t dw, float32x4_t mw, const QBlock8& xb) {
  acc = vfmaq_f32(acc, vcvtq_f32_s32(isum), vmulq_n_f32(dw, xb.d));
  if constexpr (P::kMin) acc = vfmaq_n_f32(acc, mw, xb.d * static_cast<float>(xb.sum));
  return acc;
}

// The 4 rows of a panel group . T tokens (x: T rows of nb blocks, xs apart) -> y[t * ldy + 0..nr-1].
template <class P, int T>
inline void panel_tile(const uint8_t* panel, int64_t nb, const QBlock8* x, int64_t xs, float* y, int64_t ldy, int nr) {
  float32x4_t acc[T];
  for (int t = 0; t < T; ++t) acc[t] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; ++b, panel += kPanelBlockBytes<P>) {
    const auto* pv = reinterpret_cast<const int8_t*>(panel);
    int8x16_t w[8];
    for (int k = 0; k < 8; ++k) w[k] = vld1q_s8(pv + 16 * k);
    const float* sc = reinterpret_cast<const float*>(panel + kPanelRows * kQBlock);
    const float32x4_t dw = vld1q_f32(sc), mw = P::kMin ? vld1q_f32(sc + kPanelRows) : vdupq_n_f32(0.0f);
    for (int t = 0; t < T; ++t) {
      const QBlock8& xb = x[t * xs + b];
      const int8x16_t x0 = vld1q_s8(xb.qs), x1 = vld1q_s8(xb.qs + 16);
      int32x4_t s = vdupq_n_s32(0);
      s = vdotq_laneq_s32(s, w[0], x0, 0);
      s = vdotq_laneq_s32(s, w[1], x0, 1);
      s = vdotq_laneq_s32(s, w[2], x0, 2);
      s = vdotq_laneq_s32(s, w[3], x0, 3);
      s = vdotq_laneq_s32(s, w[4], x1, 0);
      s = vdotq_laneq_s32(s, w[5], x1, 1);
      s = vdotq_laneq_s32(s, w[6], x1, 2);
      s = vdotq_laneq_s32(s, w[7], x1, 3);
      acc[t] = add_block<P>(acc[t], s, dw, mw, xb);
    }
  }
  store_lanes<T>(acc, y, ldy, nr);
}

// Fewer tokens (decode, a batched decode step): each row's block dotted on its own (4 int32 lanes of
// partial sums), two pairwise adds turn the 4 rows' lanes into one vector of their exact block dots,
// then the panel's convert and FMA. The next group's next_bytes are prefetched across the blocks.
template <class P, int T>
inline void group_tile(const typename P::Block* const* rows, int64_t nb, const QBlock8* x, int64_t xs, float* y,
                       int64_t ldy, int nr, const char* next, int64_t next_bytes) {
  const int64_t per_block = (next_bytes / 64 + nb - 1) / nb;
  const int32x4_t zero = vdupq_n_s32(0);
  float32x4_t acc[T];
  for (int t = 0; t < T; ++t) acc[t] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t l = b * per_block; l < (b + 1) * per_block && l * 64 < next_bytes; ++l) {
      __builtin_prefetch(next + l * 64);
    }
    int8x16_t q0[kPanelRows], q1[kPanelRows];
    for (int i = 0; i < kPanelRows; ++i) P::decode(rows[i][b], q0[i], q1[i]);
    const float32x4_t dw = row_scales<P>(rows, b), mw = row_mins<P>(rows, b);
    for (int t = 0; t < T; ++t) {
      const QBlock8& xb = x[t * xs + b];
      const int8x16_t x0 = vld1q_s8(xb.qs), x1 = vld1q_s8(xb.qs + 16);
      int32x4_t p[kPanelRows];
      for (int i = 0; i < kPanelRows; ++i) p[i] = vdotq_s32(vdotq_s32(zero, q0[i], x0), q1[i], x1);
      acc[t] = add_block<P>(acc[t], vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3])), dw, mw, xb);
    }
  }
  store_lanes<T>(acc, y, ldy, nr);
}

#include "engine/kernels/panel_driver-inl.h"
