// Q2_K..Q6_K, IQ4_XS (over QBlockK activations) and Q4_1, Q5_0, Q5_1, IQ4_NL (over QBlock8) row
// kernels on 256-bit vectors, written once and included by kernels_avx512.cpp (defines
// ANELM_QUANT_VNNI: vpdpbusd, and mask moves for the Q5_0 high bits), whose table runs these tiles,
// and by kernels_avx2.cpp (maddubs + madd), whose table has a faster kernel for every type and uses
// only the block helpers (qs_load, qs_nibbles, qs_fives, qs_iq4_levels, qs_k4_scales_mins,
// qs_hsum_epi32). Each weight (super-)block is decoded to unsigned bytes once and shared by the T
// tokens of a tile; integer dots per sub-block are scaled in int32, mins and offsets are folded in
// through the activation sums (as llama.cpp).
// Include inside the per-ISA anonymous namespace after hsum256. No include guard on purpose.

#if defined(ANELM_QUANT_VNNI)
// Per-lane sums of 4 u8 * s8 products.
inline __m256i qs_dot(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }
// Scale vector for qs_dot_scaled: `a` on elements 0..15 of the 32, `b` on 16..31.
inline __m256i qs_scales(int a, int b) { return _mm256_set_m128i(_mm_set1_epi32(b), _mm_set1_epi32(a)); }
inline __m256i qs_dot_scaled(__m256i u, __m256i s, __m256i sc) { return _mm256_mullo_epi32(qs_dot(u, s), sc); }
// 0x10 in byte j where bit j of `bits` is set.
inline __m256i qs_bits_0x10(uint32_t bits) { return _mm256_maskz_mov_epi8(bits, _mm256_set1_epi8(0x10)); }
#else
// u8 * s8 pairs stay within int16 here: u <= 63 and |s| <= 127 (63 * 127 * 2 < 32767).
inline __m256i qs_dot(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}
inline __m256i qs_scales(int a, int b) { return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(b)), _mm_set1_epi16(static_cast<short>(a))); }
inline __m256i qs_dot_scaled(__m256i u, __m256i s, __m256i sc) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), sc); }
inline __m256i qs_bits_0x10(uint32_t bits) {
  // Byte j takes byte j/8 of `bits` (shuffles stay within 128-bit lanes; both lanes hold all 4).
  const __m256i idx = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), idx);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(0x10));
}
#endif

inline int32_t qs_hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

inline __m256i qs_load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The 32 nibbles of 16 bytes, low nibbles first: the bytes loaded into both 128-bit lanes (a load,
// no shuffle) and the high lane's dwords shifted right by 4, so each byte's high nibble lands in its
// own low bits (what comes in from the next byte is masked off). Splitting 128-bit halves and
// inserting one took two shuffle-port operations per block, which bounded the few-token kernels.
inline __m256i qs_nibbles(const uint8_t* qs) {
  const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  return _mm256_and_si256(_mm256_srlv_epi32(raw, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0F));
}

// Q5_0 / Q5_1: the 32 values of a block as u8 0..31, the nibbles with their fifth bits (qh, 4 bytes).
inline __m256i qs_fives(const uint8_t* qs, const uint8_t* qh4) {
  uint32_t qh;
  std::memcpy(&qh, qh4, 4);
  return _mm256_or_si256(qs_nibbles(qs), qs_bits_0x10(qh));
}

// Q4_K / Q5_K: the 12 packed scale bytes -> bytes 0..7 = the 8 six-bit scales, 8..15 = the 8 mins,
// unpacked in general registers (idle in the K-quant loops) and moved in two pieces: 2-3 vector
// operations where unpacking in vector registers took 11, on the ports a one-token GEMV runs out of.
// The AVX2 tile unpacks a block ahead, which hides the longer latency (Zen 5, forced avx2, one token:
// 0.82x the time).
inline __m128i qs_k4_scales_mins(const uint8_t* s12) {
  uint32_t a0, a1, a2;
  std::memcpy(&a0, s12, 4);
  std::memcpy(&a1, s12 + 4, 4);
  std::memcpy(&a2, s12 + 8, 4);
  asm("" : "+r"(a0), "+r"(a1), "+r"(a2));  // kept scalar: GCC's SLP pass would vectorize it via memory
  const uint32_t m6 = 0x3F3F3F3F, m4 = 0x0F0F0F0F, m2 = 0x03030303;
  const uint64_t sc = (a0 & m6) | static_cast<uint64_t>((a2 & m4) | (((a0 >> 6) & m2) << 4)) << 32;
  const uint64_t mn = (a1 & m6) | static_cast<uint64_t>(((a2 >> 4) & m4) | (((a1 >> 6) & m2) << 4)) << 32;
  return _mm_set_epi64x(static_cast<int64_t>(mn), static_cast<int64_t>(sc));
}

// Byte mask of the bytes of v that have bit `bit` set, as `val` there and 0 elsewhere.
inline __m256i qs_bit_to(__m256i v, int bit, int val) {
  const __m256i b = _mm256_set1_epi8(static_cast<char>(1 << bit));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, b), b), _mm256_set1_epi8(static_cast<char>(val)));
}

// Q4_K / Q5_K row . T tokens: value = d * sc * q - dmin * m, q a nibble (Q5_K: plus a fifth bit,
// bit 2j / 2j + 1 of qh[l] for sub-blocks 2j / 2j + 1); the mins via the activations' bsums.
template <int T, class Block>
inline void q45_K_tile(const void* row, int64_t cols, const QBlockK* x, float* out) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  const int64_t nb = cols / kQKBlock;
  const auto* w = static_cast<const Block*>(row);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[T];
  float mins[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps(), mins[t] = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const Block& wb = w[b];
    int sc[8], mn[8];
    alignas(32) int16_t mn16[16];
    for (int j = 0; j < 8; ++j) {
      k4_scale_min(wb.scales, j, sc[j], mn[j]);
      mn16[2 * j] = mn16[2 * j + 1] = static_cast<int16_t>(mn[j]);
    }
    const __m256i mins16 = _mm256_load_si256(reinterpret_cast<const __m256i*>(mn16));
    __m256i q[8];
    __m256i hb = _mm256_setzero_si256();
    if constexpr (kFifthBit) hb = qs_load(wb.qh);
    for (int j = 0; j < 4; ++j) {
      const __m256i raw = qs_load(wb.qs + 32 * j);
      q[2 * j] = _mm256_and_si256(raw, low4);
      q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
      if constexpr (kFifthBit) {
        q[2 * j] = _mm256_or_si256(q[2 * j], qs_bit_to(hb, 2 * j, 0x10));
        q[2 * j + 1] = _mm256_or_si256(q[2 * j + 1], qs_bit_to(hb, 2 * j + 1, 0x10));
      }
    }
    const float d = _cvtsh_ss(wb.d), dmin = _cvtsh_ss(wb.dmin);
    for (int t = 0; t < T; ++t) {
      const QBlockK& xb = x[t * nb + b];
      __m256i sumi = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) sumi = _mm256_add_epi32(sumi, qs_dot_scaled(q[j], qs_load(xb.qs + 32 * j), qs_scales(sc[j], sc[j])));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(d * xb.d), acc[t]);
      mins[t] += dmin * xb.d * static_cast<float>(qs_hsum_epi32(_mm256_madd_epi16(qs_load(xb.bsums), mins16)));
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]) - mins[t];
}
template <int T>
inline void q4_K_tile(const void* row, int64_t cols, const QBlockK* x, float* out) { q45_K_tile<T, BlockQ4_K>(row, cols, x, out); }
template <int T>
inline void q5_K_tile(const void* row, int64_t cols, const QBlockK* x, float* out) { q45_K_tile<T, BlockQ5_K>(row, cols, x, out); }

// Q6_K row . T tokens: value = d * sc * (q - 32), q 6 bits used unsigned; the -32 via bsums.
template <int T>
inline void q6_K_tile(const void* row, int64_t cols, const QBlockK* x, float* out) {
  const int64_t nb = cols / kQKBlock;
  const auto* w = static_cast<const BlockQ6_K*>(row);
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6_K& wb = w[b];
    __m256i q[8], scv[8];  // q[4h + s]: elements 128h + 32s .. + 32
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = qs_load(wb.ql + 64 * h), l1 = qs_load(wb.ql + 64 * h + 32);
      const __m256i hb = qs_load(wb.qh + 32 * h);
      q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), bits45));
      q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), bits45));
      q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(hb, bits45));
      q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                                     _mm256_and_si256(_mm256_srli_epi16(hb, 2), bits45));
    }
    for (int k = 0; k < 8; ++k) scv[k] = qs_scales(wb.scales[2 * k], wb.scales[2 * k + 1]);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
    const float d = _cvtsh_ss(wb.d);
    for (int t = 0; t < T; ++t) {
      const QBlockK& xb = x[t * nb + b];
      __m256i sumi = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k) sumi = _mm256_add_epi32(sumi, qs_dot_scaled(q[k], qs_load(xb.qs + 32 * k), scv[k]));
      // sum_j sc_j * bsums_j * 32, subtracted in lane 0 (exact in int32).
      const int32_t off = 32 * qs_hsum_epi32(_mm256_madd_epi16(qs_load(xb.bsums), sc16));
      sumi = _mm256_sub_epi32(sumi, _mm256_zextsi128_si256(_mm_cvtsi32_si128(off)));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(d * xb.d), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]);
}

// Q5_0 row . T tokens of QBlock8: (nibble | bit << 4) as u8 times x, minus 16 * sum(x).
template <int T>
inline void q5_0_tile(const void* row, int64_t cols, const QBlock8* x, float* out) {
  const int64_t nb = cols / kQBlock;
  const auto* w = static_cast<const BlockQ5_0*>(row);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i wq = qs_fives(w[b].qs, w[b].qh);
    const float d = _cvtsh_ss(w[b].d);
    for (int t = 0; t < T; ++t) {
      const QBlock8& xb = x[t * nb + b];
      __m256i dot = qs_dot(wq, qs_load(xb.qs));
      dot = _mm256_add_epi32(dot, _mm256_zextsi128_si256(_mm_cvtsi32_si128(-16 * xb.sum)));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * xb.d), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]);
}


// Signed weights w (|w| <= 127) times x: |w| as u8 against x carrying w's sign.
inline __m256i qs_dot_signed(__m256i w, __m256i x) { return qs_dot(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)); }
inline __m256i qs_dot_signed_scaled(__m256i w, __m256i x, __m256i sc) {
  return qs_dot_scaled(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w), sc);
}

// IQ4 nibbles of 16 bytes -> 32 signed levels (low nibbles first).
inline __m256i qs_iq4_levels(const uint8_t* qs) {
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
  return _mm256_shuffle_epi8(table, qs_nibbles(qs));
}

// Q4_1 / Q5_1 row . T tokens of QBlock8: d * dot(q, x) + m * sum(x) per block.
template <bool kFive, int T>
inline void q41_51_tile(const void* row, int64_t cols, const QBlock8* x, float* out) {
  const int64_t nb = cols / kQBlock;
  const auto* w1 = static_cast<const BlockQ4_1*>(row);
  const auto* w5 = static_cast<const BlockQ5_1*>(row);
  __m256 acc[T];
  float mins[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps(), mins[t] = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    __m256i wq;
    float d, m;
    if constexpr (kFive) {
      wq = qs_fives(w5[b].qs, w5[b].qh);
      d = _cvtsh_ss(w5[b].d), m = _cvtsh_ss(w5[b].m);
    } else {
      wq = qs_nibbles(w1[b].qs);
      d = _cvtsh_ss(w1[b].d), m = _cvtsh_ss(w1[b].m);
    }
    for (int t = 0; t < T; ++t) {
      const QBlock8& xb = x[t * nb + b];
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(qs_dot(wq, qs_load(xb.qs))), _mm256_set1_ps(d * xb.d), acc[t]);
      mins[t] += m * xb.d * static_cast<float>(xb.sum);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]) + mins[t];
}

template <int T>
inline void iq4_nl_tile(const void* row, int64_t cols, const QBlock8* x, float* out) {
  const int64_t nb = cols / kQBlock;
  const auto* w = static_cast<const BlockIQ4_NL*>(row);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i wq = qs_iq4_levels(w[b].qs);
    const float d = _cvtsh_ss(w[b].d);
    for (int t = 0; t < T; ++t) {
      const QBlock8& xb = x[t * nb + b];
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(qs_dot_signed(wq, qs_load(xb.qs))), _mm256_set1_ps(d * xb.d), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]);
}

template <int T>
inline void iq4_xs_tile(const void* row, int64_t cols, const QBlockK* x, float* out) {
  const int64_t nb = cols / kQKBlock;
  const auto* w = static_cast<const BlockIQ4_XS*>(row);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIQ4_XS& wb = w[b];
    __m256i q[8], scv[8];
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((wb.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((wb.scales_h >> (2 * ib)) & 3) << 4);
      q[ib] = qs_iq4_levels(wb.qs + 16 * ib);
      scv[ib] = qs_scales(ls - 32, ls - 32);
    }
    const float d = _cvtsh_ss(wb.d);
    for (int t = 0; t < T; ++t) {
      const QBlockK& xb = x[t * nb + b];
      __m256i sumi = _mm256_setzero_si256();
      for (int ib = 0; ib < 8; ++ib) sumi = _mm256_add_epi32(sumi, qs_dot_signed_scaled(q[ib], qs_load(xb.qs + 32 * ib), scv[ib]));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(d * xb.d), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]);
}

// Q2_K / Q3_K low bits: q[4h + s] = bits 2s of qs[32h .. 32h + 32) (elements 128h + 32s ..).
inline void qs_unpack_2bit(const uint8_t* qs, __m256i* q) {
  const __m256i m3 = _mm256_set1_epi8(3);
  for (int h = 0; h < 2; ++h) {
    const __m256i raw = qs_load(qs + 32 * h);
    for (int s = 0; s < 4; ++s) q[4 * h + s] = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * s), m3);
  }
}

// Q2_K row . T tokens: d * (sc & 15) * q - dmin * (sc >> 4) per sub-block of 16.
template <int T>
inline void q2_K_tile(const void* row, int64_t cols, const QBlockK* x, float* out) {
  const int64_t nb = cols / kQKBlock;
  const auto* w = static_cast<const BlockQ2_K*>(row);
  __m256 acc[T];
  float mins[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps(), mins[t] = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ2_K& wb = w[b];
    __m256i q[8], scv[8];
    qs_unpack_2bit(wb.qs, q);
    for (int k = 0; k < 8; ++k) scv[k] = qs_scales(wb.scales[2 * k] & 0x0F, wb.scales[2 * k + 1] & 0x0F);
    const __m256i raw = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
    const __m256i mins16 = _mm256_srli_epi16(raw, 4);
    const float d = _cvtsh_ss(wb.d), dmin = _cvtsh_ss(wb.dmin);
    for (int t = 0; t < T; ++t) {
      const QBlockK& xb = x[t * nb + b];
      __m256i sumi = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k) sumi = _mm256_add_epi32(sumi, qs_dot_scaled(q[k], qs_load(xb.qs + 32 * k), scv[k]));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(d * xb.d), acc[t]);
      mins[t] += dmin * xb.d * static_cast<float>(qs_hsum_epi32(_mm256_madd_epi16(qs_load(xb.bsums), mins16)));
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]) - mins[t];
}

// Q3_K row . T tokens: q + 4 * high bit (0..7) used unsigned, the -4 folded in through bsums.
template <int T>
inline void q3_K_tile(const void* row, int64_t cols, const QBlockK* x, float* out) {
  const int64_t nb = cols / kQKBlock;
  const auto* w = static_cast<const BlockQ3_K*>(row);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ3_K& wb = w[b];
    __m256i q[8], scv[8];
    qs_unpack_2bit(wb.qs, q);
    const __m256i hm = qs_load(wb.hmask);
    alignas(32) int16_t sc16[16];
    for (int j = 0; j < 16; ++j) sc16[j] = static_cast<int16_t>(k3_scale(wb.scales, j));
    for (int k = 0; k < 8; ++k) {
      q[k] = _mm256_or_si256(q[k], qs_bit_to(hm, k, 4));
      scv[k] = qs_scales(sc16[2 * k], sc16[2 * k + 1]);
    }
    const __m256i scales16 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sc16));
    const float d = _cvtsh_ss(wb.d);
    for (int t = 0; t < T; ++t) {
      const QBlockK& xb = x[t * nb + b];
      __m256i sumi = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k) sumi = _mm256_add_epi32(sumi, qs_dot_scaled(q[k], qs_load(xb.qs + 32 * k), scv[k]));
      const int32_t off = 4 * qs_hsum_epi32(_mm256_madd_epi16(qs_load(xb.bsums), scales16));
      sumi = _mm256_sub_epi32(sumi, _mm256_zextsi128_si256(_mm_cvtsi32_si128(off)));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(d * xb.d), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]);
}

// Kernel adapters for the per-ISA matmul entry (tiles of T tokens; rows<R> for the AVX-512 GEMV).
template <DType kT, class XBlock, void (*Tile1)(const void*, int64_t, const XBlock*, float*)>
struct QuantKernelBase {
  using X = XBlock;
  using WType = void;
  static constexpr DType kType = kT;
  static constexpr bool kFloat = false;
  static int64_t x_stride(int64_t cols) { return cols / dtype_block_elems(kT); }
  template <int R>
  static void rows(const void* const* r, int64_t cols, const X* x, float* out, int64_t) {
    for (int i = 0; i < R; ++i) Tile1(r[i], cols, x, out + i);
  }
};
struct Q4_KKernel : QuantKernelBase<DType::kQ4_K, QBlockK, q4_K_tile<1>> {
  template <int T>
  static void tile(const void* row, int64_t cols, const QBlockK* x, float* out) { q4_K_tile<T>(row, cols, x, out); }
};
struct Q6_KKernel : QuantKernelBase<DType::kQ6_K, QBlockK, q6_K_tile<1>> {
  template <int T>
  static void tile(const void* row, int64_t cols, const QBlockK* x, float* out) { q6_K_tile<T>(row, cols, x, out); }
};
struct Q5_0Kernel : QuantKernelBase<DType::kQ5_0, QBlock8, q5_0_tile<1>> {
  template <int T>
  static void tile(const void* row, int64_t cols, const QBlock8* x, float* out) { q5_0_tile<T>(row, cols, x, out); }
};

#define ANELM_QUANT_KERNEL(Name, kT, XBlock, tile_fn)                                          \
  struct Name : QuantKernelBase<kT, XBlock, tile_fn<1>> {                                      \
    template <int T>                                                                         \
    static void tile(const void* row, int64_t cols, const XBlock* x, float* out) {           \
      tile_fn<T>(row, cols, x, out);                                                         \
    }                                                                                        \
  };
template <int T> inline void q4_1_tile(const void* r, int64_t c, const QBlock8* x, float* o) { q41_51_tile<false, T>(r, c, x, o); }
template <int T> inline void q5_1_tile(const void* r, int64_t c, const QBlock8* x, float* o) { q41_51_tile<true, T>(r, c, x, o); }
ANELM_QUANT_KERNEL(Q4_1Kernel, DType::kQ4_1, QBlock8, q4_1_tile)
ANELM_QUANT_KERNEL(Q5_1Kernel, DType::kQ5_1, QBlock8, q5_1_tile)
ANELM_QUANT_KERNEL(IQ4_NLKernel, DType::kIQ4_NL, QBlock8, iq4_nl_tile)
ANELM_QUANT_KERNEL(IQ4_XSKernel, DType::kIQ4_XS, QBlockK, iq4_xs_tile)
ANELM_QUANT_KERNEL(Q2_KKernel, DType::kQ2_K, QBlockK, q2_K_tile)
ANELM_QUANT_KERNEL(Q3_KKernel, DType::kQ3_K, QBlockK, q3_K_tile)
ANELM_QUANT_KERNEL(Q5_KKernel, DType::kQ5_K, QBlockK, q5_K_tile)
#undef ANELM_QUANT_KERNEL

// Sets the table slots of every block type above.
template <template <class> class Impl>
void fill_quant_simd(KernelTable& t) {
  t.matmul[dtype_index(DType::kQ4_1)] = Impl<Q4_1Kernel>::fn;
  t.matmul[dtype_index(DType::kQ5_0)] = Impl<Q5_0Kernel>::fn;
  t.matmul[dtype_index(DType::kQ5_1)] = Impl<Q5_1Kernel>::fn;
  t.matmul[dtype_index(DType::kIQ4_NL)] = Impl<IQ4_NLKernel>::fn;
  t.matmul[dtype_index(DType::kQ2_K)] = Impl<Q2_KKernel>::fn;
  t.matmul[dtype_index(DType::kQ3_K)] = Impl<Q3_KKernel>::fn;
  t.matmul[dtype_index(DType::kQ4_K)] = Impl<Q4_KKernel>::fn;
  t.matmul[dtype_index(DType::kQ5_K)] = Impl<Q5_KKernel>::fn;
  t.matmul[dtype_index(DType::kQ6_K)] = Impl<Q6_KKernel>::fn;
  t.matmul[dtype_index(DType::kIQ4_XS)] = Impl<IQ4_XSKernel>::fn;
}
