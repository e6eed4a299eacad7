// Row conversions between f32 and every storage DType: the one set of weight quantizers (load-time
// re-quantisation, the model maker, the tests). Q8_0/Q4_0 give the same bytes as ggml's reference
// quantizers, so a file we quantize matches llama.cpp's.
#pragma once

#include <cstdint>

#include "engine/kernels/dtype.h"

namespace anelm::engine::kernels {

// k must be a multiple of 32. Q8_0: d = amax / 127, q = round(x / d); Q4_0: d = (signed value of
// max |x|) / -8, q = min(15, (int8)(x / d + 8.5)).
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t k);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t k);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t k);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t k);

// True for the types row_from_f32 can write (F32, F16, BF16, Q8_0, Q4_0); the other block types are
// read-only (loaded as stored, never produced by anelm).
constexpr bool dtype_quantizable(DType t) { return dtype_index(t) <= dtype_index(DType::kQ4_0); }

// Any DType -> f32, and f32 -> any dtype_quantizable type, for `n` elements (a multiple of the block
// size for Q types).
void row_to_f32(DType src_type, const void* src, float* dst, int64_t n);
void row_from_f32(const float* src, DType dst_type, void* dst, int64_t n);

}  // namespace anelm::engine::kernels
