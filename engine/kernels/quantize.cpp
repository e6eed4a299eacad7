// The weight quantizers and row converters (see quantize.h).
#include "engine/kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/kernels/fp16.h"
#include "engine/kernels/reference.h"

namespace anelm::engine::kernels {

void quantize_row_q8_0(const float* x, BlockQ8_0* out, int64_t k) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;  // ggml scales by the f32 d, not the f16 one
    out[b].d = float_to_half(d);
    for (int j = 0; j < 32; ++j) out[b].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

void quantize_row_q4_0(const float* x, BlockQ4_0* out, int64_t k) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    float amax = 0.0f, max = 0.0f;  // max keeps the sign of the largest-magnitude value
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = float_to_half(d);
    for (int j = 0; j < 16; ++j) {
      const uint8_t q0 = std::min<int8_t>(15, static_cast<int8_t>(x[j] * id + 8.5f));
      const uint8_t q1 = std::min<int8_t>(15, static_cast<int8_t>(x[16 + j] * id + 8.5f));
      out[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_row_q8_0(const BlockQ8_0* in, float* y, int64_t k) {
  for (int64_t b = 0; b < k / 32; ++b) {
    const float d = half_to_float(in[b].d);
    for (int j = 0; j < 32; ++j) y[b * 32 + j] = in[b].qs[j] * d;
  }
}

void dequantize_row_q4_0(const BlockQ4_0* in, float* y, int64_t k) {
  for (int64_t b = 0; b < k / 32; ++b) {
    const float d = half_to_float(in[b].d);
    for (int j = 0; j < 16; ++j) {
      y[b * 32 + j] = (static_cast<int>(in[b].qs[j] & 0x0f) - 8) * d;
      y[b * 32 + 16 + j] = (static_cast<int>(in[b].qs[j] >> 4) - 8) * d;
    }
  }
}

void row_to_f32(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::kF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(s[i]);
      return;
    }
    case DType::kBF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(s[i]);
      return;
    }
    case DType::kQ8_0: dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n); return;
    case DType::kQ4_0: dequantize_row_q4_0(static_cast<const BlockQ4_0*>(src), dst, n); return;
    default:
      // Q4_1 .. IQ4_XS: the element decoder of the reference (used for embedding rows and load-time
      // conversion only, never in a matmul).
      ref::dequantize_row(src, t, 0, n, dst);
      return;
  }
}

void row_from_f32(const float* src, DType t, void* dst, int64_t n) {
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::kF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_half(src[i]);
      return;
    }
    case DType::kBF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_bf16(src[i]);
      return;
    }
    case DType::kQ8_0: quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n); return;
    case DType::kQ4_0: quantize_row_q4_0(src, static_cast<BlockQ4_0*>(dst), n); return;
    case DType::kQ4_1: quantize_row_q4_1(src, static_cast<BlockQ4_1*>(dst), n); return;
    case DType::kQ5_0: quantize_row_q5_0(src, static_cast<BlockQ5_0*>(dst), n); return;
    case DType::kQ5_1: quantize_row_q5_1(src, static_cast<BlockQ5_1*>(dst), n); return;
    case DType::kIQ4_NL: quantize_row_iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), n); return;
    case DType::kQ2_K: quantize_row_q2_k(src, static_cast<BlockQ2_K*>(dst), n); return;
    case DType::kQ3_K: quantize_row_q3_k(src, static_cast<BlockQ3_K*>(dst), n); return;
    case DType::kQ4_K: quantize_row_q4_k(src, static_cast<BlockQ4_K*>(dst), n); return;
    case DType::kQ5_K: quantize_row_q5_k(src, static_cast<BlockQ5_K*>(dst), n); return;
    case DType::kQ6_K: quantize_row_q6_k(src, static_cast<BlockQ6_K*>(dst), n); return;
    case DType::kIQ4_XS: quantize_row_iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), n); return;
  }
}

std::optional<DType> writable_type_for(DType want, int64_t cols) {
  if (cols % dtype_block_elems(want) == 0) return want;
  DType fallback = want;
  switch (want) {
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kIQ4_XS: fallback = DType::kIQ4_NL; break;
    case DType::kQ4_K: fallback = DType::kQ5_0; break;
    case DType::kQ5_K: fallback = DType::kQ5_1; break;
    case DType::kQ6_K: fallback = DType::kQ8_0; break;
    default: return std::nullopt;  // a 32-element type already
  }
  if (cols % dtype_block_elems(fallback) == 0) return fallback;
  return std::nullopt;
}

}  // namespace anelm::engine::kernels
