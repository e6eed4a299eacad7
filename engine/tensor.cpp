// DType sizes and the scalar f16/bf16 <-> f32 conversions shared by loaders and reference kernels.
#include "engine/tensor.h"

#include "engine/kernels/fp16.h"

#include <cstring>

namespace anelm::engine {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
  }
  return "unknown";
}

int64_t dtype_block_elems(DType t) {
  return (t == DType::kQ8_0 || t == DType::kQ4_0) ? 32 : 1;
}

int64_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kQ8_0: return 34;  // f16 d + 32 x int8
    case DType::kQ4_0: return 18;  // f16 d + 16 bytes of nibbles
  }
  return 0;
}

int64_t dtype_row_bytes(DType t, int64_t n) {
  return n / dtype_block_elems(t) * dtype_block_bytes(t);
}

int64_t TensorView::numel() const {
  if (ndim <= 0) return 0;
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

// One implementation of the scalar conversions: the inlinable one the kernels use.
float f16_to_f32(uint16_t h) { return kernels::half_to_float(h); }
uint16_t f32_to_f16(float f) { return kernels::float_to_half(f); }
float bf16_to_f32(uint16_t h) { return kernels::bf16_to_float(h); }
uint16_t f32_to_bf16(float f) { return kernels::float_to_bf16(f); }

}  // namespace anelm::engine
