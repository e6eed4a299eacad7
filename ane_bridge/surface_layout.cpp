// Surface byte layout rules and token-major <-> channel-major packing.
#include "ane_bridge/surface_layout.h"

#include <cstring>
#include <string>

#include "ane_bridge/fp16.h"

namespace anelm::ane {

SurfaceLayout SurfaceLayout::channel_major(std::int64_t channels, std::int64_t seq, DType dtype,
                                           std::int64_t row_align) {
  return SurfaceLayout{channels, seq, dtype, row_align};
}

SurfaceLayout SurfaceLayout::for_type(const MilType& type, std::int64_t row_align) {
  const std::int64_t width = type.scalar || type.shape.empty() ? 1 : type.shape.back();
  const std::int64_t rows = width ? type.numel() / width : 0;
  return SurfaceLayout{rows, width, type.dtype, row_align};
}

std::int64_t SurfaceLayout::row_stride_bytes() const {
  const std::int64_t packed = width * elem_bytes();
  if (row_align_bytes <= 0) return packed;
  return (packed + row_align_bytes - 1) / row_align_bytes * row_align_bytes;
}

std::int64_t SurfaceLayout::tensor_bytes() const { return rows * row_stride_bytes(); }

std::int64_t SurfaceLayout::alloc_bytes(std::int64_t min_bytes, std::int64_t granule) const {
  std::int64_t n = std::max(tensor_bytes(), min_bytes);
  if (granule > 0) n = (n + granule - 1) / granule * granule;
  return n;
}

float load_element(const std::uint8_t* p, DType dtype) {
  if (dtype == DType::kFp32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  return fp16_to_fp32(static_cast<std::uint16_t>(p[0] | (p[1] << 8)));
}

void store_element(std::uint8_t* p, DType dtype, float v) {
  if (dtype == DType::kFp32) {
    std::memcpy(p, &v, 4);
    return;
  }
  const std::uint16_t h = fp32_to_fp16(v);
  p[0] = static_cast<std::uint8_t>(h & 0xff);
  p[1] = static_cast<std::uint8_t>(h >> 8);
}

namespace {

Status check_range(const SurfaceLayout& l, std::size_t surface_bytes, std::int64_t tokens,
                   std::int64_t off, std::int64_t* channels) {
  if (l.dtype != DType::kFp16 && l.dtype != DType::kFp32)
    return invalid_argument("surfaces hold fp16 or fp32, not " + std::string(dtype_name(l.dtype)));
  if (*channels < 0) *channels = l.rows - off;
  if (off < 0 || *channels < 0 || off + *channels > l.rows)
    return invalid_argument("channel range [" + std::to_string(off) + ", " +
                            std::to_string(off + *channels) + ") exceeds " +
                            std::to_string(l.rows) + " channels");
  if (tokens < 0 || tokens > l.width)
    return invalid_argument(std::to_string(tokens) + " tokens do not fit " +
                            std::to_string(l.width) + " lanes");
  if (static_cast<std::int64_t>(surface_bytes) < l.tensor_bytes())
    return invalid_argument("surface of " + std::to_string(surface_bytes) +
                            " bytes is smaller than the " + std::to_string(l.tensor_bytes()) +
                            "-byte tensor");
  return {};
}

}  // namespace

Status pack_tokens(std::span<const float> src, std::int64_t tokens, const SurfaceLayout& layout,
                   std::span<std::uint8_t> surface, std::int64_t channel_offset,
                   std::int64_t channels) {
  ANE_RETURN_IF_ERROR(check_range(layout, surface.size(), tokens, channel_offset, &channels));
  if (static_cast<std::int64_t>(src.size()) < tokens * channels)
    return invalid_argument("source holds " + std::to_string(src.size()) + " values, need " +
                            std::to_string(tokens * channels));
  const std::int64_t eb = layout.elem_bytes();
  for (std::int64_t c = 0; c < channels; ++c) {
    std::uint8_t* row = surface.data() + layout.offset(channel_offset + c, 0);
    for (std::int64_t t = 0; t < tokens; ++t)
      store_element(row + t * eb, layout.dtype, src[t * channels + c]);
    std::memset(row + tokens * eb, 0, static_cast<std::size_t>((layout.width - tokens) * eb));
  }
  return {};
}

Status unpack_tokens(std::span<const std::uint8_t> surface, const SurfaceLayout& layout,
                     std::int64_t tokens, std::span<float> dst, std::int64_t channel_offset,
                     std::int64_t channels) {
  ANE_RETURN_IF_ERROR(check_range(layout, surface.size(), tokens, channel_offset, &channels));
  if (static_cast<std::int64_t>(dst.size()) < tokens * channels)
    return invalid_argument("destination holds " + std::to_string(dst.size()) + " values, need " +
                            std::to_string(tokens * channels));
  const std::int64_t eb = layout.elem_bytes();
  for (std::int64_t c = 0; c < channels; ++c) {
    const std::uint8_t* row = surface.data() + layout.offset(channel_offset + c, 0);
    for (std::int64_t t = 0; t < tokens; ++t)
      dst[t * channels + c] = load_element(row + t * eb, layout.dtype);
  }
  return {};
}

Status read_surface(std::span<const std::uint8_t> surface, const SurfaceLayout& layout,
                    std::span<float> dst) {
  if (static_cast<std::int64_t>(surface.size()) < layout.tensor_bytes() ||
      static_cast<std::int64_t>(dst.size()) < layout.rows * layout.width)
    return invalid_argument("read_surface: buffer too small");
  const std::int64_t eb = layout.elem_bytes();
  for (std::int64_t r = 0; r < layout.rows; ++r) {
    const std::uint8_t* row = surface.data() + layout.offset(r, 0);
    for (std::int64_t w = 0; w < layout.width; ++w)
      dst[r * layout.width + w] = load_element(row + w * eb, layout.dtype);
  }
  return {};
}

Status write_surface(std::span<const float> src, const SurfaceLayout& layout,
                     std::span<std::uint8_t> surface) {
  if (static_cast<std::int64_t>(surface.size()) < layout.tensor_bytes() ||
      static_cast<std::int64_t>(src.size()) < layout.rows * layout.width)
    return invalid_argument("write_surface: buffer too small");
  const std::int64_t eb = layout.elem_bytes();
  for (std::int64_t r = 0; r < layout.rows; ++r) {
    std::uint8_t* row = surface.data() + layout.offset(r, 0);
    for (std::int64_t w = 0; w < layout.width; ++w)
      store_element(row + w * eb, layout.dtype, src[r * layout.width + w]);
  }
  return {};
}

}  // namespace anelm::ane
