// AVX2 Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS matmuls over Q8_K activations (included by kernels_avx2.cpp after
// kernels_quant_simd-inl.h, inside its anonymous namespace). One kernel per type serves one token
// (decode), a few tokens (a batched decode step) and the tiles of a prefill: each weight
// super-block is decoded once per pass over a row (nibbles, fifth/high bits and the per-sub-block
// int16 scale vectors: the packed scales unpacked one block ahead, their bit fields spread in
// general registers where that saves vector operations, each sub-block's scale broadcast by a
// shuffle) and shared by the T tokens of the pass; per token and 32 weights the work is maddubs,
// madd by the scale, add.
// The mins (Q4_K/Q5_K) and the -32 offset (Q6_K) come in through the activations' bsums with one
// madd per token and super-block, kept in vector accumulators (no horizontal sum per block).
// On 16 ymm registers the loop runs over pairs of sub-blocks so that only two weight vectors and
// their two scale vectors are live beside the T int32 sums and T float accumulators.
// Prefill calls go over chunks of rows that stay in L2 and take the tokens in tiles of kKTile.

// Shuffle indices that broadcast int16 lane j (of a 128-bit lane) to all 8 lanes: kBcast16[j].
alignas(32) inline constexpr int8_t kBcast16[8][32] = {
#define ANELM_B(j) {2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, \
                    2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, \
                    2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1}
    ANELM_B(0), ANELM_B(1), ANELM_B(2), ANELM_B(3), ANELM_B(4), ANELM_B(5), ANELM_B(6), ANELM_B(7)
#undef ANELM_B
};
// Q6_K: int16 lane 2s in the low 128-bit lane and 2s + 1 in the high one, broadcast: kPair16[s].
alignas(32) inline constexpr int8_t kPair16[4][32] = {
#define ANELM_P(s) {4 * s, 4 * s + 1, 4 * s, 4 * s + 1, 4 * s, 4 * s + 1, 4 * s, 4 * s + 1, 4 * s, 4 * s + 1, 4 * s, 4 * s + 1, \
                    4 * s, 4 * s + 1, 4 * s, 4 * s + 1, 4 * s + 2, 4 * s + 3, 4 * s + 2, 4 * s + 3, 4 * s + 2, 4 * s + 3,     \
                    4 * s + 2, 4 * s + 3, 4 * s + 2, 4 * s + 3, 4 * s + 2, 4 * s + 3, 4 * s + 2, 4 * s + 3, 4 * s + 2, 4 * s + 3}
    ANELM_P(0), ANELM_P(1), ANELM_P(2), ANELM_P(3)
#undef ANELM_P
};
// From the 8 Q4_K scales and 8 mins (bytes 0-7, 8-15 of both 128-bit lanes), as int16 lanes: scale j
// in every lane (kScale16[j]); min j twice, against bsums 2j and 2j + 1 (kMinPairs).
alignas(32) inline constexpr int8_t kScale16[8][32] = {
#define ANELM_S(j) {j, -1, j, -1, j, -1, j, -1, j, -1, j, -1, j, -1, j, -1, j, -1, j, -1, j, -1, j, -1, j, -1, j, -1, j, -1, j, -1}
    ANELM_S(0), ANELM_S(1), ANELM_S(2), ANELM_S(3), ANELM_S(4), ANELM_S(5), ANELM_S(6), ANELM_S(7)
#undef ANELM_S
};
alignas(32) inline constexpr int8_t kMinPairs[32] = {8,  -1, 8,  -1, 9,  -1, 9,  -1, 10, -1, 10, -1, 11, -1, 11, -1,
                                                     12, -1, 12, -1, 13, -1, 13, -1, 14, -1, 14, -1, 15, -1, 15, -1};

inline __m256i k2_shuffle(__m256i v, const int8_t* idx) {
  return _mm256_shuffle_epi8(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(idx)));
}
inline __m256i k2_dot(__m256i u, const int8_t* x, __m256i sc) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, qs_load(x)), sc);
}
// sum += a + b, kept in this order: GCC otherwise reassociates the int32 adds of a whole super-block
// into one tree at the end, with every product live at once (spilled: ~70 stack stores per block).
inline void k2_accumulate(__m256i& sum, __m256i a, __m256i b) {
  sum = _mm256_add_epi32(sum, _mm256_add_epi32(a, b));
  asm("" : "+x"(sum));
}

// Bit J (0..7) of every byte of v moved to bit P, other bits cleared. After a 16-bit shift bit P of
// each byte still comes from bit J of that same byte.
template <int J, int P>
inline __m256i k2_bit_to(__m256i v) {
  const __m256i m = _mm256_set1_epi8(static_cast<char>(1 << P));
  if constexpr (J < P) return _mm256_and_si256(_mm256_slli_epi16(v, P - J), m);
  else if constexpr (J == P) return _mm256_and_si256(v, m);
  else return _mm256_and_si256(_mm256_srli_epi16(v, J - P), m);
}

// Q4_K / Q5_K row . T tokens (token t's super-blocks at x + t * xs), out[t]. The packed scales are
// unpacked one block ahead, so that chain overlaps the previous block's dots instead of heading its
// own (9% on a one-token GEMV, Zen 5). Per token and block one hadd pairs the scaled sums with the
// mins' sums ([s s m m | s s m m], exact in int32), converted once and taken into one accumulator by
// [d d -dmin -dmin] (3% over two accumulators).
template <int T, bool kFifthBit>
inline void k2_q45_tile(const void* row, int64_t nb, const QBlockK* x, int64_t xs, float* out) {
  using Block = std::conditional_t<kFifthBit, BlockQ5_K, BlockQ4_K>;
  const auto* w = static_cast<const Block*>(row);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m128 neg_hi = _mm_castsi128_ps(_mm_setr_epi32(0, 0, INT32_MIN, INT32_MIN));
  __m256 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  // Block b's 8 scales and 8 mins (u8, in both 128-bit lanes: kScale16 picks a scale) and its mins
  // as int16 pairs (kMinPairs), unpacked one block ahead.
  auto unpack = [&](const Block& wb, __m256i& scales, __m256i& mins) {
    scales = _mm256_broadcastsi128_si256(qs_k4_scales_mins(wb.scales));
    mins = k2_shuffle(scales, kMinPairs);
  };
  __m256i scales_next, mins_next;
  unpack(w[0], scales_next, mins_next);
  for (int64_t b = 0; b < nb; ++b) {
    const Block& wb = w[b];
    const __m256i scales = scales_next, mins = mins_next;
    unpack(w[b + 1 < nb ? b + 1 : b], scales_next, mins_next);
    __m256i hb;
    if constexpr (kFifthBit) hb = qs_load(wb.qh);
    __m256i sumi[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i raw = qs_load(wb.qs + 32 * k);
      __m256i lo = _mm256_and_si256(raw, low4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
      if constexpr (kFifthBit) {
        switch (k) {  // sub-blocks 2k and 2k + 1: bits 2k and 2k + 1 of qh
          case 0: lo = _mm256_or_si256(lo, k2_bit_to<0, 4>(hb)); hi = _mm256_or_si256(hi, k2_bit_to<1, 4>(hb)); break;
          case 1: lo = _mm256_or_si256(lo, k2_bit_to<2, 4>(hb)); hi = _mm256_or_si256(hi, k2_bit_to<3, 4>(hb)); break;
          case 2: lo = _mm256_or_si256(lo, k2_bit_to<4, 4>(hb)); hi = _mm256_or_si256(hi, k2_bit_to<5, 4>(hb)); break;
          default: lo = _mm256_or_si256(lo, k2_bit_to<6, 4>(hb)); hi = _mm256_or_si256(hi, k2_bit_to<7, 4>(hb)); break;
        }
      }
      const __m256i slo = k2_shuffle(scales, kScale16[2 * k]), shi = k2_shuffle(scales, kScale16[2 * k + 1]);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int8_t* xq = x[t * xs + b].qs + 64 * k;
        k2_accumulate(sumi[t], k2_dot(lo, xq, slo), k2_dot(hi, xq + 32, shi));
      }
    }
    // [d, d, -dmin, -dmin] in both 128-bit lanes, against the hadd's [s s m m | s s m m].
    uint32_t d_dmin;
    std::memcpy(&d_dmin, &wb.d, 4);
    const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(d_dmin)));
    const __m128 g = _mm_xor_ps(_mm_permute_ps(dd, 0x50), neg_hi);
    const __m256 f = _mm256_set_m128(g, g);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const QBlockK& xb = x[t * xs + b];
      const __m256i m = _mm256_madd_epi16(qs_load(xb.bsums), mins);  // sum_j min_j * bsum pair j
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_hadd_epi32(sumi[t], m)), _mm256_mul_ps(f, _mm256_set1_ps(xb.d)), acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]);
}

// Q6_K row . T tokens: register 4h + s holds elements 128h + 32s .. + 32 (sub-blocks 8h + 2s in the
// low 128-bit lane, 8h + 2s + 1 in the high one); q used unsigned, the -32 via bsums in int32.
template <int T>
inline void k2_q6_tile(const void* row, int64_t nb, const QBlockK* x, int64_t xs, float* out) {
  const auto* w = static_cast<const BlockQ6_K*>(row);
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
  __m256 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6_K& wb = w[b];
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
    __m256i sumi[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      // 32 * sum_j sc_j * bsums_j, taken off up front (exact in int32).
      sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                 _mm256_slli_epi32(_mm256_madd_epi16(qs_load(x[t * xs + b].bsums), sc16), 5));
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i scales = h == 0 ? _mm256_permute4x64_epi64(sc16, 0x44) : _mm256_permute4x64_epi64(sc16, 0xEE);
      const __m256i l0 = qs_load(wb.ql + 64 * h), l1 = qs_load(wb.ql + 64 * h + 32);
      const __m256i hbits = qs_load(wb.qh + 32 * h);
#pragma GCC unroll 4
      for (int s = 0; s < 4; s += 2) {
        __m256i qa, qb;  // registers s and s + 1
        if (s == 0) {
          qa = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(hbits, 4), bits45));
          qb = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(hbits, 2), bits45));
        } else {
          qa = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(hbits, bits45));
          qb = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                               _mm256_and_si256(_mm256_srli_epi16(hbits, 2), bits45));
        }
        const __m256i sa = k2_shuffle(scales, kPair16[s]), sb = k2_shuffle(scales, kPair16[s + 1]);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const int8_t* xq = x[t * xs + b].qs + 128 * h + 32 * s;
          k2_accumulate(sumi[t], k2_dot(qa, xq, sa), k2_dot(qb, xq + 32, sb));
        }
      }
    }
    const float d = _cvtsh_ss(wb.d);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_set1_ps(d * x[t * xs + b].d), acc[t]);
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]);
}

// Q2_K / Q3_K: registers J and J + 1 (J = 4h + s, s even) of a super-block, elements 128h + 32s ..
// + 64: the 2-bit fields at bits 2s and 2s + 2 of qs[32h ..], for Q3_K with bits J and J + 1 of
// hmask as 4 (q 0..7, its -4 taken off through the bsums). Each register covers sub-blocks of 16
// 8h + 2s (low 128-bit lane) and + 1 (high lane): kPair16 picks their scales.
template <int T, bool kQ3, int J>
inline void k2_q23_pair(__m256i raw, __m256i hm, __m256i scales, const QBlockK* x, int64_t xs, int64_t b,
                        __m256i* sumi) {
  constexpr int kH = J / 4, kS = J % 4;
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256i qa = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * kS), m3);
  __m256i qb = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * kS + 2), m3);
  if constexpr (kQ3) {
    qa = _mm256_or_si256(qa, k2_bit_to<J, 2>(hm));
    qb = _mm256_or_si256(qb, k2_bit_to<J + 1, 2>(hm));
  } else {
    (void)hm;
  }
  const __m256i sa = k2_shuffle(scales, kPair16[kS]), sb = k2_shuffle(scales, kPair16[kS + 1]);
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    const int8_t* xq = x[t * xs + b].qs + 128 * kH + 32 * kS;
    k2_accumulate(sumi[t], k2_dot(qa, xq, sa), k2_dot(qb, xq + 32, sb));
  }
}

// Q3_K: the 12 packed bytes -> the 16 six-bit scales minus 32 as int16 lanes (k3_scale's order),
// built in general registers and moved in whole (no store and reload).
inline __m256i k2_q3_scales(const uint8_t* s12) {
  uint32_t a[3];
  std::memcpy(a, s12, 12);
  const uint32_t m4 = 0x0F0F0F0F, m2 = 0x03030303;
  const __m128i v = _mm_setr_epi32(static_cast<int>((a[0] & m4) | ((a[2] & m2) << 4)),
                                   static_cast<int>((a[1] & m4) | (((a[2] >> 2) & m2) << 4)),
                                   static_cast<int>(((a[0] >> 4) & m4) | (((a[2] >> 4) & m2) << 4)),
                                   static_cast<int>(((a[1] >> 4) & m4) | (((a[2] >> 6) & m2) << 4)));
  return _mm256_sub_epi16(_mm256_cvtepu8_epi16(v), _mm256_set1_epi16(32));
}

// Q2_K (d * (sc & 15) * q - dmin * (sc >> 4) per sub-block of 16) and Q3_K (d * sc * (q - 4)) row .
// T tokens. Q2_K's mins come in through the bsums on the same float chain as the products: a
// second chain per token would not leave registers for T = 4.
template <int T, bool kQ3>
inline void k2_q23_tile(const void* row, int64_t nb, const QBlockK* x, int64_t xs, float* out) {
  using Block = std::conditional_t<kQ3, BlockQ3_K, BlockQ2_K>;
  const auto* w = static_cast<const Block*>(row);
  __m256 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  // Q3_K: block b's scales, unpacked one block ahead (off the block's dependency chain).
  __m256i sc_next;
  if constexpr (kQ3) sc_next = k2_q3_scales(w[0].scales);
  for (int64_t b = 0; b < nb; ++b) {
    const Block& wb = w[b];
    __m256i sc16, mins16, hm, sumi[T];
    if constexpr (kQ3) {
      sc16 = sc_next;
      sc_next = k2_q3_scales(w[b + 1 < nb ? b + 1 : b].scales);
      hm = qs_load(wb.hmask);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {  // 4 * sum_j sc_j * bsums_j, taken off up front (exact in int32)
        sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                   _mm256_slli_epi32(_mm256_madd_epi16(qs_load(x[t * xs + b].bsums), sc16), 2));
      }
    } else {
      const __m256i raw = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
      sc16 = _mm256_and_si256(raw, _mm256_set1_epi16(0x0F));
      mins16 = _mm256_srli_epi16(raw, 4);
      hm = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
    }
    const __m256i scales_lo = _mm256_permute4x64_epi64(sc16, 0x44), scales_hi = _mm256_permute4x64_epi64(sc16, 0xEE);
    const __m256i raw0 = qs_load(wb.qs), raw1 = qs_load(wb.qs + 32);
    k2_q23_pair<T, kQ3, 0>(raw0, hm, scales_lo, x, xs, b, sumi);
    k2_q23_pair<T, kQ3, 2>(raw0, hm, scales_lo, x, xs, b, sumi);
    k2_q23_pair<T, kQ3, 4>(raw1, hm, scales_hi, x, xs, b, sumi);
    k2_q23_pair<T, kQ3, 6>(raw1, hm, scales_hi, x, xs, b, sumi);
    const float d = _cvtsh_ss(wb.d);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const QBlockK& xb = x[t * xs + b];
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_set1_ps(d * xb.d), acc[t]);
      if constexpr (!kQ3) {
        const __m256i m = _mm256_madd_epi16(qs_load(xb.bsums), mins16);
        acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(_cvtsh_ss(wb.dmin) * xb.d), acc[t]);
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]);
}

// IQ4_XS: the 8 sub-block scales (low 4 bits in the nibbles of scales_l, high 2 at bits 2ib of
// scales_h) minus 32, as 8 int16 lanes. The bit fields are spread to bytes in general registers (idle
// in these loops; no pdep, slow on Zen 2): 3 vector operations where unpacking in vector registers
// took 13.
inline __m128i k2_iq4xs_scales(const BlockIQ4_XS& wb) {
  uint32_t l;
  std::memcpy(&l, wb.scales_l, 4);
  uint64_t x = l, y = wb.scales_h;
  asm("" : "+r"(x), "+r"(y));  // kept scalar: GCC's SLP pass would vectorize it via memory
  x = (x | x << 16) & 0x0000FFFF0000FFFFULL;  // byte i of scales_l in 16-bit lane i
  x = (x | x << 8) & 0x00FF00FF00FF00FFULL;
  x = (x & 0x000F000F000F000FULL) | ((x << 4) & 0x0F000F000F000F00ULL);  // its nibbles: bytes 2i, 2i + 1
  y = (y | y << 24) & 0x000000FF000000FFULL;  // scales_h's two bytes: 32 bits apart
  y = (y | y << 12) & 0x000F000F000F000FULL;  // its four nibbles: 16 bits apart
  y = (y | y << 6) & 0x0303030303030303ULL;   // its eight 2-bit fields: one per byte
  const __m128i ls = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(x | y << 4)));
  return _mm_sub_epi16(ls, _mm_set1_epi16(32));
}

// IQ4_XS row . T tokens: each 32 bytes of qs are sub-blocks 2k and 2k + 1 (16 bytes each, low
// nibbles first), looked up in the level table and regrouped by lane into one register per
// sub-block; the signed levels multiply as |w| against x carrying w's sign (levels are nonzero,
// |x| <= 127).
template <int T>
inline void k2_iq4xs_tile(const void* row, int64_t nb, const QBlockK* x, int64_t xs, float* out) {
  const auto* w = static_cast<const BlockIQ4_XS*>(row);
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  // Block b's scales, unpacked one block ahead: off the block's dependency chain.
  __m128i scales_next = k2_iq4xs_scales(w[0]);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIQ4_XS& wb = w[b];
    const __m256i scales = _mm256_broadcastsi128_si256(scales_next);
    scales_next = k2_iq4xs_scales(w[b + 1 < nb ? b + 1 : b]);
    __m256i sumi[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i raw = qs_load(wb.qs + 32 * k);
      const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(raw, low4));
      const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
      const __m256i wa = _mm256_permute2x128_si256(lo, hi, 0x20), wb2 = _mm256_permute2x128_si256(lo, hi, 0x31);
      const __m256i ua = _mm256_abs_epi8(wa), ub = _mm256_abs_epi8(wb2);
      const __m256i sa = k2_shuffle(scales, kBcast16[2 * k]), sb = k2_shuffle(scales, kBcast16[2 * k + 1]);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int8_t* xq = x[t * xs + b].qs + 64 * k;
        k2_accumulate(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(ua, _mm256_sign_epi8(qs_load(xq), wa)), sa),
                      _mm256_madd_epi16(_mm256_maddubs_epi16(ub, _mm256_sign_epi8(qs_load(xq + 32), wb2)), sb));
      }
    }
    const float d = _cvtsh_ss(wb.d);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_set1_ps(d * x[t * xs + b].d), acc[t]);
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) out[t] = hsum256(acc[t]);
}

// Tokens per pass over a row in a prefill tile, and the largest count served in one pass
// (a batched decode step of up to kKFewTokens sequences decodes each weight block once).
constexpr int kKTile = 4;
constexpr int kKFewTokens = 8;

// Y[i][r] for rows [r0, r1): n <= kKFewTokens in one pass per row; more in row chunks x token tiles.
template <class K>
void k2_matmul(const void* w, int64_t cols, const float*, const void* xq, int n, float* __restrict y, int64_t ldy,
               int64_t r0, int64_t r1) {
  const auto* x = static_cast<const QBlockK*>(xq);
  const auto* base = static_cast<const uint8_t*>(w);
  const int64_t nb = cols / kQKBlock, rb = dtype_row_bytes(K::kType, cols), bb = dtype_row_bytes(K::kType, kQKBlock);
  auto pass = [&](int t0, int nt, int64_t a, int64_t e) {
    with_token_count(nt, [&](auto T) {
      sliced_rows<T>(nb, blocks_per_l1_slice(nb, T * sizeof(QBlockK)), y + t0 * ldy, ldy, a, e,
                     [&](int64_t r, int64_t b0, int64_t b1, float* out) {
                       K::template tile<T>(base + r * rb + b0 * bb, b1 - b0, x + t0 * nb + b0, nb, out);
                     });
    });
  };
  if (n <= kKFewTokens) {
    pass(0, n, r0, r1);
    return;
  }
  chunked_token_passes<kKTile>(n, r0, r1, rows_per_l2_chunk(rb), pass);
}

// k2_matmul's kernels: the block type and its tile (the tile's template arguments after the comma).
#define ANELM_K2_KERNEL(Name, kT, ...)                                                          \
  struct Name {                                                                                 \
    static constexpr DType kType = kT;                                                          \
    template <int T>                                                                            \
    static void tile(const void* row, int64_t nb, const QBlockK* x, int64_t xs, float* out) {   \
      __VA_ARGS__(row, nb, x, xs, out);                                                         \
    }                                                                                           \
  };
ANELM_K2_KERNEL(Q2_KKernel2, DType::kQ2_K, k2_q23_tile<T, false>)
ANELM_K2_KERNEL(Q3_KKernel2, DType::kQ3_K, k2_q23_tile<T, true>)
ANELM_K2_KERNEL(Q4_KKernel2, DType::kQ4_K, k2_q45_tile<T, false>)
ANELM_K2_KERNEL(Q5_KKernel2, DType::kQ5_K, k2_q45_tile<T, true>)
ANELM_K2_KERNEL(Q6_KKernel2, DType::kQ6_K, k2_q6_tile<T>)
ANELM_K2_KERNEL(IQ4_XSKernel2, DType::kIQ4_XS, k2_iq4xs_tile<T>)
#undef ANELM_K2_KERNEL
