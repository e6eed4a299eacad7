// Row unpackers for the AMX matmuls (included by kernels_amx.cpp): one weight row of a block type ->
// int8 values q[cols], and per group of G values a float scale and (types with a minimum) an offset,
// so that W[c] = scale[g] * q[c] + min[g]; super-block types (kSuper) give the scale as an integer
// sub-block scale isc[g] times the super-block's d, exactly as the GGUF layouts in dtype.h define it
// (reference.cpp decodes the same layouts element by element). The common types are vectorised;
// the rest decode element by element, which prefill amortises over every token of the batch.

struct UnpackOut {
  int8_t* q;      // [cols]
  float* scale;   // [cols / G], `stride` floats apart (32-element types)
  float* min;     // [cols / G], `stride` floats apart; written only by types with kMin
  int64_t stride;
  int16_t* isc;   // [cols / G] integer sub-block scales (super-block types, kSuper)
  float* sd;      // [cols / 256] super-block scales d, `stride` floats apart (kSuper)
};

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline void store32(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }

// 16 bytes of Q4_0-ordered nibbles -> the 32 values of the block (low nibbles first).
inline __m256i nibbles32(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  return _mm256_maskz_mov_epi8(h, _mm256_set1_epi8(0x10));
}

struct UnpackQ8_0 {
  static constexpr DType kType = DType::kQ8_0;
  static constexpr int G = kQBlock;
  static constexpr bool kMin = false;
  static constexpr bool kSuper = false;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    const auto* b = static_cast<const BlockQ8_0*>(w);
    for (int64_t g = 0; g < cols / G; ++g) {
      store32(o.q + g * G, load32(b[g].qs));
      o.scale[g * o.stride] = _cvtsh_ss(b[g].d);
    }
  }
};

struct UnpackQ4_0 {
  static constexpr DType kType = DType::kQ4_0;
  static constexpr int G = kQBlock;
  static constexpr bool kMin = false;
  static constexpr bool kSuper = false;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    const auto* b = static_cast<const BlockQ4_0*>(w);
    for (int64_t g = 0; g < cols / G; ++g) {
      store32(o.q + g * G, _mm256_sub_epi8(nibbles32(b[g].qs), _mm256_set1_epi8(8)));
      o.scale[g * o.stride] = _cvtsh_ss(b[g].d);
    }
  }
};

struct UnpackQ4_1 {
  static constexpr DType kType = DType::kQ4_1;
  static constexpr int G = kQBlock;
  static constexpr bool kMin = true;
  static constexpr bool kSuper = false;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    const auto* b = static_cast<const BlockQ4_1*>(w);
    for (int64_t g = 0; g < cols / G; ++g) {
      store32(o.q + g * G, nibbles32(b[g].qs));
      o.scale[g * o.stride] = _cvtsh_ss(b[g].d);
      o.min[g * o.stride] = _cvtsh_ss(b[g].m);
    }
  }
};

struct UnpackQ5_0 {
  static constexpr DType kType = DType::kQ5_0;
  static constexpr int G = kQBlock;
  static constexpr bool kMin = false;
  static constexpr bool kSuper = false;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    const auto* b = static_cast<const BlockQ5_0*>(w);
    for (int64_t g = 0; g < cols / G; ++g) {
      const __m256i q = _mm256_or_si256(nibbles32(b[g].qs), fifth_bits(b[g].qh));
      store32(o.q + g * G, _mm256_sub_epi8(q, _mm256_set1_epi8(16)));
      o.scale[g * o.stride] = _cvtsh_ss(b[g].d);
    }
  }
};

struct UnpackQ5_1 {
  static constexpr DType kType = DType::kQ5_1;
  static constexpr int G = kQBlock;
  static constexpr bool kMin = true;
  static constexpr bool kSuper = false;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    const auto* b = static_cast<const BlockQ5_1*>(w);
    for (int64_t g = 0; g < cols / G; ++g) {
      store32(o.q + g * G, _mm256_or_si256(nibbles32(b[g].qs), fifth_bits(b[g].qh)));
      o.scale[g * o.stride] = _cvtsh_ss(b[g].d);
      o.min[g * o.stride] = _cvtsh_ss(b[g].m);
    }
  }
};

inline __m256i iq4_lookup(__m256i nib) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues));
  return _mm256_shuffle_epi8(_mm256_set_m128i(t, t), nib);
}

struct UnpackIQ4_NL {
  static constexpr DType kType = DType::kIQ4_NL;
  static constexpr int G = kQBlock;
  static constexpr bool kMin = false;
  static constexpr bool kSuper = false;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    const auto* b = static_cast<const BlockIQ4_NL*>(w);
    for (int64_t g = 0; g < cols / G; ++g) {
      store32(o.q + g * G, iq4_lookup(nibbles32(b[g].qs)));
      o.scale[g * o.stride] = _cvtsh_ss(b[g].d);
    }
  }
};

// Q4_K / Q5_K: sub-block 2j is the low nibbles of qs[32j..], 2j + 1 the high ones; Q5_K's fifth bit
// of element 32s + l is bit s of qh[l].
template <bool kFive>
struct UnpackQ45_K {
  static constexpr DType kType = kFive ? DType::kQ5_K : DType::kQ4_K;
  static constexpr int G = kQBlock;
  static constexpr bool kMin = true;
  static constexpr bool kSuper = true;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
    const auto* b = static_cast<const Block*>(w);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t s = 0; s < cols / kQKBlock; ++s) {
      const float d = _cvtsh_ss(b[s].d), dmin = _cvtsh_ss(b[s].dmin);
      int8_t* q = o.q + s * kQKBlock;
      [[maybe_unused]] __m256i qh;
      if constexpr (kFive) qh = load32(b[s].qh);
      for (int j = 0; j < 4; ++j) {
        const __m256i v = load32(b[s].qs + 32 * j);
        __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        if constexpr (kFive) {
          const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << (2 * j)));
          lo = _mm256_or_si256(lo, _mm256_maskz_mov_epi8(_mm256_test_epi8_mask(qh, bit), _mm256_set1_epi8(0x10)));
          hi = _mm256_or_si256(hi, _mm256_maskz_mov_epi8(_mm256_test_epi8_mask(qh, _mm256_add_epi8(bit, bit)),
                                                          _mm256_set1_epi8(0x10)));
        }
        store32(q + 64 * j, lo);
        store32(q + 64 * j + 32, hi);
      }
      o.sd[s * o.stride] = d;
      for (int j = 0; j < 8; ++j) {
        int sc = 0, mn = 0;
        k4_scale_min(b[s].scales, j, sc, mn);
        o.isc[s * 8 + j] = static_cast<int16_t>(sc);
        o.min[(s * 8 + j) * o.stride] = -dmin * static_cast<float>(mn);
      }
    }
  }
};

// Q6_K: element 128h + 32s + l is (low | high << 4) - 32 with low = nibble (s / 2) of ql[64h + l +
// 32 (s & 1)] and high = bits 2s..2s+1 of qh[32h + l]; sub-blocks of 16 with int8 scales.
struct UnpackQ6_K {
  static constexpr DType kType = DType::kQ6_K;
  static constexpr int G = 16;
  static constexpr bool kMin = false;
  static constexpr bool kSuper = true;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    const auto* b = static_cast<const BlockQ6_K*>(w);
    const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3);
    for (int64_t sb = 0; sb < cols / kQKBlock; ++sb) {
      int8_t* q = o.q + sb * kQKBlock;
      for (int h = 0; h < 2; ++h) {
        const __m256i hv = load32(b[sb].qh + 32 * h);
        for (int s = 0; s < 4; ++s) {
          const __m256i lb = load32(b[sb].ql + 64 * h + 32 * (s & 1));
          const __m256i low = _mm256_and_si256(s < 2 ? lb : _mm256_srli_epi16(lb, 4), low4);
          const __m256i high = _mm256_and_si256(_mm256_srlv_epi16(hv, _mm256_set1_epi16(static_cast<short>(2 * s))), two);
          const __m256i v = _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
          store32(q + 128 * h + 32 * s, _mm256_sub_epi8(v, _mm256_set1_epi8(32)));
        }
      }
      o.sd[sb * o.stride] = _cvtsh_ss(b[sb].d);
      for (int j = 0; j < 16; ++j) o.isc[sb * 16 + j] = b[sb].scales[j];
    }
  }
};

// Element by element (Q2_K, Q3_K, IQ4_XS): the layouts of dtype.h, as reference.cpp reads them.
struct UnpackQ2_K {
  static constexpr DType kType = DType::kQ2_K;
  static constexpr int G = 16;
  static constexpr bool kMin = true;
  static constexpr bool kSuper = true;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    const auto* b = static_cast<const BlockQ2_K*>(w);
    for (int64_t sb = 0; sb < cols / kQKBlock; ++sb) {
      for (int c = 0; c < kQKBlock; ++c) {
        const int h = c / 128, s = (c % 128) / 32, l = c % 32;
        o.q[sb * kQKBlock + c] = static_cast<int8_t>((b[sb].qs[32 * h + l] >> (2 * s)) & 3);
      }
      const float dmin = _cvtsh_ss(b[sb].dmin);
      o.sd[sb * o.stride] = _cvtsh_ss(b[sb].d);
      for (int j = 0; j < 16; ++j) {
        o.isc[sb * 16 + j] = static_cast<int16_t>(b[sb].scales[j] & 0x0F);
        o.min[(sb * 16 + j) * o.stride] = -dmin * static_cast<float>(b[sb].scales[j] >> 4);
      }
    }
  }
};

struct UnpackQ3_K {
  static constexpr DType kType = DType::kQ3_K;
  static constexpr int G = 16;
  static constexpr bool kMin = false;
  static constexpr bool kSuper = true;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    const auto* b = static_cast<const BlockQ3_K*>(w);
    for (int64_t sb = 0; sb < cols / kQKBlock; ++sb) {
      for (int c = 0; c < kQKBlock; ++c) {
        const int h = c / 128, s = (c % 128) / 32, l = c % 32;
        const int q = (b[sb].qs[32 * h + l] >> (2 * s)) & 3;
        const int high = (b[sb].hmask[l] >> (4 * h + s)) & 1;
        o.q[sb * kQKBlock + c] = static_cast<int8_t>(q - (high ? 0 : 4));
      }
      o.sd[sb * o.stride] = _cvtsh_ss(b[sb].d);
      for (int j = 0; j < 16; ++j) o.isc[sb * 16 + j] = static_cast<int16_t>(k3_scale(b[sb].scales, j));
    }
  }
};

struct UnpackIQ4_XS {
  static constexpr DType kType = DType::kIQ4_XS;
  static constexpr int G = kQBlock;
  static constexpr bool kMin = false;
  static constexpr bool kSuper = true;
  static void row(const void* w, int64_t cols, UnpackOut o) {
    const auto* b = static_cast<const BlockIQ4_XS*>(w);
    for (int64_t sb = 0; sb < cols / kQKBlock; ++sb) {
      o.sd[sb * o.stride] = _cvtsh_ss(b[sb].d);
      for (int ib = 0; ib < 8; ++ib) {
        store32(o.q + sb * kQKBlock + 32 * ib, iq4_lookup(nibbles32(b[sb].qs + 16 * ib)));
        const int ls = ((b[sb].scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((b[sb].scales_h >> (2 * ib)) & 3) << 4);
        o.isc[sb * 8 + ib] = static_cast<int16_t>(ls - 32);
      }
    }
  }
};
