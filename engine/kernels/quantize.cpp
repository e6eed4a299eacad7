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
    default: break;  // not a target (dtype_quantizable): callers check first
  }
}

}  // namespace anelm::engine::kernels
