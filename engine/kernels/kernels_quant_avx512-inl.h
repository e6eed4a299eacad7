// AVX-512 decode (GEMV) kernels for block types whose 256-bit tiles (kernels_quant_simd-inl.h) leave
// bandwidth unused: R rows share each activation load, two blocks per zmm, rows R ahead prefetched
// (the q4_0_rows2 pattern). Included by kernels_avx512.cpp after kernels_quant_simd-inl.h.

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
    for (int r = 0; r < R; ++r) q5_0_tile<1>(static_cast<const BlockQ5_0*>(rows[r]) + b, kQBlock, x + b, tail + r);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]) + tail[r];
}

struct Q5_0Kernel512 : Q5_0Kernel {
  template <int R>
  static void rows(const void* const* r, int64_t cols, const QBlock8* x, float* out, int64_t rb) {
    q5_0_rows2<R>(r, cols, x, out, rb);
  }
};
