// The ground floor of the engine: element types, GGUF block layouts and their sizes, and the RoPE
// pairing. Everything above (loaders, kernels, executors) reads these definitions; this header
// includes nothing of the engine.
#pragma once

#include <cstdint>

namespace anelm::engine {

// Storage types. Block-quantised types store dtype_block_elems() elements in dtype_block_bytes()
// bytes, laid out exactly as in GGUF (the Block* structs below).
enum class DType : uint8_t {
  kF32, kF16, kBF16, kQ8_0, kQ4_0,
  kQ4_1, kQ5_0, kQ5_1, kIQ4_NL,             // 32-element blocks
  kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kIQ4_XS  // 256-element super-blocks
};
constexpr int kNumDTypes = 15;  // DType::kF32 .. DType::kIQ4_XS

// How RoPE pairs dimensions within a head.
//  kHalf:        (x[i], x[i + d/2]) pairs, "rotate-half" (HF checkpoints; GGUF qwen2 = NEOX mode)
//  kInterleaved: (x[2i], x[2i+1]) pairs (GGUF llama: the converter permuted Q/K rows)
enum class RopeLayout { kHalf, kInterleaved };

constexpr int kQBlock = 32;   // elements per quant block (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, QBlock8)
constexpr int kQKBlock = 256; // elements per K-quant super-block (Q2_K..Q6_K, IQ4_XS, QBlockK)

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
// GGUF Q4_1: value = nibble * d + m (nibbles as Q4_0).
struct BlockQ4_1 {
  uint16_t d, m;  // f16 scale and minimum
  uint8_t qs[kQBlock / 2];
};
// GGUF Q5_0: value = (nibble | high bit << 4) - 16) * d; bit j of the little-endian u32 qh is the
// high bit of element j (nibbles as Q4_0).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQBlock / 2];
};
// GGUF Q5_1: value = (nibble | high bit << 4) * d + m (bits as Q5_0).
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQBlock / 2];
};
// GGUF IQ4_NL: value = d * kIq4nlValues[nibble] (nibbles as Q4_0).
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQBlock / 2];
};
// GGUF Q2_K: 16 sub-blocks of 16; scales[i] = scale (low 4 bits) | min (high 4 bits);
// value = d * scale * q - dmin * min, q 2 bits. Element 128h + 32s + l (s in 0..3, l in 0..31) is
// bits 2s..2s+1 of qs[32h + l], sub-block 8h + 2s + l/16.
struct BlockQ2_K {
  uint8_t scales[kQKBlock / 16];
  uint8_t qs[kQKBlock / 4];
  uint16_t d, dmin;
};
// GGUF Q3_K: 16 sub-blocks of 16, 6-bit signed scales (minus 32) packed in 12 bytes; value =
// d * scale * (q - (high bit ? 0 : 4)), q 2 low bits laid out as Q2_K; the high bit of element
// 128h + 32s + l is bit 4h + s of hmask[l].
struct BlockQ3_K {
  uint8_t hmask[kQKBlock / 8];
  uint8_t qs[kQKBlock / 4];
  uint8_t scales[12];
  uint16_t d;
};
// GGUF Q4_K: 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes; value =
// d * scale * q - dmin * min. Element 64j + l: low nibble of qs[32j + l] (l < 32, sub-block 2j)
// or high nibble of qs[32j + l - 32] (sub-block 2j + 1).
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[kQKBlock / 2];
};
// GGUF Q5_K: Q4_K plus a fifth bit: element 64j + l has bit 2j + (l >= 32) of qh[l % 32].
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kQKBlock / 8];
  uint8_t qs[kQKBlock / 2];
};
// GGUF Q6_K: 16 sub-blocks of 16 with int8 scales; value = d * scale * (q - 32), q 6 bits.
// Element 128h + 32s + l: low 4 bits from ql[64h + l + 32 (s & 1)] (low nibble for s < 2, high
// otherwise), high 2 bits = bits 2s..2s+1 of qh[32h + l]; sub-block 8h + 2s + l/16.
struct BlockQ6_K {
  uint8_t ql[kQKBlock / 2];
  uint8_t qh[kQKBlock / 4];
  int8_t scales[kQKBlock / 16];
  uint16_t d;
};
// GGUF IQ4_XS: 8 sub-blocks of 32, 6-bit scales (minus 32): low 4 bits in scales_l (nibble ib % 2 of
// byte ib / 2), high 2 bits at bits 2ib of scales_h; value = d * scale * kIq4nlValues[nibble],
// nibbles per sub-block as Q4_0 (16 bytes each).
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQKBlock / 64];
  uint8_t qs[kQKBlock / 2];
};
#pragma pack(pop)
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 &&
              sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockIQ4_XS) == 136);

// The 16 non-linear levels of IQ4_NL / IQ4_XS.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Q4_K / Q5_K sub-block j (0..7): its 6-bit scale and min from the 12 packed bytes.
constexpr void k4_scale_min(const uint8_t* s, int j, int& scale, int& min) {
  if (j < 4) {
    scale = s[j] & 63;
    min = s[j + 4] & 63;
  } else {
    scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q3_K sub-block j (0..15): its signed scale (the stored 6 bits minus 32).
constexpr int k3_scale(const uint8_t* s, int j) {
  const int low = j < 8 ? (s[j] & 0x0F) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Below this block maximum d rounds to 0 in f16, so the block adds nothing to any dot; its qs are
// set to 0 there instead of scaling by 1 / d, which overflows to inf for tiny amax.
inline constexpr float kQ8MinAmax = 0x1p-32f;

// Activation row quantised for integer dots (ours, not a file format): x[i] ~= qs[i] * d with
// qs = round-half-even(x * (1 / d)) in [-127, 127] with d = amax / 127, stored rounded to f16 (as
// llama.cpp's block_q8_0 activations, ggml's reference and Arm code; its x86 code scales by
// 127 / amax, which differs in the last bit for some amax: matching it moved no parity figure,
// docs/parity.md); `sum` = sum(qs) lets Q4_0 (offset 8) and the unsigned-times-signed VNNI trick
// correct their bias exactly.
struct QBlock8 {
  float d;
  int32_t sum;
  int8_t qs[kQBlock];
};
static_assert(sizeof(QBlock8) == 40);

// Activation super-block for K-quant and IQ4_XS weights: llama.cpp's block_q8_K (d = max / -127 of
// the signed largest-magnitude value, q = min(127, round-half-even(x * -127 / max)); bsums[i] = sum
// of qs[16i .. 16i + 16)). Same numerics as the peer's, so dot products match.
struct QBlockK {
  float d;
  int8_t qs[kQKBlock];
  int16_t bsums[kQKBlock / 16];
};
static_assert(sizeof(QBlockK) == 292);

constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
    case DType::kQ4_1: return "q4_1";
    case DType::kQ5_0: return "q5_0";
    case DType::kQ5_1: return "q5_1";
    case DType::kIQ4_NL: return "iq4_nl";
    case DType::kQ2_K: return "q2_K";
    case DType::kQ3_K: return "q3_K";
    case DType::kQ4_K: return "q4_K";
    case DType::kQ5_K: return "q5_K";
    case DType::kQ6_K: return "q6_K";
    case DType::kIQ4_XS: return "iq4_xs";
  }
  return "unknown";
}

constexpr int dtype_index(DType t) { return static_cast<int>(t); }

// Elements per block: 1 for scalar types, 32 for Q8_0..IQ4_NL, 256 for the K-quants and IQ4_XS.
constexpr int64_t dtype_block_elems(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return 1;
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL: return kQBlock;
    default: return kQKBlock;
  }
}

// True for every block-quantised type (weights that are never norm/bias vectors).
constexpr bool dtype_is_quantized(DType t) { return dtype_block_elems(t) > 1; }

// Bytes of one block.
constexpr int64_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kQ8_0: return sizeof(BlockQ8_0);
    case DType::kQ4_0: return sizeof(BlockQ4_0);
    case DType::kQ4_1: return sizeof(BlockQ4_1);
    case DType::kQ5_0: return sizeof(BlockQ5_0);
    case DType::kQ5_1: return sizeof(BlockQ5_1);
    case DType::kIQ4_NL: return sizeof(BlockIQ4_NL);
    case DType::kQ2_K: return sizeof(BlockQ2_K);
    case DType::kQ3_K: return sizeof(BlockQ3_K);
    case DType::kQ4_K: return sizeof(BlockQ4_K);
    case DType::kQ5_K: return sizeof(BlockQ5_K);
    case DType::kQ6_K: return sizeof(BlockQ6_K);
    case DType::kIQ4_XS: return sizeof(BlockIQ4_XS);
  }
  return 0;
}

// Bytes of a row of `n` elements; n must be a multiple of the block size (checked by loaders).
constexpr int64_t dtype_row_bytes(DType t, int64_t n) {
  return n / dtype_block_elems(t) * dtype_block_bytes(t);
}

// True when matmul over weights of type t reads the activations as QBlock8 rows (32-element types).
constexpr bool uses_q8_activations(DType t) { return dtype_block_elems(t) == kQBlock; }
// True when matmul over weights of type t reads the activations as QBlockK rows (super-block types).
constexpr bool uses_q8k_activations(DType t) { return dtype_block_elems(t) == kQKBlock; }

}  // namespace anelm::engine
