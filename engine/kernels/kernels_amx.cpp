// AMX kernel table: the AVX-512 table with the block types' matmuls of several tokens (prefill and
// batched decode steps) on AMX-INT8 tiles.
//
// Why: on CPUs with AMX (Sapphire Rapids and later) one TDPBSSD multiplies a 16x64 by a 64x16 int8
// tile; VNNI prefill of quantised weights is several times slower per core, and llama.cpp uses AMX.
//
// How: the activations are packed once per call into B tiles (16 tokens x G values of a group,
// VNNI-interleaved). A thread's rows are cut into panels of 16; a panel's A tiles come from its rows
// unpacked once to int8 with a float scale (and minimum) per group of G = 32 or 16 values. Per
// group, one TDPBSSD gives the exact int32 dots of 16 rows x 16 tokens, and an AVX-512 epilogue adds
// scale_w * d_x * dot (+ min_w * d_x * sum(q_x)) into float accumulators; only the float summation
// order differs from the other kernels. One token keeps the AVX-512 GEMV; where the tiles start
// for each type is min_tokens below. Opt-in (ANELM_AMX_BF16=1, amx_bf16_kernel_table), prefill
// chunks of many tokens run on AMX-BF16 tiles instead (amx_bf16-inl.h, from bf16_min_tokens).
#if defined(__GNUC__) && !defined(__clang__)  // GCC 12's false "__Y uninitialized" in avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/kernels/dtype.h"
#include "engine/kernels/kernels.h"

namespace anelm::engine::kernels {
namespace amx_impl {
namespace {

#include "engine/kernels/amx_unpack-inl.h"

constexpr int kT = 16;          // rows per panel = tokens per chunk = tile rows
// Fewer tokens: AVX-512. Where the tiles start (bench_kernels and bench_batching, Sapphire Rapids):
// - Q8_0 (read in place, no unpack): from 2. A batched step of 2 / 3 sequences of Qwen2.5-0.5B Q8_0
//   took 24 / 25 ms on tiles against 37 / 45 ms on AVX-512 (2 threads); the LM head at 4 tokens
//   takes 11 ms against 13.6 ms for one token's GEMV (1 thread).
// - Other 16/32-element groups (each panel unpacked to a copy): from 4. At 4 tokens (9728x896, 1
//   thread) Q4_0 0.66 ms on tiles vs 0.97 AVX-512, IQ4_NL 0.61 vs 0.92, Q5_0 0.81 vs 0.75.
// - Super-block types (each panel split into high and low parts, which at a few tokens costs more
//   than the products): from 6, measured on Q4_K before its few-token kernel (896x4864, n = 4:
//   AVX-512 0.51 ms vs AMX 0.63, n = 8 0.88 vs 0.72).
// - Q4_K, Q5_K and Q6_K, whose AVX-512 kernels decode each weight block once for up to 8 tokens
//   (token_tiles): from 9. 896x4864 at 8 tokens: Q4_K 0.51 ms there against 0.74 ms on tiles, Q5_K
//   0.59 vs 0.72; a 4-sequence Qwen3-0.6B Q4_K_M step takes 40 ms (77 on tiles from 4, 2 threads).
template <class U>
constexpr int min_tokens() {
  if constexpr (U::kType == DType::kQ4_K || U::kType == DType::kQ5_K || U::kType == DType::kQ6_K) return 9;
  if constexpr (U::kSuper) return 6;
  if constexpr (U::kType == DType::kQ8_0) return 2;
  return 4;
}

// Tile registers (GCC's intrinsics paste the number, so literals below): tmm0/tmm1 accumulate two
// groups (super-block mode: one super-block's high and low parts; tmm6/tmm7 the next one's),
// tmm2/tmm3 hold weights, tmm4/tmm5 activations.

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Group size G: A tiles are 16 rows x G bytes, B tiles G/4 rows x (16 tokens x 4 bytes). The
// configurations are static objects: GCC's _tile_loadconfig tells the compiler it reads only 8 bytes,
// so a stack copy's other fields could be dropped as dead stores.
constexpr TileConfig make_config(int g) {
  TileConfig c;
  for (int t : {0, 1, 6, 7}) c.rows[t] = kT, c.colsb[t] = kT * 4;
  for (int t : {2, 3}) c.rows[t] = kT, c.colsb[t] = static_cast<uint16_t>(g);
  for (int t : {4, 5}) c.rows[t] = static_cast<uint8_t>(g / 4), c.colsb[t] = kT * 4;
  return c;
}
// Super-block mode is the G = 64 configuration.
constinit const TileConfig kConfig16 = make_config(16), kConfig32 = make_config(32), kConfigSuper = make_config(64);

// Narrow mode (a batched decode step of at most 8 tokens, 32-element and 16-element groups): C and
// B tiles 8 tokens wide. B tiles still load from the 16-token packing (row stride 64 bytes, first 32
// read); the stored dots are 8 registers of two rows each, so the per-group epilogue, which bounds
// these products, does half the work of the 16-token one.
constexpr int kNarrow = 8;
constexpr TileConfig make_narrow_config(int g) {
  TileConfig c = make_config(g);
  for (int t : {0, 1, 4, 5}) c.colsb[t] = kNarrow * 4;
  return c;
}
constinit const TileConfig kNarrow16 = make_narrow_config(16), kNarrow32 = make_narrow_config(32);

void configure_tiles(const TileConfig& c) {
  __asm__ volatile("" ::: "memory");
  _tile_loadconfig(&c);
}

// Per-thread scratch, grown to the largest shape seen (never per token).
struct Scratch {
  std::vector<int8_t> act;      // [chunks][groups][G/4][16 tokens][4]: B tiles
  std::vector<float> xd;        // [chunks][activation blocks][16 tokens]: activation scales
  std::vector<float> xs;        // [chunks][weight groups][16 tokens]: scale * sum(q) of the group
  std::vector<int8_t> rows_q;   // [16][cols]: the panel's rows unpacked (A tiles, stride cols)
  std::vector<int8_t> rows_lo;  // [16][cols]: super-block mode's low parts (rows_q: high parts)
  std::vector<int16_t> isc;     // [cols / G]: one row's integer sub-block scales
  std::vector<float> ws, wm;    // [groups][16 rows]: the panel's scales and minimums
};

template <class V>
void grow(V& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// The activation rows (QBlock8 for 32-element types, QBlockK for super-block types) as B tiles of
// PG values per group (the weight group G, or 64 in super-block mode).
template <class U, int PG>
struct Act {
  static constexpr int G = U::G;
  static constexpr bool kK = uses_q8k_activations(U::kType);
  using Block = std::conditional_t<kK, QBlockK, QBlock8>;
  static constexpr int kElems = kK ? kQKBlock : kQBlock;

  // sum(q) of weight group j of an activation block (QBlockK keeps sums per 16 values).
  static int32_t group_sum(const Block& b, int64_t j) {
    if constexpr (kK) {
      int32_t sum = 0;
      for (int k = 0; k < G / 16; ++k) sum += b.bsums[j * (G / 16) + k];
      return sum;
    } else {
      return b.sum;
    }
  }

  // Packs n tokens: chunk c, group g is 16 tokens' PG values, dword i of token t at [i][t]; tokens
  // past n are zero. Also, token-minor, each activation block's scale and (types with a minimum)
  // each weight group's scale * sum(q).
  static void pack(const Block* x, int64_t cols, int n, Scratch& s) {
    const int64_t ng = cols / PG, nb = cols / kElems, nsg = cols / G, chunks = (n + kT - 1) / kT;
    grow(s.act, static_cast<size_t>(chunks * kT * cols));
    grow(s.xd, static_cast<size_t>(chunks * nb * kT));
    grow(s.xs, static_cast<size_t>(chunks * nsg * kT));
    const __m512i tok = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(static_cast<int>(nb * sizeof(Block))));
    for (int64_t c = 0; c < chunks; ++c) {
      const int nt = static_cast<int>(n - c * kT < kT ? n - c * kT : kT);
      const __mmask16 live = static_cast<__mmask16>((1u << nt) - 1);
      const auto* first = reinterpret_cast<const uint8_t*>(x + c * kT * nb);
      for (int64_t g = 0; g < ng; ++g) {
        const uint8_t* src = first + g * PG / kElems * sizeof(Block) + offsetof(Block, qs) + g * PG % kElems;
        int8_t* dst = s.act.data() + (c * ng + g) * kT * PG;
        for (int i = 0; i < PG / 4; ++i) {
          const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, tok, src + 4 * i, 1);
          _mm512_storeu_si512(dst + i * 64, v);
        }
      }
      for (int t = 0; t < kT; ++t) {
        for (int64_t b = 0; b < nb; ++b) {
          const Block* xb = t < nt ? &x[(c * kT + t) * nb + b] : nullptr;
          s.xd[(c * nb + b) * kT + t] = xb ? xb->d : 0.0f;
          if constexpr (U::kMin) {
            for (int j = 0; j < kElems / G; ++j) {
              const float v = xb ? xb->d * static_cast<float>(group_sum(*xb, j)) : 0.0f;
              s.xs[(c * nsg + b * (kElems / G) + j) * kT + t] = v;
            }
          }
        }
      }
    }
  }
};

// Row r's 16 token sums. Passed and returned by value, never by address: the tile instructions'
// asm statements clobber memory, so an address-taken accumulator would be reloaded around each one.
struct Acc {
  __m512 v[kT];
};

// acc[r] += d_x * scale_w[r] * dot[r] (+ d_x * sum(q_x) * min_w[r]) for one group's stored dots.
template <bool kMin>
[[gnu::always_inline]] inline Acc epilogue(Acc acc, const int32_t* dot, const float* ws, const float* wm,
                                           const float* xd_p, const float* xs_p) {
  const __m512 xd = _mm512_loadu_ps(xd_p);
  [[maybe_unused]] __m512 xs;
  if constexpr (kMin) xs = _mm512_loadu_ps(xs_p);
#pragma GCC unroll 16
  for (int r = 0; r < kT; ++r) {
    const __m512 d = _mm512_cvtepi32_ps(_mm512_load_si512(dot + r * kT));
    acc.v[r] = _mm512_fmadd_ps(d, _mm512_mul_ps(xd, _mm512_set1_ps(ws[r])), acc.v[r]);
    if constexpr (kMin) acc.v[r] = _mm512_fmadd_ps(xs, _mm512_set1_ps(wm[r]), acc.v[r]);
  }
  return acc;
}

// The panel's A tiles: group g of 16 rows starts at base + g * group_stride, rows row_stride apart.
struct PanelA {
  const int8_t* base;
  int64_t group_stride, row_stride;
  const int8_t* at(int64_t g) const { return base + g * group_stride; }
};

// Group g into accumulator tile C, through weight tile A and activation tile B.
#define ANELM_AMX_GROUP(C, A, B, g)                    \
  do {                                                 \
    _tile_loadd(A, a.at(g), a.row_stride);             \
    _tile_loadd(B, act + (g) * kT * G, kT * 4);        \
    _tile_zero(C);                                     \
    _tile_dpbssd(C, A, B);                             \
  } while (0)

// Groups g and g + 1 (when below ng) into tmm0 and tmm1. (Four groups in flight through tmm6/tmm7
// as well measured slower.)
template <int G>
[[gnu::always_inline]] inline void issue(const PanelA& a, const int8_t* act, int64_t g, int64_t ng) {
  ANELM_AMX_GROUP(0, 2, 4, g);
  if (g + 1 < ng) ANELM_AMX_GROUP(1, 3, 5, g + 1);
}
#undef ANELM_AMX_GROUP

// 16x16 float transpose in registers (rows of acc become tokens).
inline void transpose16(__m512* r) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  auto pd = [](__m512 v) { return _mm512_castps_pd(v); };
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[4 * i]), pd(t[4 * i + 2])));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[4 * i]), pd(t[4 * i + 2])));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[4 * i + 1]), pd(t[4 * i + 3])));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[4 * i + 1]), pd(t[4 * i + 3])));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
  }
}

// y[t][r] = acc[r][t] for the nt real tokens and nr real rows.
[[gnu::always_inline]] inline void store_tokens(Acc acc, float* y, int64_t ldy, int nr, int nt) {
  transpose16(acc.v);
  const __mmask16 m = static_cast<__mmask16>((1u << nr) - 1);
#pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
    if (t < nt) _mm512_mask_storeu_ps(y + t * ldy, m, acc.v[t]);
  }
}

// A share of the next panel's bytes, streamed into L2 a slice per step of a product: issued in one
// burst, the prefetches stalled the core on full fill buffers until the DRAM reads were done (a third
// of a 4-sequence decode step), instead of overlapping them with the tile products.
struct Prefetch {
  const char* p;
  int64_t bytes;
  // Slice i of n.
  [[gnu::always_inline]] void step(int64_t i, int64_t n) const {
    for (int64_t off = (bytes * i / n) & ~int64_t{63}, end = bytes * (i + 1) / n; off < end; off += 64) {
      _mm_prefetch(p + off, _MM_HINT_T1);
    }
  }
};

// The panel (16 rows, nr of them real) times one chunk of 16 packed tokens (nt real): y[t][r].
// Software-pipelined: the tile unit multiplies groups g + 2, g + 3 while the vector units scale and
// add the stored dots of groups g, g + 1.
template <class U>
void panel_times_chunk(const PanelA& a, const float* ws, const float* wm, const int8_t* act, const float* xd,
                       const float* xs, int64_t ng, float* y, int64_t ldy, int nr, int nt) {
  Acc acc;
#pragma GCC unroll 16
  for (int r = 0; r < kT; ++r) acc.v[r] = _mm512_setzero_ps();
  alignas(64) int32_t c[2][kT * kT];
  issue<U::G>(a, act, 0, ng);
  for (int64_t g = 0; g < ng; g += 2) {
    _tile_stored(0, c[0], kT * 4);
    if (g + 1 < ng) _tile_stored(1, c[1], kT * 4);
    if (g + 2 < ng) issue<U::G>(a, act, g + 2, ng);
    acc = epilogue<U::kMin>(acc, c[0], ws + g * kT, wm + g * kT, xd + g * kT, xs + g * kT);
    if (g + 1 < ng) {
      acc = epilogue<U::kMin>(acc, c[1], ws + (g + 1) * kT, wm + (g + 1) * kT, xd + (g + 1) * kT, xs + (g + 1) * kT);
    }
  }
  store_tokens(acc, y, ldy, nr, nt);
}

// Narrow mode's accumulators: v[i] holds rows 2i and 2i + 1 (lanes 0-7, 8-15) x 8 tokens.
struct AccN {
  __m512 v[kT / 2];
};

// The lanes' 16-row vector index for register i: row 2i in lanes 0-7, row 2i + 1 in lanes 8-15.
inline __m512i pair_rows(int i) {
  return _mm512_add_epi32(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0), _mm512_set1_epi32(2 * i));
}

// The first 8 of 16 floats in both halves.
inline __m512 dup8(const float* p) {
  const __m256 h = _mm256_loadu_ps(p);
  return _mm512_insertf32x8(_mm512_castps256_ps512(h), h, 1);
}

// Where the narrow products take a group's 16 row scales: the scratch (ws, as prepare_panel leaves
// them), or, for Q8_0 read in place, the blocks themselves, gathered as the group is scaled: its
// lines are in L1 then, the group's tile load just read them (gathered for the whole panel up
// front, the scales were most of the remaining non-product time of a 4-sequence step).
struct GroupScales {
  const float* ws = nullptr;
  const char* d0 = nullptr;  // in place: row 0's block 0 (its f16 scale first)
  __m512i rows{};            // in place: the 16 rows' byte offsets
  int64_t block_bytes = 0;
  [[gnu::always_inline]] __m512 at(int64_t g) const {
    if (!d0) return _mm512_loadu_ps(ws + g * kT);
    // The dword at each scale ends inside its block.
    const __m512i d = _mm512_i32gather_epi32(rows, d0 + g * block_bytes, 1);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d));
  }
};

// epilogue for narrow tiles: the dots are stored 8 tokens per row.
template <bool kMin>
[[gnu::always_inline]] inline AccN epilogue_narrow(AccN acc, const int32_t* dot, __m512 w, const float* wm,
                                                   const float* xd_p, const float* xs_p) {
  const __m512 xd = dup8(xd_p);
  [[maybe_unused]] __m512 xs, m;
  if constexpr (kMin) xs = dup8(xs_p), m = _mm512_loadu_ps(wm);
#pragma GCC unroll 8
  for (int i = 0; i < kT / 2; ++i) {
    const __m512 d = _mm512_cvtepi32_ps(_mm512_load_si512(dot + i * 2 * kNarrow));
    acc.v[i] = _mm512_fmadd_ps(d, _mm512_mul_ps(xd, _mm512_permutexvar_ps(pair_rows(i), w)), acc.v[i]);
    if constexpr (kMin) acc.v[i] = _mm512_fmadd_ps(xs, _mm512_permutexvar_ps(pair_rows(i), m), acc.v[i]);
  }
  return acc;
}

// panel_times_chunk for nt <= 8 tokens in narrow tiles (configured by the caller).
template <class U>
void panel_times_chunk_narrow(const PanelA& a, const GroupScales& ws, const float* wm, const int8_t* act,
                              const float* xd, const float* xs, int64_t ng, float* y, int64_t ldy, int nr, int nt,
                              Prefetch pf) {
  AccN acc;
#pragma GCC unroll 8
  for (int i = 0; i < kT / 2; ++i) acc.v[i] = _mm512_setzero_ps();
  alignas(64) int32_t c[2][kT * kNarrow];
  issue<U::G>(a, act, 0, ng);
  for (int64_t g = 0; g < ng; g += 2) {
    _tile_stored(0, c[0], kNarrow * 4);
    if (g + 1 < ng) _tile_stored(1, c[1], kNarrow * 4);
    if (g + 2 < ng) issue<U::G>(a, act, g + 2, ng);
    pf.step(g / 2, (ng + 1) / 2);
    acc = epilogue_narrow<U::kMin>(acc, c[0], ws.at(g), wm + g * kT, xd + g * kT, xs + g * kT);
    if (g + 1 < ng) {
      acc = epilogue_narrow<U::kMin>(acc, c[1], ws.at(g + 1), wm + (g + 1) * kT, xd + (g + 1) * kT,
                                     xs + (g + 1) * kT);
    }
  }
  // y[t][r]: row r, token t sits at out[r * 8 + t].
  alignas(64) float out[kT * kNarrow];
#pragma GCC unroll 8
  for (int i = 0; i < kT / 2; ++i) _mm512_store_ps(out + i * 2 * kNarrow, acc.v[i]);
  const __mmask16 m = static_cast<__mmask16>((1u << nr) - 1);
  const __m512i rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32(kNarrow));
  for (int t = 0; t < nt; ++t) {
    _mm512_mask_storeu_ps(y + t * ldy, m, _mm512_i32gather_ps(_mm512_add_epi32(rows, _mm512_set1_epi32(t)), out, 4));
  }
}

// The panel's rows unpacked into the scratch rows (missing rows of a partial panel are zero). Q8_0
// is copied too when the panel meets several chunks of tokens: tile loads from the 34-byte blocks in
// place, each row straddling cache lines, ran at two thirds of the speed of loads from the packed copy
// (with one chunk the copy costs more: q8_0_in_place, 10-20% faster at n = 4 and 8).
template <class U>
PanelA prepare_panel(const uint8_t* w, int64_t rb, int64_t cols, int64_t r0, int nr, Scratch& s) {
  const int64_t ng = cols / U::G;
  for (int r = 0; r < kT; ++r) {
    int8_t* q = s.rows_q.data() + r * cols;
    if (r < nr) {
      U::row(w + (r0 + r) * rb, cols, UnpackOut{q, s.ws.data() + r, s.wm.data() + r, kT, nullptr, nullptr});
    } else {
      std::memset(q, 0, static_cast<size_t>(cols));
      for (int64_t g = 0; g < ng; ++g) s.ws[g * kT + r] = s.wm[g * kT + r] = 0.0f;
    }
  }
  return {s.rows_q.data(), U::G, cols};
}

// A full panel of Q8_0 rows read in place: group g's A tile is the 32 quants of block g of each row
// (rows rb bytes apart), and its scales come from the blocks (into s.ws, as prepare_panel leaves
// them, for the 16-token products; by gather for the narrow ones).
inline GroupScales q8_0_scales_in_place(const uint8_t* w, int64_t rb, int64_t r0) {
  return {nullptr, reinterpret_cast<const char*>(w + r0 * rb),
          _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                             _mm512_set1_epi32(static_cast<int>(rb))),
          static_cast<int64_t>(sizeof(BlockQ8_0))};
}
inline PanelA q8_0_in_place(const uint8_t* w, int64_t rb, int64_t r0) {
  return {reinterpret_cast<const BlockQ8_0*>(w + r0 * rb)->qs, static_cast<int64_t>(sizeof(BlockQ8_0)), rb};
}

// ---- super-block types (K-quants, IQ4_XS) ------------------------------------------------------
// A super-block's weights are d * isc[g] * q (+ min terms): the integer products w' = isc * q fit in
// 14 bits, so they are split exactly into int8 high and low parts, w' = 64 * hi + lo, and a whole
// super-block accumulates in two tiles at K = 64 with one float epilogue per 256 values (instead of
// one per sub-block of 16 or 32): sum(w' x) = 64 * dot(hi, x) + dot(lo, x), exact in int32.

// One super-block into the tile pair P (0: tmm0/tmm1, 1: tmm6/tmm7): hi . x and lo . x.
template <int P>
[[gnu::always_inline]] inline void issue_super(const int8_t* hi, const int8_t* lo, int64_t cols, const int8_t* act,
                                               int64_t sb) {
  if constexpr (P == 0) {
    _tile_zero(0);
    _tile_zero(1);
  } else {
    _tile_zero(6);
    _tile_zero(7);
  }
  for (int k = 0; k < kQKBlock / 64; ++k) {
    const int64_t c0 = sb * kQKBlock + k * 64;
    _tile_loadd(4, act + (sb * 4 + k) * kT * 64, kT * 4);
    _tile_loadd(2, hi + c0, cols);
    _tile_loadd(3, lo + c0, cols);
    if constexpr (P == 0) {
      _tile_dpbssd(0, 2, 4);
      _tile_dpbssd(1, 3, 4);
    } else {
      _tile_dpbssd(6, 2, 4);
      _tile_dpbssd(7, 3, 4);
    }
  }
}

template <int P>
[[gnu::always_inline]] inline void store_super(int32_t* chi, int32_t* clo) {
  if constexpr (P == 0) {
    _tile_stored(0, chi, kT * 4);
    _tile_stored(1, clo, kT * 4);
  } else {
    _tile_stored(6, chi, kT * 4);
    _tile_stored(7, clo, kT * 4);
  }
}

// acc[r] += d_x * d_w[r] * (64 * hi[r] + lo[r]) (+ sum over the super-block's groups j of
// d_x * sum(q_x)_j * min_w[j][r]).
template <class U>
[[gnu::always_inline]] inline Acc epilogue_super(Acc acc, const int32_t* chi, const int32_t* clo, const float* wd,
                                                 const float* xd_p, const float* wm, const float* xs) {
  const __m512 xd = _mm512_loadu_ps(xd_p);
#pragma GCC unroll 16
  for (int r = 0; r < kT; ++r) {
    const __m512i w = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(chi + r * kT), 6),
                                       _mm512_load_si512(clo + r * kT));
    acc.v[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(w), _mm512_mul_ps(xd, _mm512_set1_ps(wd[r])), acc.v[r]);
  }
  if constexpr (U::kMin) {
    for (int j = 0; j < kQKBlock / U::G; ++j) {
      const __m512 sx = _mm512_loadu_ps(xs + j * kT);
#pragma GCC unroll 16
      for (int r = 0; r < kT; ++r) acc.v[r] = _mm512_fmadd_ps(sx, _mm512_set1_ps(wm[j * kT + r]), acc.v[r]);
    }
  }
  return acc;
}

// The panel (rows_q: high parts, rows_lo: low parts) times one chunk of packed tokens: y[t][r].
template <class U>
void panel_times_chunk_super(const Scratch& s, const int8_t* act, const float* xd, const float* xs, int64_t cols,
                             float* y, int64_t ldy, int nr, int nt) {
  constexpr int kGroups = kQKBlock / U::G;
  const int64_t nsb = cols / kQKBlock;
  const int8_t* hi = s.rows_q.data();
  const int8_t* lo = s.rows_lo.data();
  Acc acc;
#pragma GCC unroll 16
  for (int r = 0; r < kT; ++r) acc.v[r] = _mm512_setzero_ps();
  alignas(64) int32_t chi[kT * kT], clo[kT * kT];
  issue_super<0>(hi, lo, cols, act, 0);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    // Store this super-block's pair, start the next one on the other pair, then scale this one.
    if (sb % 2 == 0) {
      store_super<0>(chi, clo);
      if (sb + 1 < nsb) issue_super<1>(hi, lo, cols, act, sb + 1);
    } else {
      store_super<1>(chi, clo);
      if (sb + 1 < nsb) issue_super<0>(hi, lo, cols, act, sb + 1);
    }
    acc = epilogue_super<U>(acc, chi, clo, s.ws.data() + sb * kT, xd + sb * kT, s.wm.data() + sb * kGroups * kT,
                            xs + sb * kGroups * kT);
  }
  store_tokens(acc, y, ldy, nr, nt);
}

// 64 quants q (int8, in place in hi) times their groups' integer scales isc (G = 16 or 32 values
// per scale) as hi = (isc * q) >> 6 and lo = (isc * q) & 63. The products (|isc * q| <= 4096) are
// formed in the 16-bit lanes of a zmm, even and odd bytes apart, so no lane is widened or narrowed
// (vpmovwb was most of the unpack). Reads up to 4 scales from isc (the scratch is padded).
template <int G>
[[gnu::always_inline]] inline void split_hi_lo(int8_t* hi, int8_t* lo, const int16_t* isc) {
  static_assert(G == 16 || G == 32);
  // Lane i holds bytes 2i and 2i + 1: both in group 2i / G of the 64.
  const __m512i idx = G == 16 ? _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1,
                                                 0, 0, 0, 0, 0, 0, 0, 0)
                              : _mm512_set_epi16(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0,
                                                 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i sc = _mm512_permutexvar_epi16(idx, _mm512_castsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(isc))));
  const __m512i v = _mm512_loadu_si512(hi);
  const __m512i even = _mm512_mullo_epi16(_mm512_srai_epi16(_mm512_slli_epi16(v, 8), 8), sc);
  const __m512i odd = _mm512_mullo_epi16(_mm512_srai_epi16(v, 8), sc);
  const __m512i low_byte = _mm512_set1_epi16(0x00FF), six_bits = _mm512_set1_epi16(63);
  _mm512_storeu_si512(hi, _mm512_or_si512(_mm512_and_si512(_mm512_srai_epi16(even, 6), low_byte),
                                          _mm512_slli_epi16(_mm512_srai_epi16(odd, 6), 8)));
  _mm512_storeu_si512(lo, _mm512_or_si512(_mm512_and_si512(even, six_bits),
                                          _mm512_slli_epi16(_mm512_and_si512(odd, six_bits), 8)));
}

// Unpacks the panel's rows into high and low parts of isc * q, d per super-block (ws) and the
// minimums (wm); missing rows of a partial panel are zero.
template <class U>
void prepare_panel_super(const uint8_t* w, int64_t rb, int64_t cols, int64_t r0, int nr, Scratch& s) {
  constexpr int G = U::G;
  const int64_t nsb = cols / kQKBlock, ng = cols / G;
  for (int r = 0; r < kT; ++r) {
    int8_t* hi = s.rows_q.data() + r * cols;
    int8_t* lo = s.rows_lo.data() + r * cols;
    if (r >= nr) {
      std::memset(hi, 0, static_cast<size_t>(cols));
      std::memset(lo, 0, static_cast<size_t>(cols));
      for (int64_t b = 0; b < nsb; ++b) s.ws[b * kT + r] = 0.0f;
      for (int64_t g = 0; g < ng; ++g) s.wm[g * kT + r] = 0.0f;
      continue;
    }
    // q lands in hi first, then each 64 values are rewritten in place.
    U::row(w + (r0 + r) * rb, cols, UnpackOut{hi, nullptr, s.wm.data() + r, kT, s.isc.data(), s.ws.data() + r});
    for (int64_t c = 0; c < cols; c += 64) split_hi_lo<G>(hi + c, lo + c, s.isc.data() + c / G);
  }
}

#include "engine/kernels/amx_bf16-inl.h"

template <class U>
MatmulFn avx512_fallback() {
  static const MatmulFn fn = avx512_kernel_table().matmul[dtype_index(U::kType)];
  return fn;
}

// kBf16: many tokens on the bf16 tiles (amx_bf16_kernel_table, opt-in); otherwise every product
// is the int8 tiles' exact one.
template <class U, bool kBf16>
void matmul(const void* w, int64_t cols, const float* xf, const void* xq, int n, float* __restrict y,
            int64_t ldy, int64_t r0, int64_t r1) {
  if (n < min_tokens<U>() || r0 >= r1) {
    avx512_fallback<U>()(w, cols, xf, xq, n, y, ldy, r0, r1);
    return;
  }
  if (kBf16 && xf != nullptr && n >= bf16_min_tokens<U>()) {
    matmul_bf16<U>(static_cast<const uint8_t*>(w), cols, xf, n, y, ldy, r0, r1);
    _tile_release();
    _mm256_zeroupper();
    return;
  }
  constexpr bool kSuper = U::kSuper;
  using A = Act<U, kSuper ? 64 : U::G>;
  const int64_t ng = cols / U::G, nb = cols / A::kElems, rb = dtype_row_bytes(U::kType, cols);
  Scratch& s = scratch();
  grow(s.rows_q, static_cast<size_t>(kT * cols));
  grow(s.ws, static_cast<size_t>(kT * ng));
  grow(s.wm, static_cast<size_t>(kT * ng));
  if constexpr (kSuper) {
    grow(s.rows_lo, static_cast<size_t>(kT * cols));
    grow(s.isc, static_cast<size_t>(ng + 4));  // split_hi_lo reads 4 scales at a time
  }
  A::pack(static_cast<const typename A::Block*>(xq), cols, n, s);
  const bool narrow = !kSuper && n <= kNarrow;
  if (narrow) {
    configure_tiles(U::G == 16 ? kNarrow16 : kNarrow32);
  } else {
    configure_tiles(kSuper ? kConfigSuper : U::G == 16 ? kConfig16 : kConfig32);
  }
  const auto* wb = static_cast<const uint8_t*>(w);
  const int64_t chunks = (n + kT - 1) / kT;
  for (int64_t p = r0; p < r1; p += kT) {
    const int nr = static_cast<int>(r1 - p < kT ? r1 - p : kT);
    PanelA a{};
    GroupScales scales{s.ws.data()};
    if constexpr (kSuper) {
      prepare_panel_super<U>(wb, rb, cols, p, nr, s);
    } else if constexpr (U::kType == DType::kQ8_0) {
      // One chunk (a batched decode step) uses each panel once: its tiles load straight from the
      // blocks (a copy would cost more than it saves).
      if (chunks == 1 && nr == kT) {
        a = q8_0_in_place(wb, rb, p);
        scales = q8_0_scales_in_place(wb, rb, p);
        if (!narrow) {
          for (int64_t g = 0; g < ng; ++g) _mm512_storeu_ps(s.ws.data() + g * kT, scales.at(g));
        }
      } else {
        a = prepare_panel<U>(wb, rb, cols, p, nr, s);
      }
    } else {
      a = prepare_panel<U>(wb, rb, cols, p, nr, s);
    }
    // The next panel's rows (contiguous) stream into L2 while this one computes, a share per chunk,
    // so its unpack does not wait on DRAM.
    const int64_t next = p + kT < r1 ? p + kT : r1;
    const int64_t next_bytes = (std::min(next + kT, r1) - next) * rb;
    const int64_t share = (next_bytes / chunks + 63) / 64 * 64;
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t from = std::min(c * share, next_bytes);
      const Prefetch pf{reinterpret_cast<const char*>(wb + next * rb + from), std::min(share, next_bytes - from)};
      // Spread over the products where one chunk has to hide the whole next panel; in one go per
      // chunk where 16-token chunks share it (measured 5% faster at 256 tokens than spread).
      if (!narrow) pf.step(0, 1);
      const int t0 = static_cast<int>(c * kT), nt = n - t0 < kT ? n - t0 : kT;
      const int8_t* act = s.act.data() + c * kT * cols;
      const float* xd = s.xd.data() + c * nb * kT;
      const float* xs = s.xs.data() + c * ng * kT;
      if constexpr (kSuper) {
        panel_times_chunk_super<U>(s, act, xd, xs, cols, y + t0 * ldy + p, ldy, nr, nt);
      } else if (narrow) {
        panel_times_chunk_narrow<U>(a, scales, s.wm.data(), act, xd, xs, ng, y + t0 * ldy + p, ldy, nr, nt, pf);
      } else {
        panel_times_chunk<U>(a, s.ws.data(), s.wm.data(), act, xd, xs, ng, y + t0 * ldy + p, ldy, nr, nt);
      }
    }
  }
  _tile_release();
  _mm256_zeroupper();  // built with -mno-vzeroupper (GCC would put one next to every tile asm)
}

// Every block type's matmul of several tokens on the tiles, as `set` instantiates it.
template <class F>
void for_each_unpack(F&& set) {
  set(UnpackQ8_0{});
  set(UnpackQ4_0{});
  set(UnpackQ4_1{});
  set(UnpackQ5_0{});
  set(UnpackQ5_1{});
  set(UnpackIQ4_NL{});
  set(UnpackQ2_K{});
  set(UnpackQ3_K{});
  set(UnpackQ45_K<false>{});
  set(UnpackQ45_K<true>{});
  set(UnpackQ6_K{});
  set(UnpackIQ4_XS{});
}

}  // namespace
}  // namespace amx_impl

bool amx_usable() {
#if defined(ANELM_AMX_EMULATED)  // tests/support/amx_on_avx2.h interprets the tile instructions
  return true;
#endif
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool tile = (d >> 24) & 1, int8 = (d >> 25) & 1;
    if (!tile || !int8) return false;
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;  // <asm/prctl.h>
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
}

const KernelTable& amx_kernel_table() {
  using namespace amx_impl;
  static const KernelTable table = [] {
    KernelTable t = avx512_kernel_table();
    t.isa = Isa::kAmx;
    for_each_unpack([&t]<class U>(U) { t.matmul[dtype_index(U::kType)] = matmul<U, false>; });
    return t;
  }();
  return table;
}

const KernelTable* amx_bf16_kernel_table() {
  using namespace amx_impl;
  if (!amx_usable() || !amx_bf16_usable()) return nullptr;
  static const KernelTable table = [] {
    KernelTable t = amx_kernel_table();
    for_each_unpack([&t]<class U>(U) {
      t.matmul[dtype_index(U::kType)] = matmul<U, true>;
      t.bf16_min_tokens[dtype_index(U::kType)] = bf16_min_tokens<U>();
    });
    return t;
  }();
  return &table;
}

}  // namespace anelm::engine::kernels
