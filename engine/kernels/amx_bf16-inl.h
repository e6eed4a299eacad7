// Many tokens (prefill chunks) on AMX-BF16 tiles (included by kernels_amx.cpp, after the unpackers).
// Opt-in (amx_bf16_table in kernels.h): the bf16 roundings below move the logits further from
// llama.cpp's than its own flash-attention on/off differences on long prompts.
//
// Why: the int8 products need a float epilogue per group of 32 (or 16) values for every 16x16 block
// of dots, which held a 2048-token Q8_0 prefill at ~90 MACs per cycle per core on Sapphire Rapids
// while the tiles alone could do 512. TDPBF16PS accumulates in fp32 inside the tile over a whole
// K slice, so the only float work per weight is its conversion, once per call, shared by every token.
//
// Precision: each activation is rounded to bf16 (8 significant bits, relative error <= 2^-9) where
// the int8 path rounds it to one of 255 steps of its 32-value block's largest (llama.cpp's Q8_0
// activations); each dequantised weight is rounded to bf16 (<= 2^-9 relative: Q8_0's own rounding is
// up to half a step of 1/127 of its block's largest). Products are exact, sums fp32. Against the
// exact product of the weights and the float activations (`bench_kernels 3 q8_0 down exact`), the
// rms error is 0.23% here and 0.53% on the int8 activations.
//
// Layout: A tiles are 16 weight rows x 32 values, dequantised and rounded to bf16 (a plain copy of
// the row, no transpose); B tiles are 16 pairs of values x 16 tokens (VNNI), the activations
// converted and transposed; C tiles (16 rows x 16 tokens) accumulate over a whole K slice (below)
// and are transposed once per slice into y, added to it after the first. Both operands are packed in the order the products read them (one
// sequential stream per pass): tile loads that miss L1 stall the products, and sequential streams
// are what the prefetchers and the explicit prefetches below keep ahead of them.
// Blocking: K in slices whose packed activations for every token fit in L2 (kBf16SliceBytes); per
// slice, each pair of 16-row panels is packed (into L2, each weight once per call) and passes over
// all the tokens 32 at a time, adding its sums into y.

// Where the bf16 products start (bench_kernels, 1 thread, Qwen2.5-0.5B's qkv 1152x896 and down
// 896x4864, against the int8 tiles): below it, unpacking every weight to bf16 costs more than the
// products save. Q4_K 896x4864 at 48 tokens 1.11 ms vs 1.43 (at 128: 1.72 vs 3.20), Q6_K at 96 1.80
// vs 2.12, Q8_0 1152x896 at 256 0.85 vs 0.90 (at 192 0.72 vs 0.66; its int8 tiles read the blocks
// with no unpack but a copy).
template <class U>
constexpr int bf16_min_tokens() {
  if constexpr (U::kType == DType::kQ4_K || U::kType == DType::kQ5_K || U::kType == DType::kIQ4_XS) return 48;
  if constexpr (U::kType == DType::kQ6_K) return 96;
  if constexpr (U::kSuper) return 128;  // Q2_K, Q3_K: their unpack, element by element, bounds both paths
  return 256;
}
constexpr int kBf16Block = 32;                  // values per tile row; tokens and rows per pass
constexpr int64_t kBf16Tile = kT * kBf16Block;  // bf16 values per tile
constexpr int64_t kBf16SliceBytes = 1 << 20;    // a K slice of every token's packed activations (L2)
constexpr int kBf16Ahead = 2;                   // K steps between a prefetch and its use
constexpr int kBf16RowsAhead = 4;               // weight rows prefetched ahead of their unpack

bool amx_bf16_usable() {
#if defined(ANELM_AMX_EMULATED)
  return true;
#endif
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((d >> 22) & 1);  // AMX-BF16
  }();
  return usable;
}

// Every tile 16 rows x 64 bytes: C (tmm0-3) 16 floats, A (tmm4-5) 32 bf16, B (tmm6-7) 16 bf16 pairs.
constexpr TileConfig make_bf16_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) c.rows[t] = kT, c.colsb[t] = 64;
  return c;
}
constinit const TileConfig kConfigBf16 = make_bf16_config();

struct Bf16Scratch {
  std::vector<uint16_t> x;        // [tokens / 32][slice / 32][2][16 pairs][16 tokens][2]: B tiles
  std::vector<uint16_t> w;        // [slice / 32][2][16 rows][32]: a panel pair's A tiles
  std::vector<int8_t> q;          // [slice]: one row unpacked
  std::vector<float> scale, min;  // [slice / G]
  std::vector<int16_t> isc;       // [slice / G] (super-block types)
  std::vector<float> sd;          // [slice / 256] (super-block types)
};

Bf16Scratch& bf16_scratch() {
  thread_local Bf16Scratch s;
  return s;
}

inline __m512 bf16_pairs(__m512 lo, __m512 hi) { return std::bit_cast<__m512>(_mm512_cvtne2ps_pbh(hi, lo)); }

// kc values of tokens [0, nt) of xf (rows ldx apart), nt <= 32, as the B tiles of one pass: per K
// step j, the tiles of tokens 0-15 and 16-31, dword [pair][token] = (bf16 x[token][2 pair],
// x[token][2 pair + 1]). Missing tokens are zero.
inline void pack_tokens_bf16(const float* xf, int64_t ldx, int64_t kc, int nt, uint16_t* out) {
  for (int64_t j = 0; j < kc / kBf16Block; ++j) {
    for (int h = 0; h < 2; ++h) {
      __m512 v[kT];
      for (int t = 0; t < kT; ++t) {
        const int tok = h * kT + t;
        const float* src = xf + tok * ldx + j * kBf16Block;
        v[t] = tok < nt ? bf16_pairs(_mm512_loadu_ps(src), _mm512_loadu_ps(src + 16)) : _mm512_setzero_ps();
      }
      transpose16(v);  // dword lanes: register t's lane p becomes register p's lane t
      float* dst = reinterpret_cast<float*>(out + (j * 2 + h) * kBf16Tile);
      for (int p = 0; p < kT; ++p) _mm512_storeu_ps(dst + p * kT, v[p]);
    }
  }
}

// kc values of one weight row (row: the slice's first block) as its row of a panel pair's A tiles
// (per K step, 2 tiles apart), or zeros.
template <class U>
void pack_row_bf16(const uint8_t* row, int64_t cols, Bf16Scratch& s, uint16_t* out, bool present) {
  constexpr int G = U::G;
  if (!present) {
    for (int64_t j = 0; j < cols / kBf16Block; ++j) std::memset(out + j * 2 * kBf16Tile, 0, 64);
    return;
  }
  // Q8_0: one block per K step, straight from the blocks (through the unpacker's int8 copy, the
  // 2048-token prefill ran 2-3% slower).
  if constexpr (U::kType == DType::kQ8_0) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(row);
    for (int64_t j = 0; j < cols / kBf16Block; ++j) {
      const __m512 d = _mm512_set1_ps(_cvtsh_ss(b[j].d));
      const __m128i* q = reinterpret_cast<const __m128i*>(b[j].qs);
      const __m512 lo = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(q))), d);
      const __m512 hi = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(q + 1))), d);
      _mm512_storeu_ps(reinterpret_cast<float*>(out + j * 2 * kBf16Tile), bf16_pairs(lo, hi));
    }
    return;
  }
  U::row(row, cols, UnpackOut{s.q.data(), s.scale.data(), s.min.data(), 1, s.isc.data(), s.sd.data()});
  // W = scale[g] * q + min[g], scale[g] = d * isc[g] for super-block types: 16 values from column c.
  auto values = [&](int64_t c) {
    const int64_t g = c / G;
    float scale;
    if constexpr (U::kSuper) {
      scale = s.sd[static_cast<size_t>(c / kQKBlock)] * static_cast<float>(s.isc[static_cast<size_t>(g)]);
    } else {
      scale = s.scale[static_cast<size_t>(g)];
    }
    const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s.q.data() + c))));
    if constexpr (U::kMin) return _mm512_fmadd_ps(q, _mm512_set1_ps(scale), _mm512_set1_ps(s.min[static_cast<size_t>(g)]));
    return _mm512_mul_ps(q, _mm512_set1_ps(scale));
  };
  for (int64_t j = 0; j < cols / kBf16Block; ++j) {
    _mm512_storeu_ps(reinterpret_cast<float*>(out + j * 2 * kBf16Tile),
                     bf16_pairs(values(j * kBf16Block), values(j * kBf16Block + 16)));
  }
}

// C tile -> y[t][r] (or added to it) for the nt real tokens and nr real rows (tile rows are weight rows).
inline void store_c_tile(const float* c, float* y, int64_t ldy, int nt, int nr, bool add) {
  if (nt <= 0 || nr <= 0) return;
  __m512 v[kT];
  for (int r = 0; r < kT; ++r) v[r] = _mm512_load_ps(c + r * kT);
  transpose16(v);
  const __mmask16 m = static_cast<__mmask16>((1u << std::min(nr, kT)) - 1);
  for (int t = 0; t < std::min(nt, kT); ++t) {
    if (add) v[t] = _mm512_add_ps(v[t], _mm512_maskz_loadu_ps(m, y + t * ldy));
    _mm512_mask_storeu_ps(y + t * ldy, m, v[t]);
  }
}

// 32 rows (w: their packed A tiles) x 32 tokens (x: their packed B tiles) over nk steps of K, into
// y[t][r] or added to it (nt tokens, nr rows real).
inline void pass_bf16(const uint16_t* w, const uint16_t* x, int64_t nk, float* y, int64_t ldy, int nt, int nr,
                      bool add) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t j = 0; j < nk; ++j) {
    if (j + kBf16Ahead < nk) {
      const char* wa = reinterpret_cast<const char*>(w + (j + kBf16Ahead) * 2 * kBf16Tile);
      const char* xa = reinterpret_cast<const char*>(x + (j + kBf16Ahead) * 2 * kBf16Tile);
      for (int l = 0; l < 32; ++l) {
        _mm_prefetch(wa + 64 * l, _MM_HINT_T0);
        _mm_prefetch(xa + 64 * l, _MM_HINT_T0);
      }
    }
    const uint16_t* wj = w + j * 2 * kBf16Tile;
    const uint16_t* xj = x + j * 2 * kBf16Tile;
    _tile_loadd(4, wj, 64);
    _tile_loadd(6, xj, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, xj + kBf16Tile, 64);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, wj + kBf16Tile, 64);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float c[4][kT * kT];
  _tile_stored(0, c[0], 64);
  _tile_stored(1, c[1], 64);
  _tile_stored(2, c[2], 64);
  _tile_stored(3, c[3], 64);
  float* y1 = nt > kT ? y + kT * ldy : y;  // tokens 16-31 (unused when absent)
  store_c_tile(c[0], y, ldy, nt, nr, add);
  store_c_tile(c[1], y1, ldy, nt - kT, nr, add);
  store_c_tile(c[2], y + kT, ldy, nt, nr - kT, add);
  store_c_tile(c[3], y1 + kT, ldy, nt - kT, nr - kT, add);
}

// y[t][r] for rows [r0, r1), n >= bf16_min_tokens<U>() tokens of float activations xf [n][cols].
template <class U>
void matmul_bf16(const uint8_t* w, int64_t cols, const float* xf, int n, float* y, int64_t ldy, int64_t r0,
                 int64_t r1) {
  constexpr int P = 2 * kT;  // rows and tokens per pass
  const int np = (n + P - 1) / P * P;
  // Whole super-blocks, at least one.
  const int64_t kc = std::min(cols, std::max<int64_t>(kQKBlock, kBf16SliceBytes / (2 * np) / kQKBlock * kQKBlock));
  const int64_t rb = dtype_row_bytes(U::kType, cols), ng = kc / U::G;
  Bf16Scratch& s = bf16_scratch();
  grow(s.x, static_cast<size_t>(np * kc));
  grow(s.w, static_cast<size_t>(P * kc));
  grow(s.q, static_cast<size_t>(kc));
  grow(s.scale, static_cast<size_t>(ng));
  grow(s.min, static_cast<size_t>(ng));
  grow(s.isc, static_cast<size_t>(ng));
  grow(s.sd, static_cast<size_t>(kc / kQKBlock + 1));
  configure_tiles(kConfigBf16);
  for (int64_t k0 = 0; k0 < cols; k0 += kc) {
    const int64_t kn = std::min(kc, cols - k0);
    const int64_t at = k0 / dtype_block_elems(U::kType) * dtype_block_bytes(U::kType);
    const int64_t slice_bytes = kn / dtype_block_elems(U::kType) * dtype_block_bytes(U::kType);
    for (int t = 0; t < n; t += P) pack_tokens_bf16(xf + t * cols + k0, cols, kn, std::min(P, n - t), s.x.data() + t * kn);
    for (int64_t p = r0; p < r1; p += P) {
      for (int i = 0; i < P; ++i) {  // row i of the pair: half i / 16, tile row i % 16
        // Rows are short runs of blocks that the hardware prefetchers do not pick up in time: the
        // unpack waited on every row's first lines.
        if (p + i + kBf16RowsAhead < r1) {
          const char* ahead = reinterpret_cast<const char*>(w + (p + i + kBf16RowsAhead) * rb + at);
          for (int64_t b = 0; b < slice_bytes; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
        }
        pack_row_bf16<U>(w + (p + i) * rb + at, kn, s, s.w.data() + (i / kT) * kBf16Tile + (i % kT) * kBf16Block,
                         p + i < r1);
      }
      const int nr = static_cast<int>(std::min<int64_t>(P, r1 - p));
      for (int t = 0; t < n; t += P) {
        pass_bf16(s.w.data(), s.x.data() + t * kn, kn / kBf16Block, y + t * ldy + p, ldy, std::min(P, n - t), nr, k0 > 0);
      }
    }
  }
}
