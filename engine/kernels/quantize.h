// Row conversions between f32 and every storage DType: the one set of weight quantizers (load-time
// re-quantisation, the model maker, the tests). Q8_0/Q4_0 give the same bytes as ggml's reference
// quantizers, so a file we quantize matches llama.cpp's. The other block types choose their scales
// by a least-squares search (quantize_fit.h) and write blocks in the GGUF layouts of dtype.h.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/kernels/dtype.h"

namespace anelm::engine::kernels {

// k must be a multiple of 32. Q8_0: d = amax / 127, q = round(x / d); Q4_0: d = (signed value of
// max |x|) / -8, q = min(15, (int8)(x / d + 8.5)).
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t k);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t k);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t k);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t k);

// k must be a multiple of 32 (Q4_1, Q5_0, Q5_1, IQ4_NL) or of 256 (the K-quants and IQ4_XS).
// Decoding is row_to_f32.
void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t k);
void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t k);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t k);
void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t k);
void quantize_row_q2_k(const float* x, BlockQ2_K* y, int64_t k);
void quantize_row_q3_k(const float* x, BlockQ3_K* y, int64_t k);
void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t k);
void quantize_row_q5_k(const float* x, BlockQ5_K* y, int64_t k);
void quantize_row_q6_k(const float* x, BlockQ6_K* y, int64_t k);
void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t k);

// The type to write a row of `cols` elements in when `want` is asked for: `want` when cols is a
// multiple of its block, else the nearest 32-element type llama.cpp falls back to (Q2_K, Q3_K,
// IQ4_XS -> IQ4_NL; Q4_K -> Q5_0; Q5_K -> Q5_1; Q6_K -> Q8_0), else nullopt (no quantised type fits).
std::optional<DType> writable_type_for(DType want, int64_t cols);

// Any DType -> f32, and f32 -> any DType, for `n` elements (a multiple of the block size for Q
// types).
void row_to_f32(DType src_type, const void* src, float* dst, int64_t n);
void row_from_f32(const float* src, DType dst_type, void* dst, int64_t n);

}  // namespace anelm::engine::kernels
