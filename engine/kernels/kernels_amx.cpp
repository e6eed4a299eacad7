// AMX kernel table: the AVX-512 table with prefill matmuls of the block types on AMX-INT8 tiles.
//
// Why: on CPUs with AMX (Sapphire Rapids and later) one TDPBSSD multiplies a 16x64 by a 64x16 int8
// tile; VNNI prefill of quantised weights is several times slower per core, and llama.cpp uses AMX.
//
// How: the activations are packed once per call into B tiles (16 tokens x G values of a group,
// VNNI-interleaved). A thread's rows are cut into panels of 16; a panel's A tiles come from its rows
// unpacked once to int8 with a float scale (and minimum) per group of G = 32 or 16 values. Per
// group, one TDPBSSD gives the exact int32 dots of 16 rows x 16 tokens, and an AVX-512 epilogue adds
// scale_w * d_x * dot (+ min_w * d_x * sum(q_x)) into float accumulators; only the float summation
// order differs from the other kernels. Decode (few tokens) keeps the AVX-512 GEMV.
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
constexpr int kMinTokens = 16;  // fewer tokens: the panel unpack is not amortised, use AVX-512

// Tile registers (GCC's intrinsics paste the number, so literals below): tmm0/tmm1 accumulate two
// groups, tmm2/tmm3 hold their weights, tmm4/tmm5 their activations.
enum Tile { kC0 = 0, kC1 = 1, kA0 = 2, kA1 = 3, kB0 = 4, kB1 = 5 };

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
  for (int t : {kC0, kC1}) c.rows[t] = kT, c.colsb[t] = kT * 4;
  for (int t : {kA0, kA1}) c.rows[t] = kT, c.colsb[t] = static_cast<uint16_t>(g);
  for (int t : {kB0, kB1}) c.rows[t] = static_cast<uint8_t>(g / 4), c.colsb[t] = kT * 4;
  return c;
}
constinit const TileConfig kConfig16 = make_config(16), kConfig32 = make_config(32);

void configure_tiles(int g) {
  __asm__ volatile("" ::: "memory");
  _tile_loadconfig(g == 16 ? &kConfig16 : &kConfig32);
}

// Per-thread scratch, grown to the largest shape seen (never per token).
struct Scratch {
  std::vector<int8_t> act;      // [chunks][groups][G/4][16 tokens][4]: B tiles
  std::vector<float> xd, xs;    // [chunks][groups][16 tokens]: activation scale, scale * sum(q)
  std::vector<int8_t> rows_q;   // [16][cols]: the panel's rows unpacked (A tiles, stride cols)
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

// The activation rows (QBlock8 for 32-element types, QBlockK for super-block types) as B tiles.
template <class U>
struct Act {
  static constexpr int G = U::G;
  static constexpr bool kK = uses_q8k_activations(U::kType);
  using Block = std::conditional_t<kK, QBlockK, QBlock8>;
  static constexpr int kElems = kK ? kQKBlock : kQBlock;
  static constexpr int kPerBlock = kElems / G;  // groups per activation block

  // sum(q) of group j of an activation block (QBlockK keeps sums per 16 values).
  static int32_t group_sum(const Block& b, int64_t j) {
    if constexpr (kK) {
      int32_t sum = 0;
      for (int k = 0; k < G / 16; ++k) sum += b.bsums[j * (G / 16) + k];
      return sum;
    } else {
      return b.sum;
    }
  }

  // Packs n tokens: chunk c, group g is 16 tokens' G values, dword i of token t at [i][t]; tokens
  // past n are zero. Also each group's scale and scale * sum(q), token-minor.
  static void pack(const Block* x, int64_t cols, int n, Scratch& s) {
    const int64_t ng = cols / G, nb = cols / kElems, chunks = (n + kT - 1) / kT;
    grow(s.act, static_cast<size_t>(chunks * kT * cols));
    grow(s.xd, static_cast<size_t>(chunks * ng * kT));
    grow(s.xs, static_cast<size_t>(chunks * ng * kT));
    const __m512i tok = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(static_cast<int>(nb * sizeof(Block))));
    for (int64_t c = 0; c < chunks; ++c) {
      const int nt = static_cast<int>(n - c * kT < kT ? n - c * kT : kT);
      const __mmask16 live = static_cast<__mmask16>((1u << nt) - 1);
      const auto* first = reinterpret_cast<const uint8_t*>(x + c * kT * nb);
      for (int64_t g = 0; g < ng; ++g) {
        const uint8_t* src = first + g / kPerBlock * sizeof(Block) + offsetof(Block, qs) + g % kPerBlock * G;
        int8_t* dst = s.act.data() + (c * ng + g) * kT * G;
        for (int i = 0; i < G / 4; ++i) {
          const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, tok, src + 4 * i, 1);
          _mm512_storeu_si512(dst + i * 64, v);
        }
        for (int t = 0; t < kT; ++t) {
          const int64_t at = (c * ng + g) * kT + t;
          if (t >= nt) {
            s.xd[at] = s.xs[at] = 0.0f;
            continue;
          }
          const Block& b = x[(c * kT + t) * nb + g / kPerBlock];
          s.xd[at] = b.d;
          if constexpr (U::kMin) s.xs[at] = b.d * static_cast<float>(group_sum(b, g % kPerBlock));
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

// Groups g (tmm0) and g + 1 (tmm1, when it exists) into the tile unit.
template <int G>
[[gnu::always_inline]] inline void issue(const PanelA& a, const int8_t* act, int64_t g, int64_t ng) {
  _tile_loadd(2, a.at(g), a.row_stride);
  _tile_loadd(4, act + g * kT * G, kT * 4);
  _tile_zero(0);
  _tile_dpbssd(0, 2, 4);
  if (g + 1 < ng) {
    _tile_loadd(3, a.at(g + 1), a.row_stride);
    _tile_loadd(5, act + (g + 1) * kT * G, kT * 4);
    _tile_zero(1);
    _tile_dpbssd(1, 3, 5);
  }
}

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
  transpose16(acc.v);
  const __mmask16 m = static_cast<__mmask16>((1u << nr) - 1);
#pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
    if (t < nt) _mm512_mask_storeu_ps(y + t * ldy, m, acc.v[t]);
  }
}

// The panel's rows unpacked into the scratch rows (missing rows of a partial panel are zero). Even
// Q8_0 is copied: tile loads from the 34-byte blocks in place, each row straddling cache lines, ran at
// two thirds of the speed of loads from the packed copy.
template <class U>
PanelA prepare_panel(const uint8_t* w, int64_t rb, int64_t cols, int64_t r0, int nr, Scratch& s) {
  const int64_t ng = cols / U::G;
  for (int r = 0; r < kT; ++r) {
    int8_t* q = s.rows_q.data() + r * cols;
    if (r < nr) {
      U::row(w + (r0 + r) * rb, cols, UnpackOut{q, s.ws.data() + r, s.wm.data() + r, kT});
    } else {
      std::memset(q, 0, static_cast<size_t>(cols));
      for (int64_t g = 0; g < ng; ++g) s.ws[g * kT + r] = s.wm[g * kT + r] = 0.0f;
    }
  }
  return {s.rows_q.data(), U::G, cols};
}

template <class U>
MatmulFn avx512_fallback() {
  static const MatmulFn fn = avx512_kernel_table().matmul[dtype_index(U::kType)];
  return fn;
}

template <class U>
void matmul(const void* w, int64_t cols, const float* xf, const void* xq, int n, float* __restrict y,
            int64_t ldy, int64_t r0, int64_t r1) {
  if (n < kMinTokens || r0 >= r1) {
    avx512_fallback<U>()(w, cols, xf, xq, n, y, ldy, r0, r1);
    return;
  }
  const int64_t ng = cols / U::G, rb = dtype_row_bytes(U::kType, cols);
  Scratch& s = scratch();
  grow(s.rows_q, static_cast<size_t>(kT * cols));
  grow(s.ws, static_cast<size_t>(kT * ng));
  grow(s.wm, static_cast<size_t>(kT * ng));
  Act<U>::pack(static_cast<const typename Act<U>::Block*>(xq), cols, n, s);
  configure_tiles(U::G);
  for (int64_t p = r0; p < r1; p += kT) {
    const int nr = static_cast<int>(r1 - p < kT ? r1 - p : kT);
    const PanelA a = prepare_panel<U>(static_cast<const uint8_t*>(w), rb, cols, p, nr, s);
    for (int t0 = 0; t0 < n; t0 += kT) {
      const int64_t c = t0 / kT;
      panel_times_chunk<U>(a, s.ws.data(), s.wm.data(), s.act.data() + c * kT * cols, s.xd.data() + c * ng * kT,
                           s.xs.data() + c * ng * kT, ng, y + t0 * ldy + p, ldy, nr, n - t0 < kT ? n - t0 : kT);
    }
  }
  _tile_release();
  _mm256_zeroupper();  // built with -mno-vzeroupper (GCC would put one next to every tile asm)
}

}  // namespace
}  // namespace amx_impl

bool amx_usable() {
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
    auto set = [&t]<class U>(U) { t.matmul[dtype_index(U::kType)] = matmul<U>; };
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
    return t;
  }();
  return table;
}

}  // namespace anelm::engine::kernels
