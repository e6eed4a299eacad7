// Portable dot products of one weight row of the 32-element types (Q4_1, Q5_0, Q5_1, IQ4_NL: over
// QBlock8 activations) and the super-block types (Q2_K..Q6_K, IQ4_XS: over QBlockK activations),
// written as llama.cpp's scalar kernels compute them: each (super-)block decoded to small integers,
// integer dots per sub-block, one float scale per sub-block, mins folded in through the activation
// sums. Included by kernels_generic-inl.h (same rules: inside a per-ISA anonymous namespace).

// sum_i q[i] * x[i] over n int8 values.
inline int32_t g_idot(const int8_t* q, const int8_t* x, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += q[i] * x[i];
  return s;
}

// Q4_0-style nibbles of 16 bytes -> 32 values (low nibbles first), plus `offset`.
inline void g_unpack_nibbles(const uint8_t* qs, int offset, int8_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int8_t>((qs[j] & 0x0F) + offset);
    q[j + 16] = static_cast<int8_t>((qs[j] >> 4) + offset);
  }
}

inline void g_unpack_q5(const uint8_t* qs, const uint8_t* qh4, int offset, int8_t* q) {
  uint32_t qh;
  std::memcpy(&qh, qh4, 4);
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int8_t>(((qs[j] & 0x0F) | (((qh >> j) & 1) << 4)) + offset);
    q[j + 16] = static_cast<int8_t>(((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) + offset);
  }
}

float g_dot_q4_1(const void* row, const QBlock8* x, int64_t nb) {
  const auto* w = static_cast<const BlockQ4_1*>(row);
  float acc = 0.0f;
  int8_t q[32];
  for (int64_t b = 0; b < nb; ++b) {
    g_unpack_nibbles(w[b].qs, 0, q);
    acc += half_to_float(w[b].d) * x[b].d * static_cast<float>(g_idot(q, x[b].qs, 32)) +
           half_to_float(w[b].m) * x[b].d * static_cast<float>(x[b].sum);
  }
  return acc;
}

float g_dot_q5_0(const void* row, const QBlock8* x, int64_t nb) {
  const auto* w = static_cast<const BlockQ5_0*>(row);
  float acc = 0.0f;
  int8_t q[32];
  for (int64_t b = 0; b < nb; ++b) {
    g_unpack_q5(w[b].qs, w[b].qh, -16, q);
    acc += half_to_float(w[b].d) * x[b].d * static_cast<float>(g_idot(q, x[b].qs, 32));
  }
  return acc;
}

float g_dot_q5_1(const void* row, const QBlock8* x, int64_t nb) {
  const auto* w = static_cast<const BlockQ5_1*>(row);
  float acc = 0.0f;
  int8_t q[32];
  for (int64_t b = 0; b < nb; ++b) {
    g_unpack_q5(w[b].qs, w[b].qh, 0, q);
    acc += half_to_float(w[b].d) * x[b].d * static_cast<float>(g_idot(q, x[b].qs, 32)) +
           half_to_float(w[b].m) * x[b].d * static_cast<float>(x[b].sum);
  }
  return acc;
}

float g_dot_iq4_nl(const void* row, const QBlock8* x, int64_t nb) {
  const auto* w = static_cast<const BlockIQ4_NL*>(row);
  float acc = 0.0f;
  int8_t q[32];
  for (int64_t b = 0; b < nb; ++b) {
    for (int j = 0; j < 16; ++j) {
      q[j] = kIq4nlValues[w[b].qs[j] & 0x0F];
      q[j + 16] = kIq4nlValues[w[b].qs[j] >> 4];
    }
    acc += half_to_float(w[b].d) * x[b].d * static_cast<float>(g_idot(q, x[b].qs, 32));
  }
  return acc;
}

// Q2_K / Q3_K low bits: element 128h + 32s + l is bits 2s of qs[32h + l].
inline void g_unpack_2bit(const uint8_t* qs, int8_t* q) {
  for (int h = 0; h < 2; ++h)
    for (int s = 0; s < 4; ++s)
      for (int l = 0; l < 32; ++l) q[128 * h + 32 * s + l] = static_cast<int8_t>((qs[32 * h + l] >> (2 * s)) & 3);
}

float g_dot_q2_K(const void* row, const QBlockK* x, int64_t nb) {
  const auto* w = static_cast<const BlockQ2_K*>(row);
  float acc = 0.0f;
  int8_t q[256];
  for (int64_t b = 0; b < nb; ++b) {
    g_unpack_2bit(w[b].qs, q);
    int32_t sumi = 0, summ = 0;
    for (int j = 0; j < 16; ++j) {
      sumi += (w[b].scales[j] & 0x0F) * g_idot(q + 16 * j, x[b].qs + 16 * j, 16);
      summ += (w[b].scales[j] >> 4) * x[b].bsums[j];
    }
    acc += x[b].d * (half_to_float(w[b].d) * static_cast<float>(sumi) -
                     half_to_float(w[b].dmin) * static_cast<float>(summ));
  }
  return acc;
}

float g_dot_q3_K(const void* row, const QBlockK* x, int64_t nb) {
  const auto* w = static_cast<const BlockQ3_K*>(row);
  float acc = 0.0f;
  int8_t q[256];
  for (int64_t b = 0; b < nb; ++b) {
    g_unpack_2bit(w[b].qs, q);
    for (int c = 0; c < 256; ++c) {
      const int bit = 4 * (c / 128) + (c % 128) / 32;
      if (!((w[b].hmask[c % 32] >> bit) & 1)) q[c] = static_cast<int8_t>(q[c] - 4);
    }
    int32_t sumi = 0;
    for (int j = 0; j < 16; ++j) sumi += k3_scale(w[b].scales, j) * g_idot(q + 16 * j, x[b].qs + 16 * j, 16);
    acc += x[b].d * half_to_float(w[b].d) * static_cast<float>(sumi);
  }
  return acc;
}

// Q4_K / Q5_K: element 64j + l is the low (l < 32) or high nibble of qs[32j + l % 32].
template <bool kFive>
float g_dot_q45_K(const void* row, const QBlockK* x, int64_t nb) {
  using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  const auto* w = static_cast<const Block*>(row);
  float acc = 0.0f;
  int8_t q[256];
  for (int64_t b = 0; b < nb; ++b) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) {
        int lo = w[b].qs[32 * j + l] & 0x0F, hi = w[b].qs[32 * j + l] >> 4;
        if constexpr (kFive) {
          lo |= ((w[b].qh[l] >> (2 * j)) & 1) << 4;
          hi |= ((w[b].qh[l] >> (2 * j + 1)) & 1) << 4;
        }
        q[64 * j + l] = static_cast<int8_t>(lo);
        q[64 * j + 32 + l] = static_cast<int8_t>(hi);
      }
    }
    int32_t sumi = 0, summ = 0;
    for (int j = 0; j < 8; ++j) {
      int sc = 0, mn = 0;
      k4_scale_min(w[b].scales, j, sc, mn);
      sumi += sc * g_idot(q + 32 * j, x[b].qs + 32 * j, 32);
      summ += mn * (x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
    }
    acc += x[b].d * (half_to_float(w[b].d) * static_cast<float>(sumi) -
                     half_to_float(w[b].dmin) * static_cast<float>(summ));
  }
  return acc;
}

float g_dot_q6_K(const void* row, const QBlockK* x, int64_t nb) {
  const auto* w = static_cast<const BlockQ6_K*>(row);
  float acc = 0.0f;
  int8_t q[256];
  for (int64_t b = 0; b < nb; ++b) {
    for (int h = 0; h < 2; ++h)
      for (int s = 0; s < 4; ++s)
        for (int l = 0; l < 32; ++l) {
          const uint8_t lb = w[b].ql[64 * h + l + 32 * (s & 1)];
          const int low = s < 2 ? (lb & 0x0F) : (lb >> 4);
          const int high = (w[b].qh[32 * h + l] >> (2 * s)) & 3;
          q[128 * h + 32 * s + l] = static_cast<int8_t>((low | (high << 4)) - 32);
        }
    int32_t sumi = 0;
    for (int j = 0; j < 16; ++j) sumi += w[b].scales[j] * g_idot(q + 16 * j, x[b].qs + 16 * j, 16);
    acc += x[b].d * half_to_float(w[b].d) * static_cast<float>(sumi);
  }
  return acc;
}

float g_dot_iq4_xs(const void* row, const QBlockK* x, int64_t nb) {
  const auto* w = static_cast<const BlockIQ4_XS*>(row);
  float acc = 0.0f;
  int8_t q[32];
  for (int64_t b = 0; b < nb; ++b) {
    int32_t sumi = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((w[b].scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((w[b].scales_h >> (2 * ib)) & 3) << 4);
      for (int j = 0; j < 16; ++j) {
        q[j] = kIq4nlValues[w[b].qs[16 * ib + j] & 0x0F];
        q[j + 16] = kIq4nlValues[w[b].qs[16 * ib + j] >> 4];
      }
      sumi += (ls - 32) * g_idot(q, x[b].qs + 32 * ib, 32);
    }
    acc += x[b].d * half_to_float(w[b].d) * static_cast<float>(sumi);
  }
  return acc;
}

// Matmul over any of the dots above: one row at a time, every token of the batch.
template <DType kType, class X, float (*Dot)(const void*, const X*, int64_t)>
void g_matmul_blocks(const void* w, int64_t cols, const float*, const void* xq, int n,
                     float* __restrict y, int64_t ldy, int64_t r0, int64_t r1) {
  const int64_t nb = cols / dtype_block_elems(kType);
  const int64_t rb = dtype_row_bytes(kType, cols);
  const X* x = static_cast<const X*>(xq);
  for (int64_t r = r0; r < r1; ++r) {
    const void* row = static_cast<const uint8_t*>(w) + r * rb;
    for (int i = 0; i < n; ++i) y[i * ldy + r] = Dot(row, x + i * nb, nb);
  }
}

// Same float operations as ref::quantize_q8k, so the result is bit-identical.
void g_quantize_q8k(const float* x, int64_t n, QBlockK* __restrict out) {
  for (int64_t b = 0; b < n / kQKBlock; ++b) {
    const float* xb = x + b * kQKBlock;
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < kQKBlock; ++i) {
      if (std::fabs(xb[i]) > amax) {
        amax = std::fabs(xb[i]);
        max = xb[i];
      }
    }
    QBlockK& o = out[b];
    if (amax == 0.0f) {
      std::memset(&o, 0, sizeof(o));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int i = 0; i < kQKBlock; ++i) {
      const int q = static_cast<int>(std::nearbyint(iscale * xb[i]));
      o.qs[i] = static_cast<int8_t>(q < 127 ? q : 127);
    }
    for (int g = 0; g < kQKBlock / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += o.qs[16 * g + i];
      o.bsums[g] = static_cast<int16_t>(sum);
    }
    o.d = 1.0f / iscale;
  }
}

// Fills the new types' table slots with the portable kernels.
void g_fill_block_types(KernelTable& t) {
  t.matmul[dtype_index(DType::kQ4_1)] = g_matmul_blocks<DType::kQ4_1, QBlock8, g_dot_q4_1>;
  t.matmul[dtype_index(DType::kQ5_0)] = g_matmul_blocks<DType::kQ5_0, QBlock8, g_dot_q5_0>;
  t.matmul[dtype_index(DType::kQ5_1)] = g_matmul_blocks<DType::kQ5_1, QBlock8, g_dot_q5_1>;
  t.matmul[dtype_index(DType::kIQ4_NL)] = g_matmul_blocks<DType::kIQ4_NL, QBlock8, g_dot_iq4_nl>;
  t.matmul[dtype_index(DType::kQ2_K)] = g_matmul_blocks<DType::kQ2_K, QBlockK, g_dot_q2_K>;
  t.matmul[dtype_index(DType::kQ3_K)] = g_matmul_blocks<DType::kQ3_K, QBlockK, g_dot_q3_K>;
  t.matmul[dtype_index(DType::kQ4_K)] = g_matmul_blocks<DType::kQ4_K, QBlockK, g_dot_q45_K<false>>;
  t.matmul[dtype_index(DType::kQ5_K)] = g_matmul_blocks<DType::kQ5_K, QBlockK, g_dot_q45_K<true>>;
  t.matmul[dtype_index(DType::kQ6_K)] = g_matmul_blocks<DType::kQ6_K, QBlockK, g_dot_q6_K>;
  t.matmul[dtype_index(DType::kIQ4_XS)] = g_matmul_blocks<DType::kIQ4_XS, QBlockK, g_dot_iq4_xs>;
  t.quantize_q8k = g_quantize_q8k;
}
