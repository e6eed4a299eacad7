// Row conversions between f32 and every storage DType; Q8_0/Q4_0 match ggml's reference quantizers.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace anelm::engine {

// Block layouts as in GGUF (packed, 34 and 18 bytes).
#pragma pack(push, 1)
struct BlockQ8_0 {
  uint16_t d;      // f16 scale
  int8_t qs[32];   // value = qs[i] * d
};
struct BlockQ4_0 {
  uint16_t d;       // f16 scale
  uint8_t qs[16];   // low nibble: element i, high nibble: element i + 16; value = (q - 8) * d
};
#pragma pack(pop)
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18);

// k must be a multiple of 32. Identical bytes to ggml's quantize_row_q8_0_ref / q4_0_ref:
// Q8_0 d = amax / 127, q = round(x / d); Q4_0 d = (signed value of max |x|) / -8,
// q = min(15, (int8)(x / d + 8.5)).
void quantize_row_q8_0(const float* x, void* y, int64_t k);
void quantize_row_q4_0(const float* x, void* y, int64_t k);
void dequantize_row_q8_0(const void* x, float* y, int64_t k);
void dequantize_row_q4_0(const void* x, float* y, int64_t k);

// Any DType <-> f32 for `n` elements (a multiple of the block size for Q types).
void row_to_f32(DType src_type, const void* src, float* dst, int64_t n);
void row_from_f32(const float* src, DType dst_type, void* dst, int64_t n);

}  // namespace anelm::engine
