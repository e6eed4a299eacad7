// Non-owning tensor views over mapped or owned weight memory (element types: kernels/dtype.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/kernels/dtype.h"
#include "engine/kernels/fp16.h"

namespace anelm::engine {

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

// Rows [begin, begin + count) of a 2-D tensor as a tensor of their own, over the same memory (rows
// are contiguous in every type): a fused projection's parts without a copy.
TensorView row_view(const TensorView& t, int64_t begin, int64_t count, std::string name);

// The DType whose dtype_name is `name`, in any case ("q4_k", "Q4_K", "iq4_xs"); nullopt for
// anything else.
std::optional<DType> dtype_from_name(std::string_view name);

// Scalar conversions for loaders: the kernels' one implementation (kernels/fp16.h).
inline float f16_to_f32(uint16_t h) { return kernels::half_to_float(h); }
inline uint16_t f32_to_f16(float f) { return kernels::float_to_half(f); }  // nearest even, overflow to inf
inline float bf16_to_f32(uint16_t h) { return kernels::bf16_to_float(h); }
inline uint16_t f32_to_bf16(float f) { return kernels::float_to_bf16(f); }  // nearest even

}  // namespace anelm::engine
