// AVX-512 prefill with one token per int32 lane for the 32-element block types with a single scale
// (Q8_0, Q4_0, Q5_0, IQ4_NL). Included by kernels_avx512.cpp after the block decoders of
// kernels_quant_simd-inl.h.
//
// Why: the packed-pair prefill (gemm_pairs) holds 64 weights of one token in a zmm, so every 64
// weights of every token cost a convert, a scale multiply and an FMA beside their vpdpbusd, and
// 128 B of activation loads: 171-175 GFLOP/s on one Zen 5 thread, where Q4_K's token tiles reach
// 225-235. Here the 16 lanes are 16 tokens: 4 bytes of a weight row, broadcast, meet 4 bytes of
// each token, so a 32-weight block is 8 vpdpbusd into one exact int32 sum per token and then a
// single convert, scale and FMA for all 16; the block's activation vectors stay in registers while
// R rows pass. The 4-bit and 5-bit types decode a block once into the same form (Gemma 3 1B's
// Q4_K_M file is mostly Q5_0: its 1152 columns are not whole 256-blocks).

constexpr int kLaneTokens = 16;
constexpr int kLaneMinTokens = 8;  // below, the older paths: a padded group would waste most lanes

// Lane decoders: a weight block as its 32 values + 128 (unsigned, for vpdpbusd's first operand).
// Every block type here starts with its f16 scale d.
struct LaneQ8_0 {
  using Block = BlockQ8_0;
  static __m256i biased(const Block& w) { return _mm256_xor_si256(qs_load(w.qs), _mm256_set1_epi8(static_cast<char>(0x80))); }
};
struct LaneQ4_0 {
  using Block = BlockQ4_0;
  static __m256i biased(const Block& w) { return _mm256_add_epi8(qs_nibbles(w.qs), _mm256_set1_epi8(128 - 8)); }
};
struct LaneQ5_0 {
  using Block = BlockQ5_0;
  static __m256i biased(const Block& w) { return _mm256_add_epi8(qs_fives(w.qs, w.qh), _mm256_set1_epi8(128 - 16)); }
};
struct LaneIQ4_NL {
  using Block = BlockIQ4_NL;
  static __m256i biased(const Block& w) { return _mm256_xor_si256(qs_iq4_levels(w.qs), _mm256_set1_epi8(static_cast<char>(0x80))); }
};

// One block of 16 tokens: lane t of qs[k] is bytes 4k..4k+3 of token t's block (signed); the weights
// enter vpdpbusd unsigned, as w + 128, so corr[t] = -128 * sum(token t's block) starts its sum; d[t]
// is its scale. Lanes past the last token are zero.
struct alignas(64) XLanes {
  int8_t qs[8][64];
  int32_t corr[kLaneTokens];
  float d[kLaneTokens];
};

// Tokens [0, n) of x (nb blocks each) as ceil(n / 16) groups of nb XLanes (group g's block b at g * nb + b).
inline void pack_xlanes(const QBlock8* x, int64_t nb, int n, XLanes* __restrict out) {
  for (int g = 0; g * kLaneTokens < n; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      XLanes& o = out[g * nb + b];
      for (int t = 0; t < kLaneTokens; ++t) {
        const int i = g * kLaneTokens + t;
        if (i >= n) {
          for (auto& q : o.qs) std::memset(q + 4 * t, 0, 4);
          o.corr[t] = 0;
          o.d[t] = 0.0f;
          continue;
        }
        const QBlock8& xb = x[i * nb + b];
        for (int k = 0; k < 8; ++k) std::memcpy(o.qs[k] + 4 * t, xb.qs + 4 * k, 4);
        o.corr[t] = -128 * xb.sum;
        o.d[t] = xb.d;
      }
    }
  }
}

// acc[r][g] lane t = row r (of R from row0, rb bytes apart) . token t of group g (G groups, gs
// XLanes apart), over blocks [0, nb).
template <class Dec, int R, int G>
inline void lanes_tile(const uint8_t* row0, int64_t rb, int64_t nb, const XLanes* x, int64_t gs, __m512 (&acc)[R][G]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
  alignas(32) uint8_t wu[R][32];  // a block of each row as w + 128, for 4-byte broadcasts
  for (int64_t b = 0; b < nb; ++b) {
    __m512i xq[G][8];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) xq[g][k] = _mm512_load_si512(x[g * gs + b].qs[k]);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const auto* wb = reinterpret_cast<const typename Dec::Block*>(row0 + r * rb) + b;
      _mm256_store_si256(reinterpret_cast<__m256i*>(wu[r]), Dec::biased(*wb));
      const __m512 dw = _mm512_set1_ps(_cvtsh_ss(wb->d));
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        const XLanes& xl = x[g * gs + b];
        __m512i dot = _mm512_load_si512(xl.corr);
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
          int32_t w4;
          std::memcpy(&w4, wu[r] + 4 * k, 4);
          dot = _mm512_dpbusd_epi32(dot, _mm512_set1_epi32(w4), xq[g][k]);
        }
        acc[r][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_load_ps(xl.d)), acc[r][g]);
      }
    }
  }
}

// XLanes scratch of this thread, grown to the largest prefill chunk seen (never per token).
inline XLanes* xlanes_scratch(size_t n) {
  thread_local std::vector<XLanes> v;
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Y[i][r] for rows [r0, r1) of Dec's type and n tokens: every token packed once, then rows in chunks of
// ~384 KB of weights (gemm_pairs' reasoning: the weights stream from memory once per call), every
// pass of kLanePassGroups groups (the last may be shorter) going over a chunk in tiles of kLaneRows rows.
constexpr int kLaneRows = 4;
constexpr int kLanePassGroups = 2;

template <class Dec>
void gemm_lanes(const void* w, int64_t cols, const QBlock8* x, int n, float* __restrict y, int64_t ldy,
                int64_t r0, int64_t r1) {
  const int64_t nb = cols / kQBlock;
  const int64_t rb = nb * static_cast<int64_t>(sizeof(typename Dec::Block));
  const int groups = (n + kLaneTokens - 1) / kLaneTokens;
  XLanes* packed = xlanes_scratch(static_cast<size_t>(groups * nb));
  pack_xlanes(x, nb, n, packed);
  constexpr int64_t kChunkBytes = 384 * 1024;
  const int64_t chunk = std::max<int64_t>(1, kChunkBytes / rb);
  const auto* base = static_cast<const uint8_t*>(w);
  auto run = [&]<int R, int G>(int64_t r, int i0) {
    __m512 acc[R][G];
    lanes_tile<Dec, R, G>(base + r * rb, rb, nb, packed + (i0 / kLaneTokens) * nb, nb, acc);
    alignas(64) float lanes[kLaneTokens];
    for (int j = 0; j < R; ++j) {
      for (int g = 0; g < G; ++g) {
        _mm512_store_ps(lanes, acc[j][g]);
        const int t0 = i0 + g * kLaneTokens, nt = std::min(kLaneTokens, n - t0);
        for (int t = 0; t < nt; ++t) y[(t0 + t) * ldy + r + j] = lanes[t];
      }
    }
  };
  constexpr int kPassTokens = kLanePassGroups * kLaneTokens;
  chunked_token_passes<kPassTokens>(n, r0, r1, chunk, [&](int i0, int nt, int64_t a, int64_t e) {
    auto rows = [&]<int G>() {
      int64_t r = a;
      for (; r + kLaneRows <= e; r += kLaneRows) run.template operator()<kLaneRows, G>(r, i0);
      for (; r < e; ++r) run.template operator()<1, G>(r, i0);
    };
    if (nt > kLaneTokens) rows.template operator()<kLanePassGroups>();
    else rows.template operator()<1>();
  });
}
