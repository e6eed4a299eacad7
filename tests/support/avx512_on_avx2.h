// Forced in (-include) when engine/kernels/kernels_avx512.cpp is compiled a second time for a CPU
// without AVX-512, so its kernels can be checked against the scalar references where no such CPU is
// at hand (the AMD machines these tests mostly run on). The _mm512_* names become SIMDe's portable
// versions (Debian's libsimde-dev, built here from AVX2 halves or lane loops); the intrinsics its
// 0.7.4 release lacks are written below, lane by lane, from Intel's descriptions. Correctness only:
// nothing about speed can be learned from this build.
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

namespace anelm_avx512_emu {

template <class T, class V>
std::array<T, sizeof(V) / sizeof(T)> lanes(const V& v) {
  std::array<T, sizeof(V) / sizeof(T)> a;
  std::memcpy(a.data(), &v, sizeof(V));
  return a;
}
template <class V, class T, size_t N>
V vec(const std::array<T, N>& a) {
  static_assert(sizeof(V) == sizeof(T) * N);
  V v;
  std::memcpy(&v, a.data(), sizeof(V));
  return v;
}

// Masked loads and stores touch only the selected lanes (the chip suppresses faults on the rest;
// reading them here would hide an overrun from the sanitizers).
template <class T, class V, class M>
V maskz_load(M k, const void* p, V src = V{}) {
  auto a = lanes<T>(src);
  for (size_t i = 0; i < a.size(); ++i) {
    if ((k >> i) & 1) std::memcpy(&a[i], static_cast<const char*>(p) + i * sizeof(T), sizeof(T));
  }
  return vec<V>(a);
}
template <class T, class V, class M>
void mask_store(void* p, M k, const V& v) {
  const auto a = lanes<T>(v);
  for (size_t i = 0; i < a.size(); ++i) {
    if ((k >> i) & 1) std::memcpy(static_cast<char*>(p) + i * sizeof(T), &a[i], sizeof(T));
  }
}

inline __m512 maskz_loadu_ps(__mmask16 k, const void* p) { return maskz_load<float, __m512>(k, p); }
inline __m512 mask_loadu_ps(__m512 src, __mmask16 k, const void* p) { return maskz_load<float>(k, p, src); }
inline void mask_storeu_ps(void* p, __mmask16 k, __m512 v) { mask_store<float>(p, k, v); }
inline __m256i maskz_loadu_epi16(__mmask16 k, const void* p) { return maskz_load<uint16_t, __m256i>(k, p); }
inline void mask_storeu_epi16(void* p, __mmask16 k, __m256i v) { mask_store<uint16_t>(p, k, v); }

// Two 256-bit halves through the AVX2/F16C instruction of the same meaning.
template <class H, class V>
H half(const V& v, int h) {
  H r;
  std::memcpy(&r, reinterpret_cast<const char*>(&v) + sizeof(H) * h, sizeof(H));
  return r;
}
template <class V, class H>
V join(const H& lo, const H& hi) {
  static_assert(sizeof(V) == 2 * sizeof(H));
  V v;
  std::memcpy(&v, &lo, sizeof(H));
  std::memcpy(reinterpret_cast<char*>(&v) + sizeof(H), &hi, sizeof(H));
  return v;
}

inline __m512 cvtph_ps(__m256i h) {
  return join<__m512>(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
}
template <int kRounding>
__m256i cvtps_ph(__m512 v) {
  return _mm256_set_m128i(_mm256_cvtps_ph(half<__m256>(v, 1), kRounding), _mm256_cvtps_ph(half<__m256>(v, 0), kRounding));
}
// Rounds as MXCSR says (nearest-even by default), as vcvtps2dq does.
inline __m512i cvtps_epi32(__m512 v) {
  return join<__m512i>(_mm256_cvtps_epi32(half<__m256>(v, 0)), _mm256_cvtps_epi32(half<__m256>(v, 1)));
}
inline __m512 cvtepi32_ps(__m512i v) {
  return join<__m512>(_mm256_cvtepi32_ps(half<__m256i>(v, 0)), _mm256_cvtepi32_ps(half<__m256i>(v, 1)));
}
inline __m512i cvtepu16_epi32(__m256i v) {
  return join<__m512i>(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(v)), _mm256_cvtepu16_epi32(_mm256_extracti128_si256(v, 1)));
}
// vpmovdb truncates (keeps the low byte of each lane).
inline __m128i cvtepi32_epi8(__m512i v) {
  const auto a = lanes<int32_t>(v);
  std::array<int8_t, 16> r;
  for (int i = 0; i < 16; ++i) r[i] = static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint32_t>(a[i]) & 0xFF));
  return vec<__m128i>(r);
}
inline __m512i mask_srli_epi16(__m512i src, __mmask32 k, __m512i v, unsigned imm) {
  auto s = lanes<uint16_t>(src);
  const auto a = lanes<uint16_t>(v);
  for (int i = 0; i < 32; ++i) {
    if ((k >> i) & 1) s[i] = imm > 15 ? 0 : static_cast<uint16_t>(a[i] >> imm);
  }
  return vec<__m512i>(s);
}
inline __m512i zextsi256_si512(__m256i v) { return join<__m512i>(v, _mm256_setzero_si256()); }
inline __m512i zextsi128_si512(__m128i v) { return zextsi256_si512(_mm256_zextsi128_si256(v)); }
inline int reduce_add_epi32(__m512i v) {
  uint32_t s = 0;  // wraps as the vector adds do
  for (int32_t x : lanes<int32_t>(v)) s += static_cast<uint32_t>(x);
  return static_cast<int>(s);
}
inline float reduce_add_ps(__m512 v) {
  auto a = lanes<float>(v);  // pairwise halving, the tree GCC's sequence uses
  for (int w = 8; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) a[i] += a[i + w];
  }
  return a[0];
}
inline float reduce_max_ps(__m512 v) {
  auto a = lanes<float>(v);
  for (int w = 8; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) a[i] = a[i] > a[i + w] ? a[i] : a[i + w];
  }
  return a[0];
}

}  // namespace anelm_avx512_emu

// SIMDe 0.7.4's alias for _mm512_madd_epi16 takes the masked form's four arguments.
#undef _mm512_madd_epi16
#define _mm512_madd_epi16(a, b) simde_mm512_madd_epi16(a, b)
#define _mm512_shuffle_f32x4(a, b, imm) simde_mm512_shuffle_f32x4(a, b, imm)
#define _mm512_maskz_loadu_ps anelm_avx512_emu::maskz_loadu_ps
#define _mm512_mask_loadu_ps anelm_avx512_emu::mask_loadu_ps
#define _mm512_mask_storeu_ps anelm_avx512_emu::mask_storeu_ps
#define _mm256_maskz_loadu_epi16 anelm_avx512_emu::maskz_loadu_epi16
#define _mm256_mask_storeu_epi16 anelm_avx512_emu::mask_storeu_epi16
#define _mm512_cvtph_ps anelm_avx512_emu::cvtph_ps
#define _mm512_cvtps_ph(v, r) anelm_avx512_emu::cvtps_ph<(r)>(v)
#define _mm512_cvtps_epi32 anelm_avx512_emu::cvtps_epi32
#define _mm512_cvtepi32_ps anelm_avx512_emu::cvtepi32_ps
#define _mm512_cvtepu16_epi32 anelm_avx512_emu::cvtepu16_epi32
#define _mm512_cvtepi32_epi8 anelm_avx512_emu::cvtepi32_epi8
#define _mm512_mask_srli_epi16 anelm_avx512_emu::mask_srli_epi16
#define _mm512_zextsi128_si512 anelm_avx512_emu::zextsi128_si512
#define _mm512_zextsi256_si512 anelm_avx512_emu::zextsi256_si512
#define _mm512_reduce_add_epi32 anelm_avx512_emu::reduce_add_epi32
#define _mm512_reduce_add_ps anelm_avx512_emu::reduce_add_ps
#define _mm512_reduce_max_ps anelm_avx512_emu::reduce_max_ps
