// The ground floor of the engine: element types, GGUF block layouts and their sizes, and the RoPE
// pairing. Everything above (loaders, kernels, executors) reads these definitions; this header
// includes nothing of the engine.
#pragma once

#include <cstdint>

namespace anelm::engine {

// Storage types. Block-quantised types store dtype_block_elems() elements in dtype_block_bytes()
// bytes, laid out as in GGUF (Q8_0: f16 scale + 32 int8; Q4_0: f16 scale + 16 bytes of nibbles).
enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0 };
constexpr int kNumDTypes = 5;  // DType::kF32 .. DType::kQ4_0

// How RoPE pairs dimensions within a head.
//  kHalf:        (x[i], x[i + d/2]) pairs, "rotate-half" (HF checkpoints; GGUF qwen2 = NEOX mode)
//  kInterleaved: (x[2i], x[2i+1]) pairs (GGUF llama: the converter permuted Q/K rows)
enum class RopeLayout { kHalf, kInterleaved };

constexpr int kQBlock = 32;  // elements per quant block (Q8_0, Q4_0, QBlock8)

#pragma pack(push, 1)
// GGUF Q8_0: value[i] = qs[i] * d. 34 bytes, packed (no padding in files).
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
// block_q8_0 activations, so dot products match the peer's numerics); `sum` = sum(qs) lets Q4_0
// (offset 8) and the unsigned-times-signed VNNI trick correct their bias exactly in integers.
struct QBlock8 {
  float d;
  int32_t sum;
  int8_t qs[kQBlock];
};
static_assert(sizeof(QBlock8) == 40);

constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
  }
  return "unknown";
}

constexpr int dtype_index(DType t) { return static_cast<int>(t); }

// Elements per block: 1 for scalar types, 32 for Q8_0/Q4_0.
constexpr int64_t dtype_block_elems(DType t) {
  return (t == DType::kQ8_0 || t == DType::kQ4_0) ? kQBlock : 1;
}

// Bytes of one block.
constexpr int64_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kQ8_0: return sizeof(BlockQ8_0);
    case DType::kQ4_0: return sizeof(BlockQ4_0);
  }
  return 0;
}

// Bytes of a row of `n` elements; n must be a multiple of the block size (checked by loaders).
constexpr int64_t dtype_row_bytes(DType t, int64_t n) {
  return n / dtype_block_elems(t) * dtype_block_bytes(t);
}

// True when matmul over weights of type t reads the activations as QBlock8 rows.
constexpr bool uses_q8_activations(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_0; }

}  // namespace anelm::engine
