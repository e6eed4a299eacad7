// Element types and non-owning tensor views over mapped or owned weight memory.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace anelm::engine {

// Storage types. Block-quantised types store `block_elems()` elements in `block_bytes()` bytes,
// laid out as in GGUF (Q8_0: f16 scale + 32 int8; Q4_0: f16 scale + 16 bytes of nibbles).
enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0 };

const char* dtype_name(DType t);
int64_t dtype_block_elems(DType t);  // 1 for scalar types, 32 for Q8_0/Q4_0
int64_t dtype_block_bytes(DType t);  // bytes of one block
// Bytes for `n` elements; n must be a multiple of the block size (checked by loaders).
int64_t dtype_row_bytes(DType t, int64_t n);

// A weight tensor: row-major with PyTorch shape order, shape[0] = rows (outputs),
// shape[ndim-1] = columns (inputs, contiguous). A 1-D tensor has ndim == 1.
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  int ndim = 0;
  std::array<int64_t, 4> shape{0, 0, 0, 0};
  const void* data = nullptr;
  int64_t nbytes = 0;

  bool empty() const { return data == nullptr; }
  int64_t rows() const { return ndim == 1 ? 1 : shape[0]; }
  int64_t cols() const { return shape[ndim - 1]; }
  int64_t numel() const;
};

// Scalar conversions shared by loaders and the reference kernels.
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);  // round to nearest even, overflow to inf
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);  // round to nearest even

}  // namespace anelm::engine
