// Byte layout of ANE I/O surfaces and fp32 <-> fp16 [1,C,1,S] channel-major packing (§4.2, §4.3).
#pragma once

#include <cstdint>
#include <span>

#include "ane_bridge/mil_types.h"
#include "ane_bridge/status.h"

namespace anelm::ane {

// Every innermost row starts on a 64-byte boundary (IM RowStride 64, m0at max(W,32)); 0 = packed
// rows (OR #14). Only W * elem_size % 64 == 0 is known safe, and then both readings agree (§4.3).
inline constexpr std::int64_t kRowAlignBytes = 64;
// Surfaces are allocated with at least 49,152 bytes (M4/M5 evidence), rounded up to 16 KiB (§4.3).
inline constexpr std::int64_t kMinSurfaceBytes = 49152;
inline constexpr std::int64_t kSurfaceGranuleBytes = 16384;
// Decode declares S = 32 fp16 lanes and uses lane 0 (§4.3 rule 1, §6.5).
inline constexpr std::int64_t kDecodeSeqLen = 32;

// A tensor on a surface: `rows` innermost rows of `width` elements. For [1, C, 1, S]: rows = C,
// width = S. For any rank: width = last dim, rows = numel / width.
struct SurfaceLayout {
  std::int64_t rows = 0;
  std::int64_t width = 0;
  DType dtype = DType::kFp16;  // fp16 or fp32
  std::int64_t row_align_bytes = kRowAlignBytes;

  static SurfaceLayout channel_major(std::int64_t channels, std::int64_t seq,
                                     DType dtype = DType::kFp16,
                                     std::int64_t row_align = kRowAlignBytes);
  static SurfaceLayout for_type(const MilType& type, std::int64_t row_align = kRowAlignBytes);

  std::int64_t elem_bytes() const { return dtype_bytes(dtype); }
  // bytes from one row to the next: roundup(width * elem, align), or width * elem when packed
  std::int64_t row_stride_bytes() const;
  // bytes the tensor occupies: rows * row stride
  std::int64_t tensor_bytes() const;
  // what to allocate: max(tensor_bytes, min_bytes) rounded up to `granule`
  std::int64_t alloc_bytes(std::int64_t min_bytes = kMinSurfaceBytes,
                           std::int64_t granule = kSurfaceGranuleBytes) const;
  // byte offset of element (row, lane)
  std::int64_t offset(std::int64_t row, std::int64_t lane) const {
    return row * row_stride_bytes() + lane * elem_bytes();
  }
};

// Writes token-major fp32 rows `src` ([tokens][channels]) into lanes 0..tokens-1 of channels
// [channel_offset, channel_offset + channels) of a channel-major surface, rounding to the surface
// dtype, and zeroes lanes tokens..S-1 of those channels. `channels` = -1 means all remaining.
Status pack_tokens(std::span<const float> src, std::int64_t tokens, const SurfaceLayout& layout,
                   std::span<std::uint8_t> surface, std::int64_t channel_offset = 0,
                   std::int64_t channels = -1);

// Reads lanes 0..tokens-1 of channels [channel_offset, +channels) into token-major fp32 `dst`
// ([tokens][channels]).
Status unpack_tokens(std::span<const std::uint8_t> surface, const SurfaceLayout& layout,
                     std::int64_t tokens, std::span<float> dst, std::int64_t channel_offset = 0,
                     std::int64_t channels = -1);

// Whole-tensor copies in row-major element order (the simulator's I/O path); values as fp32.
Status read_surface(std::span<const std::uint8_t> surface, const SurfaceLayout& layout,
                    std::span<float> dst);
Status write_surface(std::span<const float> src, const SurfaceLayout& layout,
                     std::span<std::uint8_t> surface);

// Raw element access (little-endian fp16 bits / fp32).
float load_element(const std::uint8_t* p, DType dtype);
void store_element(std::uint8_t* p, DType dtype, float v);

}  // namespace anelm::ane
