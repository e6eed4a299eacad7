// Forced in (-include) when engine/kernels/kernels_amx.cpp is compiled a second time for a CPU
// without AMX (see avx512_on_avx2.h, which this extends). The tile instructions become a small
// interpreter over eight thread-local tiles, written from Intel's descriptions of LDTILECFG,
// TILELOADD, TILESTORED, TILEZERO, TDPBSSD and TDPBF16PS. It is at least as strict as the chip:
// a tile instruction before a configuration, or products whose tile shapes disagree (where the
// chip raises #UD), stop the process with a message. Correctness only, never speed.
#pragma once

#include "avx512_on_avx2.h"

#include <cmath>
#include <cstdio>

#include "engine/kernels/fp16.h"
#include <cstdlib>

namespace anelm_amx_emu {

struct Tile {
  int rows = 0, colsb = 0;
  alignas(64) uint8_t data[16][64] = {};
};
struct Tiles {
  bool configured = false;
  Tile t[8];
};
inline thread_local Tiles g_tiles;

[[noreturn]] inline void fault(const char* what, int a = -1, int b = -1) {
  std::fprintf(stderr, "AMX emulation: %s (%d, %d): the chip raises #UD here\n", what, a, b);
  std::abort();
}

// Palette 1: 8 tiles of at most 16 rows x 64 bytes; the rows and bytes of tile t at 48 + t and
// 16 + 2t of the 64-byte configuration.
inline void loadconfig(const void* config) {
  const auto* c = static_cast<const uint8_t*>(config);
  if (c[0] != 1) fault("palette is not 1", c[0]);
  for (int i = 0; i < 8; ++i) {
    Tile& t = g_tiles.t[i];
    t.colsb = c[16 + 2 * i] | (c[17 + 2 * i] << 8);
    t.rows = c[48 + i];
    if (t.rows > 16 || t.colsb > 64) fault("tile larger than 16 rows x 64 bytes", t.rows, t.colsb);
    std::memset(t.data, 0, sizeof(t.data));
  }
  g_tiles.configured = true;
}
inline void release() { g_tiles = Tiles{}; }
inline Tile& tile(int i) {
  if (!g_tiles.configured) fault("tile instruction without a configuration", i);
  return g_tiles.t[i];
}
inline void loadd(int i, const void* base, long stride) {
  Tile& t = tile(i);
  std::memset(t.data, 0, sizeof(t.data));  // rows and bytes past the configured shape read as zero
  for (int r = 0; r < t.rows; ++r) std::memcpy(t.data[r], static_cast<const char*>(base) + r * stride, t.colsb);
}
inline void stored(int i, void* base, long stride) {
  const Tile& t = tile(i);
  for (int r = 0; r < t.rows; ++r) std::memcpy(static_cast<char*>(base) + r * stride, t.data[r], t.colsb);
}
inline void zero(int i) { std::memset(tile(i).data, 0, sizeof(tile(i).data)); }

// C (M x N dwords) += A (M x K dwords) . B (K rows x N dwords): the shapes the chip requires.
inline void check_shapes(const Tile& c, const Tile& a, const Tile& b) {
  if (c.rows != a.rows) fault("C and A rows differ", c.rows, a.rows);
  if (a.colsb != 4 * b.rows) fault("A bytes per row are not 4 x B rows", a.colsb, b.rows);
  if (b.colsb != c.colsb) fault("B and C bytes per row differ", b.colsb, c.colsb);
}
inline void dpbssd(int ic, int ia, int ib) {
  Tile &c = tile(ic), &a = tile(ia), &b = tile(ib);
  check_shapes(c, a, b);
  for (int m = 0; m < c.rows; ++m) {
    for (int n = 0; n < c.colsb / 4; ++n) {
      int32_t acc;
      std::memcpy(&acc, c.data[m] + 4 * n, 4);
      uint32_t sum = static_cast<uint32_t>(acc);  // wraps as the chip's dword adds do
      for (int k = 0; k < a.colsb / 4; ++k) {
        for (int i = 0; i < 4; ++i) {
          sum += static_cast<uint32_t>(static_cast<int8_t>(a.data[m][4 * k + i]) *
                                       static_cast<int8_t>(b.data[k][4 * n + i]));
        }
      }
      acc = static_cast<int32_t>(sum);
      std::memcpy(c.data[m] + 4 * n, &acc, 4);
    }
  }
}
// bf16 inputs with denormals read as zero; each pair's products added to the fp32 sum in turn,
// a denormal result flushed to zero.
inline float bf16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return anelm::engine::kernels::bf16_to_float((h & 0x7F80) == 0 ? h & 0x8000 : h);
}
inline float flush(float f) { return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f; }
inline void dpbf16ps(int ic, int ia, int ib) {
  Tile &c = tile(ic), &a = tile(ia), &b = tile(ib);
  check_shapes(c, a, b);
  for (int m = 0; m < c.rows; ++m) {
    for (int n = 0; n < c.colsb / 4; ++n) {
      float acc;
      std::memcpy(&acc, c.data[m] + 4 * n, 4);
      for (int k = 0; k < a.colsb / 4; ++k) {
        acc = flush(acc + bf16(a.data[m] + 4 * k) * bf16(b.data[k] + 4 * n));
        acc = flush(acc + bf16(a.data[m] + 4 * k + 2) * bf16(b.data[k] + 4 * n + 2));
      }
      std::memcpy(c.data[m] + 4 * n, &acc, 4);
    }
  }
}

// VCVTNE2PS2BF16: b's 16 values in the low half, a's in the high; nearest-even, denormals to signed
// zero, NaNs kept quiet.
inline uint16_t to_bf16(float f) { return anelm::engine::kernels::float_to_bf16(flush(f)); }
inline __m512bh cvtne2ps_pbh(__m512 a, __m512 b) {
  const auto fa = anelm_avx512_emu::lanes<float>(a), fb = anelm_avx512_emu::lanes<float>(b);
  std::array<uint16_t, 32> r;
  for (int i = 0; i < 16; ++i) r[i] = to_bf16(fb[i]), r[16 + i] = to_bf16(fa[i]);
  return anelm_avx512_emu::vec<__m512bh>(r);
}

template <int kScale>
__m512i mask_i32gather_epi32(__m512i src, __mmask16 k, __m512i index, const void* base) {
  auto r = anelm_avx512_emu::lanes<int32_t>(src);
  const auto idx = anelm_avx512_emu::lanes<int32_t>(index);
  for (int i = 0; i < 16; ++i) {
    if ((k >> i) & 1) std::memcpy(&r[i], static_cast<const char*>(base) + static_cast<int64_t>(idx[i]) * kScale, 4);
  }
  return anelm_avx512_emu::vec<__m512i>(r);
}
inline __m256i cvtepi32_epi16(__m512i v) {  // vpmovdw truncates
  const auto a = anelm_avx512_emu::lanes<int32_t>(v);
  std::array<int16_t, 16> r;
  for (int i = 0; i < 16; ++i) r[i] = static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint32_t>(a[i]) & 0xFFFF));
  return anelm_avx512_emu::vec<__m256i>(r);
}
inline __m512i cvtepi8_epi32(__m128i v) {
  return anelm_avx512_emu::join<__m512i>(_mm256_cvtepi8_epi32(v), _mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)));
}
inline __mmask32 test_epi8_mask(__m256i a, __m256i b) {
  return static_cast<__mmask32>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(a, b), _mm256_setzero_si256())) ^ -1);
}

}  // namespace anelm_amx_emu

#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbssd
#undef _tile_dpbf16ps
#define _tile_loadconfig anelm_amx_emu::loadconfig
#define _tile_release anelm_amx_emu::release
#define _tile_loadd anelm_amx_emu::loadd
#define _tile_stored anelm_amx_emu::stored
#define _tile_zero anelm_amx_emu::zero
#define _tile_dpbssd anelm_amx_emu::dpbssd
#define _tile_dpbf16ps anelm_amx_emu::dpbf16ps
#define _mm256_zeroupper() ((void)0)
#define _mm512_cvtne2ps_pbh anelm_amx_emu::cvtne2ps_pbh
#define _mm512_mask_i32gather_epi32(src, k, index, base, scale) \
  anelm_amx_emu::mask_i32gather_epi32<(scale)>(src, k, index, base)
#define _mm512_i32gather_epi32(index, base, scale) \
  anelm_amx_emu::mask_i32gather_epi32<(scale)>(_mm512_setzero_si512(), 0xFFFF, index, base)
#define _mm512_i32gather_ps(index, base, scale)                                                  \
  _mm512_castsi512_ps(anelm_amx_emu::mask_i32gather_epi32<(scale)>(_mm512_setzero_si512(), 0xFFFF, \
                                                                   index, base))
#define _mm512_cvtepi32_epi16 anelm_amx_emu::cvtepi32_epi16
#define _mm512_cvtepi8_epi32 anelm_amx_emu::cvtepi8_epi32
#define _mm256_test_epi8_mask anelm_amx_emu::test_epi8_mask
