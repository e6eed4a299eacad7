// Block-quantised matmul tiles for NEON with the ARMv8.2 dot-product instruction (vdotq_s32:
// four s8 x s8 products per int32 lane). Every (super-)block is decoded once into signed int8
// vectors, offsets applied, so the integer dots equal the portable kernels' integer sums exactly;
// unlike x86's maddubs (u8 x s8) no sign trick or offset correction through the activation sums is
// needed, only the minimums of Q4_1/Q5_1/Q2_K/Q4_K/Q5_K go through them. The T tokens of a tile
// share each decoded block. Include inside the NEON anonymous namespace after h2f (kernels_neon.cpp).
// No include guard on purpose.

// ---- 32-element blocks over QBlock8 activations -----------------------------------------------

// 0x10 in byte j (lo: elements 0..15, hi: 16..31) where bit j of the little-endian u32 at qh4 is set.
inline void qn_bits_0x10(const uint8_t* qh4, uint8x16_t& lo, uint8x16_t& hi) {
  uint32_t v;
  std::memcpy(&v, qh4, 4);
  const uint8x16_t bytes = vreinterpretq_u8_u32(vdupq_n_u32(v));
  static constexpr uint8_t kSel[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  static constexpr uint8_t kIdxLo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  static constexpr uint8_t kIdxHi[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
  const uint8x16_t sel = vld1q_u8(kSel), x10 = vdupq_n_u8(0x10);
  lo = vandq_u8(vtstq_u8(vqtbl1q_u8(bytes, vld1q_u8(kIdxLo)), sel), x10);
  hi = vandq_u8(vtstq_u8(vqtbl1q_u8(bytes, vld1q_u8(kIdxHi)), sel), x10);
}

// Q4_0-style nibbles of 16 bytes: lo = elements 0..15 (low nibbles), hi = 16..31.
inline void qn_nibbles(const uint8_t* qs, uint8x16_t& lo, uint8x16_t& hi) {
  const uint8x16_t raw = vld1q_u8(qs);
  lo = vandq_u8(raw, vdupq_n_u8(0x0F));
  hi = vshrq_n_u8(raw, 4);
}

inline int8x16_t qn_s8(uint8x16_t v, int offset) {
  return vaddq_s8(vreinterpretq_s8_u8(v), vdupq_n_s8(static_cast<int8_t>(offset)));
}

// Decoders: the block's 32 values as signed bytes (the panels read the fp16 scale, and kMin's
// minimum, from the block themselves).
struct DecQ8_0 {
  using Block = BlockQ8_0;
  static constexpr DType kType = DType::kQ8_0;
  static constexpr bool kMin = false;
  static void decode(const Block& b, int8x16_t& q0, int8x16_t& q1) {
    q0 = vld1q_s8(b.qs);
    q1 = vld1q_s8(b.qs + 16);
  }
};
struct DecQ4_0 {
  using Block = BlockQ4_0;
  static constexpr DType kType = DType::kQ4_0;
  static constexpr bool kMin = false;
  static void decode(const Block& b, int8x16_t& q0, int8x16_t& q1) {
    uint8x16_t lo, hi;
    qn_nibbles(b.qs, lo, hi);
    q0 = qn_s8(lo, -8), q1 = qn_s8(hi, -8);
  }
};
struct DecQ4_1 {
  using Block = BlockQ4_1;
  static constexpr DType kType = DType::kQ4_1;
  static constexpr bool kMin = true;
  static void decode(const Block& b, int8x16_t& q0, int8x16_t& q1) {
    uint8x16_t lo, hi;
    qn_nibbles(b.qs, lo, hi);
    q0 = vreinterpretq_s8_u8(lo), q1 = vreinterpretq_s8_u8(hi);
  }
};
template <bool kWithMin>
struct DecQ5 {
  using Block = std::conditional_t<kWithMin, BlockQ5_1, BlockQ5_0>;
  static constexpr DType kType = kWithMin ? DType::kQ5_1 : DType::kQ5_0;
  static constexpr bool kMin = kWithMin;
  static void decode(const Block& b, int8x16_t& q0, int8x16_t& q1) {
    uint8x16_t lo, hi, blo, bhi;
    qn_nibbles(b.qs, lo, hi);
    qn_bits_0x10(b.qh, blo, bhi);
    const int offset = kWithMin ? 0 : -16;
    q0 = qn_s8(vorrq_u8(lo, blo), offset), q1 = qn_s8(vorrq_u8(hi, bhi), offset);
  }
};
struct DecIQ4_NL {
  using Block = BlockIQ4_NL;
  static constexpr DType kType = DType::kIQ4_NL;
  static constexpr bool kMin = false;
  static void decode(const Block& b, int8x16_t& q0, int8x16_t& q1) {
    const int8x16_t table = vld1q_s8(kIq4nlValues);
    uint8x16_t lo, hi;
    qn_nibbles(b.qs, lo, hi);
    q0 = vqtbl1q_s8(table, lo), q1 = vqtbl1q_s8(table, hi);
  }
};

// ---- 256-element super-blocks over QBlockK activations ----------------------------------------

// A decoded super-block: q[g] = the 16 values of group g (elements 16g..16g+15) as signed bytes,
// sc[g] their integer scale; kMins types also carry min[g] (int16) for the bsums term.
struct SuperBlock {
  int8x16_t q[16];
  int32_t sc[16];
  int16x8_t min0, min1;  // min of groups 0..7, 8..15
  float d, dmin;
};

// sum_g min[g] * bsums[g] over the 16 groups.
inline int32_t qn_bsums_dot(const int16_t* bsums, int16x8_t m0, int16x8_t m1) {
  const int16x8_t b0 = vld1q_s16(bsums), b1 = vld1q_s16(bsums + 8);
  int32x4_t s = vmull_s16(vget_low_s16(b0), vget_low_s16(m0));
  s = vmlal_high_s16(s, b0, m0);
  s = vmlal_s16(s, vget_low_s16(b1), vget_low_s16(m1));
  s = vmlal_high_s16(s, b1, m1);
  return vaddvq_s32(s);
}

// v >> n with n from a loop variable (vshrq_n_u8 needs a constant).
inline uint8x16_t qn_shr(uint8x16_t v, int n) { return vshlq_u8(v, vdupq_n_s8(static_cast<int8_t>(-n))); }

// Q2_K / Q3_K low bits: element 128h + 32s + l is bits 2s of qs[32h + l], group 8h + 2s + l/16.
inline void qn_unpack_2bit(const uint8_t* qs, uint8x16_t* q) {
  const uint8x16_t m3 = vdupq_n_u8(3);
  for (int h = 0; h < 2; ++h) {
    const uint8x16_t r0 = vld1q_u8(qs + 32 * h), r1 = vld1q_u8(qs + 32 * h + 16);
    for (int s = 0; s < 4; ++s) {
      q[8 * h + 2 * s] = vandq_u8(qn_shr(r0, 2 * s), m3);
      q[8 * h + 2 * s + 1] = vandq_u8(qn_shr(r1, 2 * s), m3);
    }
  }
}

struct DecQ2_K {
  using Block = BlockQ2_K;
  static constexpr DType kType = DType::kQ2_K;
  static constexpr bool kMins = true, kPairs = false;
  static void decode(const Block& b, SuperBlock& o) {
    uint8x16_t u[16];
    qn_unpack_2bit(b.qs, u);
    for (int g = 0; g < 16; ++g) o.q[g] = vreinterpretq_s8_u8(u[g]), o.sc[g] = b.scales[g] & 0x0F;
    const uint8x16_t mins = vshrq_n_u8(vld1q_u8(b.scales), 4);
    o.min0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mins)));
    o.min1 = vreinterpretq_s16_u16(vmovl_high_u8(mins));
    o.d = h2f(b.d), o.dmin = h2f(b.dmin);
  }
};

// Q3_K: (2 low bits | high bit << 2) - 4; the high bit of element 128h + 32s + l is bit 4h + s of
// hmask[l].
struct DecQ3_K {
  using Block = BlockQ3_K;
  static constexpr DType kType = DType::kQ3_K;
  static constexpr bool kMins = false, kPairs = false;
  static void decode(const Block& b, SuperBlock& o) {
    uint8x16_t u[16];
    qn_unpack_2bit(b.qs, u);
    const uint8x16_t hm0 = vld1q_u8(b.hmask), hm1 = vld1q_u8(b.hmask + 16), four = vdupq_n_u8(4);
    for (int k = 0; k < 8; ++k) {
      const uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1 << k));
      o.q[2 * k] = qn_s8(vorrq_u8(u[2 * k], vandq_u8(vtstq_u8(hm0, bit), four)), -4);
      o.q[2 * k + 1] = qn_s8(vorrq_u8(u[2 * k + 1], vandq_u8(vtstq_u8(hm1, bit), four)), -4);
    }
    for (int g = 0; g < 16; ++g) o.sc[g] = k3_scale(b.scales, g);
    o.d = h2f(b.d), o.dmin = 0.0f;
  }
};

// Q4_K / Q5_K: element 64j + l is the low (l < 32, sub-block 2j) or high nibble (sub-block 2j + 1)
// of qs[32j + l % 32]; Q5_K's fifth bit is bit 2j (low) / 2j + 1 (high) of qh[l % 32].
template <bool kFive>
struct DecQ45_K {
  using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  static constexpr DType kType = kFive ? DType::kQ5_K : DType::kQ4_K;
  static constexpr bool kMins = true, kPairs = true;  // scales per 32: groups 2j and 2j + 1 share one
  static void decode(const Block& b, SuperBlock& o) {
    const uint8x16_t low4 = vdupq_n_u8(0x0F), x10 = vdupq_n_u8(0x10);
    uint8x16_t h0 = vdupq_n_u8(0), h1 = vdupq_n_u8(0);
    if constexpr (kFive) h0 = vld1q_u8(b.qh), h1 = vld1q_u8(b.qh + 16);
    for (int j = 0; j < 4; ++j) {
      const uint8x16_t r0 = vld1q_u8(b.qs + 32 * j), r1 = vld1q_u8(b.qs + 32 * j + 16);
      uint8x16_t q0 = vandq_u8(r0, low4), q1 = vandq_u8(r1, low4);
      uint8x16_t q2 = vshrq_n_u8(r0, 4), q3 = vshrq_n_u8(r1, 4);
      if constexpr (kFive) {
        const uint8x16_t lo = vdupq_n_u8(static_cast<uint8_t>(1 << (2 * j)));
        const uint8x16_t hi = vdupq_n_u8(static_cast<uint8_t>(2 << (2 * j)));
        q0 = vorrq_u8(q0, vandq_u8(vtstq_u8(h0, lo), x10));
        q1 = vorrq_u8(q1, vandq_u8(vtstq_u8(h1, lo), x10));
        q2 = vorrq_u8(q2, vandq_u8(vtstq_u8(h0, hi), x10));
        q3 = vorrq_u8(q3, vandq_u8(vtstq_u8(h1, hi), x10));
      }
      o.q[4 * j] = vreinterpretq_s8_u8(q0), o.q[4 * j + 1] = vreinterpretq_s8_u8(q1);
      o.q[4 * j + 2] = vreinterpretq_s8_u8(q2), o.q[4 * j + 3] = vreinterpretq_s8_u8(q3);
    }
    alignas(16) int16_t mn16[16];
    for (int j = 0; j < 8; ++j) {
      int sc = 0, mn = 0;
      k4_scale_min(b.scales, j, sc, mn);
      o.sc[2 * j] = o.sc[2 * j + 1] = sc;
      mn16[2 * j] = mn16[2 * j + 1] = static_cast<int16_t>(mn);
    }
    o.min0 = vld1q_s16(mn16), o.min1 = vld1q_s16(mn16 + 8);
    o.d = h2f(b.d), o.dmin = h2f(b.dmin);
  }
};

// Q6_K: (4 low bits | 2 high bits << 4) - 32. Element 128h + 32s + l: low nibble (s < 2) or high
// nibble (s >= 2) of ql[64h + 32(s & 1) + l], high bits 2s of qh[32h + l].
struct DecQ6_K {
  using Block = BlockQ6_K;
  static constexpr DType kType = DType::kQ6_K;
  static constexpr bool kMins = false, kPairs = false;
  static void decode(const Block& b, SuperBlock& o) {
    const uint8x16_t low4 = vdupq_n_u8(0x0F), bits45 = vdupq_n_u8(0x30);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b.ql + 64 * h;
      const uint8x16_t hq[2] = {vld1q_u8(b.qh + 32 * h), vld1q_u8(b.qh + 32 * h + 16)};
      for (int s = 0; s < 4; ++s) {
        for (int half = 0; half < 2; ++half) {
          const uint8x16_t lb = vld1q_u8(ql + 32 * (s & 1) + 16 * half);
          const uint8x16_t low = s < 2 ? vandq_u8(lb, low4) : vshrq_n_u8(lb, 4);
          // bits 2s..2s+1 of qh moved to bits 4..5
          const uint8x16_t high = vandq_u8(vshlq_u8(hq[half], vdupq_n_s8(static_cast<int8_t>(4 - 2 * s))), bits45);
          o.q[8 * h + 2 * s + half] = qn_s8(vorrq_u8(low, high), -32);
        }
      }
    }
    for (int g = 0; g < 16; ++g) o.sc[g] = b.scales[g];
    o.d = h2f(b.d), o.dmin = 0.0f;
  }
};

// IQ4_XS: sub-block ib of 32 holds kIq4nlValues[nibble] (nibbles as Q4_0) times ls - 32.
struct DecIQ4_XS {
  using Block = BlockIQ4_XS;
  static constexpr DType kType = DType::kIQ4_XS;
  static constexpr bool kMins = false, kPairs = true;
  static void decode(const Block& b, SuperBlock& o) {
    const int8x16_t table = vld1q_s8(kIq4nlValues);
    for (int ib = 0; ib < 8; ++ib) {
      uint8x16_t lo, hi;
      qn_nibbles(b.qs + 16 * ib, lo, hi);
      o.q[2 * ib] = vqtbl1q_s8(table, lo), o.q[2 * ib + 1] = vqtbl1q_s8(table, hi);
      const int ls = ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((b.scales_h >> (2 * ib)) & 3) << 4);
      o.sc[2 * ib] = o.sc[2 * ib + 1] = ls - 32;
    }
    o.d = h2f(b.d), o.dmin = 0.0f;
  }
};

// Row . T tokens: x.d * (d * sum_g sc[g] * dot(q[g], x[g]) - dmin * sum_g min[g] * bsums[g]).
template <class Dec, int T>
inline void superblock_tile(const void* row, int64_t cols, const QBlockK* x, float* out) {
  const int64_t nb = cols / kQKBlock;
  const auto* w = static_cast<const typename Dec::Block*>(row);
  const int32x4_t zero = vdupq_n_s32(0);
  float32x4_t acc[T];
  float mins[T];
  for (int t = 0; t < T; ++t) acc[t] = vdupq_n_f32(0.0f), mins[t] = 0.0f;
  SuperBlock sb;
  for (int64_t b = 0; b < nb; ++b) {
    Dec::decode(w[b], sb);
    for (int t = 0; t < T; ++t) {
      const QBlockK& xb = x[t * nb + b];
      int32x4_t sumi = zero;
      if constexpr (Dec::kPairs) {
        for (int g = 0; g < 16; g += 2) {
          const int32x4_t p = vdotq_s32(vdotq_s32(zero, sb.q[g], vld1q_s8(xb.qs + 16 * g)), sb.q[g + 1],
                                        vld1q_s8(xb.qs + 16 * g + 16));
          sumi = vmlaq_n_s32(sumi, p, sb.sc[g]);
        }
      } else {
        for (int g = 0; g < 16; ++g) sumi = vmlaq_n_s32(sumi, vdotq_s32(zero, sb.q[g], vld1q_s8(xb.qs + 16 * g)), sb.sc[g]);
      }
      acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(sumi), sb.d * xb.d);
      if constexpr (Dec::kMins) {
        mins[t] += sb.dmin * xb.d * static_cast<float>(qn_bsums_dot(xb.bsums, sb.min0, sb.min1));
      }
    }
  }
  for (int t = 0; t < T; ++t) out[t] = vaddvq_f32(acc[t]) - mins[t];
}

// Kernel adapters for matmul_chunked.
template <class Dec>
struct SuperBlockKernel {
  using X = QBlockK;
  static constexpr DType kType = Dec::kType;
  static int64_t x_stride(int64_t cols) { return cols / kQKBlock; }
  template <int T>
  static void tile(const void* row, int64_t cols, const QBlockK* x, float* out) { superblock_tile<Dec, T>(row, cols, x, out); }
};
