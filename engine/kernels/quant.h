// GGUF block-quantised layouts (Q8_0, Q4_0) and the Q8 activation block the integer dot kernels consume.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace anelm::engine::kernels {

constexpr int kQBlock = 32;  // elements per quant block (Q8_0, Q4_0, QBlock8)

// GGUF Q8_0: value[i] = qs[i] * d. 34 bytes, packed (no padding in files).
#pragma pack(push, 1)
struct BlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t qs[kQBlock];
};
// GGUF Q4_0: value[i] = ((nibble i) - 8) * d; byte j holds element j (low nibble) and j + 16 (high).
struct BlockQ4_0 {
  uint16_t d;  // f16 scale
  uint8_t qs[kQBlock / 2];
};
#pragma pack(pop)
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18);

// Activation row quantised for integer dots (ours, not a file format): x[i] ~= qs[i] * d with
// qs = round(x / (amax / 127)) in [-127, 127] and d = amax / 127 rounded to f16 (as llama.cpp's
// block_q8_0 activations, so dot products match the peer's numerics); `sum` = sum(qs) lets Q4_0 (offset 8) and the unsigned-times-signed
// VNNI trick correct their bias exactly in integers. 40 bytes.
struct QBlock8 {
  float d;
  int32_t sum;
  int8_t qs[kQBlock];
};
static_assert(sizeof(QBlock8) == 40);

// Bytes of one weight row of `cols` elements of type t (cols % 32 == 0 for quantised types).
inline int64_t weight_row_bytes(DType t, int64_t cols) {
  switch (t) {
    case DType::kF32: return cols * 4;
    case DType::kF16:
    case DType::kBF16: return cols * 2;
    case DType::kQ8_0: return cols / kQBlock * static_cast<int64_t>(sizeof(BlockQ8_0));
    case DType::kQ4_0: return cols / kQBlock * static_cast<int64_t>(sizeof(BlockQ4_0));
  }
  return 0;
}

// True when matmul over weights of type t reads the activations as QBlock8 rows.
inline bool uses_q8_activations(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_0; }

}  // namespace anelm::engine::kernels
