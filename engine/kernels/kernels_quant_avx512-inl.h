// AVX-512 decode (GEMV) kernels for block types whose 256-bit tiles (kernels_quant_simd-inl.h) leave
// bandwidth unused: R rows share each activation load, two blocks per zmm, rows R ahead prefetched
// (the q4_0_rows2 pattern). Included by kernels_avx512.cpp after kernels_quant_simd-inl.h.

// An odd last block: out of line, so that its 256-bit constants do not take registers (and the
// register allocation) from the loop below (inlined, a GEMV of Phi-4-mini's o rows ran 12% slower).
[[gnu::noinline]] inline float q5_0_last_block(const void* block, const QBlock8* x) {
  float out;
  q5_0_tile<1>(block, kQBlock, x, &out);
  return out;
}

// Q5_0 rows . one Q8 activation row: (nibble | bit << 4) as u8 times x, -16 * sum(x) in the
// accumulator's first lane of each block; the fifth bits of both blocks come as one byte mask.
template <int R>
inline void q5_0_rows2(const void* const* rows, int64_t cols, const QBlock8* x, float* out, int64_t row_bytes) {
  const int64_t nb = cols / kQBlock;
  const __m512i low4 = _mm512_set1_epi8(0x0F), bit5 = _mm512_set1_epi8(0x10);
  __m512 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const __m512i xq = _mm512_inserti64x4(_mm512_castsi256_si512(qs_load(x[b].qs)), qs_load(x[b + 1].qs), 1);
    const __m512 dx = _mm512_insertf32x8(_mm512_set1_ps(x[b].d), _mm256_set1_ps(x[b + 1].d), 1);
    const __m512i init = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, -16 * x[b + 1].sum, 0, 0, 0, 0, 0, 0, 0, -16 * x[b].sum);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const BlockQ5_0* w = static_cast<const BlockQ5_0*>(rows[r]) + b;
      _mm_prefetch(reinterpret_cast<const char*>(w) + kPrefetchAhead * R * row_bytes, _MM_HINT_T0);
      const __m128i raw0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[0].qs));
      const __m128i raw1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[1].qs));
      const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(raw0, raw0)), _mm256_set_m128i(raw1, raw1), 1);
      uint32_t h0, h1;
      std::memcpy(&h0, w[0].qh, 4);
      std::memcpy(&h1, w[1].qh, 4);
      const __mmask64 hm = static_cast<__mmask64>(h0) | (static_cast<__mmask64>(h1) << 32);
      // 128-bit lanes 1 and 3 take the high nibbles; the fifth bits OR in as 0x10.
      const __m512i wq = _mm512_or_si512(_mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4), low4),
                                         _mm512_maskz_mov_epi8(hm, bit5));
      const __m512i dot = _mm512_dpbusd_epi32(init, wq, xq);
      const __m256i dh = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(static_cast<short>(w[0].d))),
                                                 _mm_set1_epi16(static_cast<short>(w[1].d)), 1);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(_mm512_cvtph_ps(dh), dx), acc[r]);
    }
  }
  float tail[R] = {};
  if (b < nb) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) tail[r] = q5_0_last_block(static_cast<const BlockQ5_0*>(rows[r]) + b, x + b);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]) + tail[r];
}

// Q5_0 block pair as signed weights (q - 16) for the packed-pair prefill (gemm_pairs).
struct PairQ5_0 {
  static constexpr DType kType = DType::kQ5_0;
  static void pair(const void* row, int64_t p, __m512i& wq, __m512& dw) {
    const BlockQ5_0* w = static_cast<const BlockQ5_0*>(row) + 2 * p;
    const __m128i raw0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[0].qs));
    const __m128i raw1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[1].qs));
    const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(raw0, raw0)), _mm256_set_m128i(raw1, raw1), 1);
    uint32_t h0, h1;
    std::memcpy(&h0, w[0].qh, 4);
    std::memcpy(&h1, w[1].qh, 4);
    const __mmask64 hm = static_cast<__mmask64>(h0) | (static_cast<__mmask64>(h1) << 32);
    const __m512i q = _mm512_or_si512(_mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4), _mm512_set1_epi8(0x0F)),
                                      _mm512_maskz_mov_epi8(hm, _mm512_set1_epi8(0x10)));
    wq = _mm512_sub_epi8(q, _mm512_set1_epi8(16));
    dw = _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(static_cast<short>(w[0].d))),
                                                 _mm_set1_epi16(static_cast<short>(w[1].d)), 1));
  }
};

struct LaneQ5_0;
struct LaneIQ4_NL;
struct Q5_0Kernel512 : Q5_0Kernel {
  using PairDec = PairQ5_0;
  using LaneDec = LaneQ5_0;
  template <int R>
  static void rows(const void* const* r, int64_t cols, const QBlock8* x, float* out, int64_t rb) {
    q5_0_rows2<R>(r, cols, x, out, rb);
  }
};

struct IQ4_NLKernel512 : IQ4_NLKernel {
  using LaneDec = LaneIQ4_NL;
};

// Two 32-byte halves as one zmm.
inline __m512i qz_pair(const void* lo, const void* hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(qs_load(lo)), qs_load(hi), 1);
}

// int16 scales for qz_dot4_scaled's packed sums: in every 128-bit lane k, words 0-3 take scale
// lo[k] and words 4-7 hi[k] (lane k of the first and of the second packed zmm).
inline __m512i qz_pack_scales(__m512i sc16, const int (&lo)[4], const int (&hi)[4]) {
  auto lane = [&](int k) {
    const short a = static_cast<short>(lo[k]), b = static_cast<short>(hi[k]);
    return _mm_set_epi16(b, b, b, b, a, a, a, a);
  };
  const __m512i idx = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(lane(1), lane(0))),
                                         _mm256_set_m128i(lane(3), lane(2)), 1);
  return _mm512_permutexvar_epi16(idx, sc16);
}

// sum over lanes of scale * (u . s) for four zmm of unsigned weights u (<= 63) and signed s: each
// vpdpbusd's 4-element sums (|sum| <= 4 * 63 * 127 < 2^15) pack to int16 two zmm at a time and take
// their sub-block scales (sc01, sc23, from qz_pack_scales) in one vpmaddwd / vpdpwssd: 6 multiplies
// and 2 scale permutes per 256 elements, where vpmaddubsw + a scaling vpmaddwd per zmm took 8 and 4.
inline __m512i qz_dot4_scaled(const __m512i (&u)[4], const __m512i (&s)[4], __m512i sc01, __m512i sc23) {
  const __m512i z = _mm512_setzero_si512();
  const __m512i p01 = _mm512_packs_epi32(_mm512_dpbusd_epi32(z, u[0], s[0]), _mm512_dpbusd_epi32(z, u[1], s[1]));
  const __m512i p23 = _mm512_packs_epi32(_mm512_dpbusd_epi32(z, u[2], s[2]), _mm512_dpbusd_epi32(z, u[3], s[3]));
  return _mm512_dpwssd_epi32(_mm512_madd_epi16(p01, sc01), p23, sc23);
}

// A Q4_K / Q5_K weight super-block decoded once for qz_dot4_scaled: its nibbles (and fifth bits) in
// the activations' order (low nibbles: sub-blocks 0, 2 | 4, 6; high: 1, 3 | 5, 7), their packed
// scales, the 8 mins as int16 and (d, dmin) as floats in one conversion.
template <class Block>
struct K45Block {
  __m512i q[4], sc01, sc23;
  __m128i mins8;
  __m128 dd;  // d, dmin, 0, 0

  explicit K45Block(const Block& w) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m128i sm = qs_k4_scales_mins(w.scales);
    const __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(sm));
    mins8 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
    const __m512i z0 = _mm512_loadu_si512(w.qs), z1 = _mm512_loadu_si512(w.qs + 64);
    q[0] = _mm512_and_si512(z0, low4);
    q[1] = _mm512_and_si512(_mm512_srli_epi16(z0, 4), low4);
    q[2] = _mm512_and_si512(z1, low4);
    q[3] = _mm512_and_si512(_mm512_srli_epi16(z1, 4), low4);
    if constexpr (std::is_same_v<Block, BlockQ5_K>) {  // bit j of qh[l]: element l of sub-block j
      const __m512i h = qz_pair(w.qh, w.qh), bit16 = _mm512_set1_epi8(0x10);
      auto fifth = [&](int lo, int hi) {
        const __m512i bits = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << lo)),
                                                _mm256_set1_epi8(static_cast<char>(1 << hi)), 1);
        return _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(h, bits), bit16);
      };
      q[0] = _mm512_or_si512(q[0], fifth(0, 2));
      q[1] = _mm512_or_si512(q[1], fifth(1, 3));
      q[2] = _mm512_or_si512(q[2], fifth(4, 6));
      q[3] = _mm512_or_si512(q[3], fifth(5, 7));
    }
    // Lanes 0-1 of q[0] | q[1] hold sub-blocks 0 | 1, lanes 2-3 hold 2 | 3; q[2] | q[3]: 4-7 alike.
    sc01 = qz_pack_scales(sc16, {0, 0, 2, 2}, {1, 1, 3, 3});
    sc23 = qz_pack_scales(sc16, {4, 4, 6, 6}, {5, 5, 7, 7});
    uint32_t d2;
    std::memcpy(&d2, &w.d, 4);  // d, dmin: adjacent f16
    dd = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(d2)));
  }
};

// The activation super-block in K45Block's order (Q4_K's and Q5_K's XK).
inline void k45_pack(const QBlockK& xb, __m512i (&q)[4], __m128i& pair_sums) {
  q[0] = qz_pair(xb.qs, xb.qs + 64);
  q[1] = qz_pair(xb.qs + 32, xb.qs + 96);
  q[2] = qz_pair(xb.qs + 128, xb.qs + 192);
  q[3] = qz_pair(xb.qs + 160, xb.qs + 224);
  // bsums of the 8 sub-blocks of 32 as int16 (|sum| <= 32 * 127).
  const __m256i pairs32 = _mm256_madd_epi16(qs_load(xb.bsums), _mm256_set1_epi16(1));
  pair_sums = _mm_packs_epi32(_mm256_castsi256_si128(pairs32), _mm256_extracti128_si256(pairs32, 1));
}

// Q4_K rows . one QBlockK row: the activation super-block is repacked once (k45_pack) and shared by R rows.
template <int R>
inline void q4_K_rows(const void* const* rows, int64_t cols, const QBlockK* x, float* out, int64_t row_bytes) {
  const int64_t nb = cols / kQKBlock;
  __m512 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m512i xq[4];
    __m128i bpairs;
    k45_pack(x[b], xq, bpairs);
    const __m128 xd = _mm_set1_ps(x[b].d);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const BlockQ4_K& w = static_cast<const BlockQ4_K*>(rows[r])[b];
      // All lines of the 144-byte block: with two of its three, an 87 MB Q4_K GEMV streamed 18 GB/s
      // per thread, 25 with all (Zen 5, 2026-12-02).
      prefetch_lines<sizeof(BlockQ4_K)>(reinterpret_cast<const char*>(&w) + kPrefetchAhead * R * row_bytes);
      const K45Block<BlockQ4_K> wb(w);
      const __m512i sumi = qz_dot4_scaled(wb.q, xq, wb.sc01, wb.sc23);
      const __m128i mins = _mm_madd_epi16(bpairs, wb.mins8);  // sum_j m_j * pair_j
      const __m128 f = _mm_mul_ps(wb.dd, xd);                  // d * xd, dmin * xd
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_broadcastss_ps(f), acc[r]);
      acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi128_si512(mins)),
                                _mm512_broadcastss_ps(_mm_movehdup_ps(f)), acc[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
}

// A Q6_K weight super-block decoded once for qz_dot4_scaled: zmm s (0..3) holds elements 32s.. of
// both 128-halves (128-bit lane k: sub-block 2s, 2s + 1, 8 + 2s, 9 + 2s), as unsigned 6-bit values;
// the -32 offset is folded in exactly through the activations' bsums (dot()).
struct K6Block {
  __m512i q[4], sc01, sc23;
  __m256i sc16y;  // the 16 scales as int16
  float d;

  explicit K6Block(const BlockQ6_K& w) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    const __m512i l0 = qz_pair(w.ql, w.ql + 64), l1 = qz_pair(w.ql + 32, w.ql + 96);
    const __m512i hb = _mm512_loadu_si512(w.qh);
    sc16y = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)));
    q[0] = _mm512_or_si512(_mm512_and_si512(l0, low4), _mm512_and_si512(_mm512_slli_epi16(hb, 4), bits45));
    q[1] = _mm512_or_si512(_mm512_and_si512(l1, low4), _mm512_and_si512(_mm512_slli_epi16(hb, 2), bits45));
    q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), low4), _mm512_and_si512(hb, bits45));
    q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), low4),
                           _mm512_and_si512(_mm512_srli_epi16(hb, 2), bits45));
    const __m512i sc16 = _mm512_castsi256_si512(sc16y);
    sc01 = qz_pack_scales(sc16, {0, 1, 8, 9}, {2, 3, 10, 11});
    sc23 = qz_pack_scales(sc16, {4, 5, 12, 13}, {6, 7, 14, 15});
    d = _cvtsh_ss(w.d);
  }
  // sum_j sc_j * (q - 32) . x over the block, in int32 lanes, for activations xq (k6_pack) with bsums.
  __m512i dot(const __m512i (&xq)[4], __m256i bsums) const {
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(bsums, sc16y), 5);  // 32 * sc_j * bsums_j
    return _mm512_sub_epi32(qz_dot4_scaled(q, xq, sc01, sc23), _mm512_zextsi256_si512(off));
  }
};

// The activation super-block in K6Block's order (Q6_K's XK).
inline void k6_pack(const QBlockK& xb, __m512i (&q)[4]) {
  for (int s = 0; s < 4; ++s) q[s] = qz_pair(xb.qs + 32 * s, xb.qs + 128 + 32 * s);
}

// Q6_K rows . one QBlockK row: the activation super-block repacked once (k6_pack) for R rows.
template <int R>
inline void q6_K_rows(const void* const* rows, int64_t cols, const QBlockK* x, float* out, int64_t row_bytes) {
  const int64_t nb = cols / kQKBlock;
  __m512 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m512i xq[4];
    k6_pack(x[b], xq);
    const __m256i bsums = qs_load(x[b].bsums);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const BlockQ6_K& w = static_cast<const BlockQ6_K*>(rows[r])[b];
      prefetch_lines<sizeof(BlockQ6_K)>(reinterpret_cast<const char*>(&w) + kPrefetchAhead * R * row_bytes);
      const K6Block wb(w);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(wb.dot(xq, bsums)), _mm512_set1_ps(wb.d * x[b].d), acc[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
}

// ---- Q4_K / Q5_K / Q6_K for several tokens (a batched decode step, a prefill) ------------------
// Each token's activation super-blocks are re-laid once per call in the register order of the
// weights (the order q4_K_rows / q6_K_rows build per block), so each weight super-block is decoded
// once for up to 8 tokens, and each token's sums are the ones its one-token kernel forms. Before, each
// of 4 tokens cost as much as a whole GEMV (Q4_K 896x4864: 4 tokens 0.51 ms, 1 token 0.13 ms). A
// prefill runs the same 8-token tiles over L2-sized row chunks; on an AMD EPYC Zen 5 (bench_kernels
// q3_gate_up, 128 tokens, one thread, 2026-12-02) Q4_K / Q5_K / Q6_K take 7.6 / 8.6 / 8.5 ms there
// against 16.2 / 15.8 / 14.0 ms on the AVX2 table's tiles and 21.1 / 16.5 / 16.5 (2026-12-01) on the
// one-token row kernels in tiles this table ran before.
constexpr int kKTokens = 8;

struct alignas(64) XK {
  __m512i q[4];
  __m256i sums;  // Q4_K: the 8 pair sums of bsums (int16, low half); Q6_K: the 16 bsums
  float d;       // the block's scale (here, not in its QBlockK: one cache line less per block and token)
};

// XK scratch of this thread, grown to the largest shape seen (never per token).
inline XK* xk_scratch(size_t n) {
  thread_local std::vector<XK> v;
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Q4_K, and Q5_K with the fifth bit of element l of sub-block j at bit j of qh[l].
// out[t] = blocks [b0, b1) of row . token t, whose blocks are xk[t * xs + b].
template <int T, class Block>
inline void q45_K_tokens(const void* row, int64_t b0, int64_t b1, const XK* xk, int64_t xs, float* out,
                         int64_t row_bytes) {
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = b0; b < b1; ++b) {
    const Block& w = static_cast<const Block*>(row)[b];
    prefetch_lines<sizeof(Block)>(reinterpret_cast<const char*>(&w) + kPrefetchAhead * row_bytes);
    const K45Block<Block> wb(w);
    const float d = _mm_cvtss_f32(wb.dd), dmin = _mm_cvtss_f32(_mm_movehdup_ps(wb.dd));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const XK& xt = xk[t * xs + b];
      const __m512i sumi = qz_dot4_scaled(wb.q, xt.q, wb.sc01, wb.sc23);
      const __m128i mins = _mm_madd_epi16(_mm256_castsi256_si128(xt.sums), wb.mins8);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(d * xt.d), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi128_si512(mins)), _mm512_set1_ps(dmin * xt.d), acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) out[t] = _mm512_reduce_add_ps(acc[t]);
}

template <int T>
inline void q6_K_tokens(const void* row, int64_t b0, int64_t b1, const XK* xk, int64_t xs, float* out,
                        int64_t row_bytes) {
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = b0; b < b1; ++b) {
    const BlockQ6_K& w = static_cast<const BlockQ6_K*>(row)[b];
    prefetch_lines<sizeof(BlockQ6_K)>(reinterpret_cast<const char*>(&w) + kPrefetchAhead * row_bytes);
    const K6Block wb(w);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const XK& xt = xk[t * xs + b];
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(wb.dot(xt.q, xt.sums)), _mm512_set1_ps(wb.d * xt.d), acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) out[t] = _mm512_reduce_add_ps(acc[t]);
}

// Rows [r0, r1) . n tokens through K::tokens: the activations re-laid once per call; up to
// kKTokens tokens in one pass per row, more (a prefill) in tiles of kKTokens over row chunks that stay
// in L2 while every tile passes, so the weights stream from memory once.
template <class K>
void k_tokens_matmul(const void* w, int64_t cols, const QBlockK* x, int n, float* __restrict y, int64_t ldy,
                     int64_t r0, int64_t r1) {
  const int64_t nb = cols / kQKBlock, rb = dtype_row_bytes(K::kType, cols);
  XK* xk = xk_scratch(static_cast<size_t>(n * nb));
  for (int64_t i = 0; i < n * nb; ++i) K::pack(x[i], xk[i]);
  auto pass = [&](int t0, int nt, int64_t a, int64_t e) {
    with_token_count(nt, [&](auto T) {
      sliced_rows<T>(nb, blocks_per_l1_slice(nb, T * sizeof(XK)), y + t0 * ldy, ldy, a, e,
                     [&](int64_t r, int64_t b0, int64_t b1, float* out) {
                       K::template tokens<T>(static_cast<const uint8_t*>(w) + r * rb, b0, b1, xk + t0 * nb, nb, out, rb);
                     });
    });
  };
  if (n <= kKTokens) {
    pass(0, n, r0, r1);
    return;
  }
  chunked_token_passes<kKTokens>(n, r0, r1, rows_per_l2_chunk(rb), pass);
}

// The matmul entry of a kernel K with pack and tokens<T> (matmul_avx512 takes it for n > 1).
template <class K>
struct TokenTiles {
  static constexpr bool kTokenTiles = true;
  static void token_tiles(const void* w, int64_t cols, const QBlockK* x, int n, float* __restrict y, int64_t ldy,
                         int64_t r0, int64_t r1) {
    k_tokens_matmul<K>(w, cols, x, n, y, ldy, r0, r1);
  }
};

struct Q4_KKernel512 : Q4_KKernel, TokenTiles<Q4_KKernel512> {
  template <int R>
  static void rows(const void* const* r, int64_t cols, const QBlockK* x, float* out, int64_t rb) {
    q4_K_rows<R>(r, cols, x, out, rb);
  }
  static void pack(const QBlockK& xb, XK& o) {
    __m128i pair_sums;
    k45_pack(xb, o.q, pair_sums);
    o.sums = _mm256_zextsi128_si256(pair_sums);
    o.d = xb.d;
  }
  template <int T>
  static void tokens(const void* row, int64_t b0, int64_t b1, const XK* xk, int64_t xs, float* out, int64_t rb) {
    q45_K_tokens<T, BlockQ4_K>(row, b0, b1, xk, xs, out, rb);
  }
};
struct Q5_KKernel512 : Q5_KKernel, TokenTiles<Q5_KKernel512> {
  static constexpr bool kFewTokensDecode = true;  // no 512-bit GEMV of its own: one token runs here too
  static void pack(const QBlockK& xb, XK& o) { Q4_KKernel512::pack(xb, o); }  // the same nibble order
  template <int T>
  static void tokens(const void* row, int64_t b0, int64_t b1, const XK* xk, int64_t xs, float* out, int64_t rb) {
    q45_K_tokens<T, BlockQ5_K>(row, b0, b1, xk, xs, out, rb);
  }
};
struct Q6_KKernel512 : Q6_KKernel, TokenTiles<Q6_KKernel512> {
  template <int R>
  static void rows(const void* const* r, int64_t cols, const QBlockK* x, float* out, int64_t rb) {
    q6_K_rows<R>(r, cols, x, out, rb);
  }
  static void pack(const QBlockK& xb, XK& o) {
    k6_pack(xb, o.q);
    o.sums = qs_load(xb.bsums);
    o.d = xb.d;
  }
  template <int T>
  static void tokens(const void* row, int64_t b0, int64_t b1, const XK* xk, int64_t xs, float* out, int64_t rb) {
    q6_K_tokens<T>(row, b0, b1, xk, xs, out, rb);
  }
};

