// Surface layout tests: 64-byte row strides, minimum sizes, token packing and padding lanes.
#include "ane_bridge/surface_layout.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ane_bridge/fp16.h"

namespace anelm::ane {
namespace {

TEST(SurfaceLayout, RowStrideIsRoundedTo64Bytes) {
  EXPECT_EQ(SurfaceLayout::channel_major(896, 32).row_stride_bytes(), 64);
  EXPECT_EQ(SurfaceLayout::channel_major(896, 1).row_stride_bytes(),
            64);  // §3.6: channel c at byte c*64
  EXPECT_EQ(SurfaceLayout::channel_major(4, 4).row_stride_bytes(), 64);  // IM dump: RowStride 64
  EXPECT_EQ(SurfaceLayout::channel_major(896, 33).row_stride_bytes(), 128);
  EXPECT_EQ(SurfaceLayout::channel_major(768, 16, DType::kFp32).row_stride_bytes(), 64);
  EXPECT_EQ(SurfaceLayout::channel_major(896, 1, DType::kFp16, 0).row_stride_bytes(), 2);  // packed
}

TEST(SurfaceLayout, AllocationHasAMinimumAndA16KiBGranule) {
  EXPECT_EQ(SurfaceLayout::channel_major(64, 32).tensor_bytes(), 4096);
  EXPECT_EQ(SurfaceLayout::channel_major(64, 32).alloc_bytes(), 49152);
  EXPECT_EQ(SurfaceLayout::channel_major(896, 32).tensor_bytes(), 57344);
  EXPECT_EQ(SurfaceLayout::channel_major(896, 32).alloc_bytes(), 65536);
  EXPECT_EQ(SurfaceLayout::channel_major(768, 16, DType::kFp32).tensor_bytes(),
            49152);  // OR #4 minimum
  EXPECT_EQ(SurfaceLayout::channel_major(10, 1).alloc_bytes(0, 0), 640);
}

TEST(SurfaceLayout, ForTypeUsesTheInnermostAxisAsRow) {
  const auto l = SurfaceLayout::for_type(MilType::tensor(DType::kFp16, {1, 2, 3, 40}));
  EXPECT_EQ(l.rows, 6);
  EXPECT_EQ(l.width, 40);
  EXPECT_EQ(l.row_stride_bytes(), 128);
}

TEST(SurfaceLayout, PackPutsTokenTInLaneTAndZeroesPadding) {
  const auto l = SurfaceLayout::channel_major(3, 32);
  std::vector<std::uint8_t> surf(static_cast<std::size_t>(l.alloc_bytes()), 0xAB);
  const std::vector<float> rows = {1, 2, 3, 4, 5, 6};  // [2 tokens][3 channels]
  ASSERT_TRUE(pack_tokens(rows, 2, l, surf).ok());
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(load_element(surf.data() + l.offset(c, 0), DType::kFp16), rows[c]);
    EXPECT_EQ(load_element(surf.data() + l.offset(c, 1), DType::kFp16), rows[3 + c]);
    for (int t = 2; t < 32; ++t)
      EXPECT_EQ(load_element(surf.data() + l.offset(c, t), DType::kFp16), 0.0f);
  }
  EXPECT_EQ(surf[l.tensor_bytes()], 0xAB);  // beyond the tensor: untouched
  std::vector<float> back(6);
  ASSERT_TRUE(unpack_tokens(surf, l, 2, back).ok());
  EXPECT_EQ(back, rows);
}

TEST(SurfaceLayout, ChannelRangesAddressConcatenatedTensors) {
  const auto l = SurfaceLayout::channel_major(5, 32);
  std::vector<std::uint8_t> surf(static_cast<std::size_t>(l.tensor_bytes()), 0);
  ASSERT_TRUE(pack_tokens(std::vector<float>{1, 2}, 1, l, surf, 0, 2).ok());
  ASSERT_TRUE(pack_tokens(std::vector<float>{3, 4, 5}, 1, l, surf, 2, 3).ok());
  std::vector<float> all(5);
  ASSERT_TRUE(unpack_tokens(surf, l, 1, all).ok());
  EXPECT_EQ(all, (std::vector<float>{1, 2, 3, 4, 5}));
  std::vector<float> tail(3);
  ASSERT_TRUE(unpack_tokens(surf, l, 1, tail, 2, 3).ok());
  EXPECT_EQ(tail, (std::vector<float>{3, 4, 5}));
}

TEST(SurfaceLayout, PackRoundsToFp16AndRejectsBadRanges) {
  const auto l = SurfaceLayout::channel_major(2, 32);
  std::vector<std::uint8_t> surf(static_cast<std::size_t>(l.tensor_bytes()), 0);
  ASSERT_TRUE(pack_tokens(std::vector<float>{0.1f, 70000.0f}, 1, l, surf).ok());
  std::vector<float> back(2);
  ASSERT_TRUE(unpack_tokens(surf, l, 1, back).ok());
  EXPECT_EQ(back[0], round_to_fp16(0.1f));
  EXPECT_TRUE(std::isinf(back[1]));
  EXPECT_FALSE(pack_tokens(std::vector<float>(99), 33, l, surf).ok());  // more tokens than lanes
  EXPECT_FALSE(pack_tokens(std::vector<float>(4), 1, l, surf, 1, 2).ok());  // channels past the end
  std::vector<std::uint8_t> small(64);
  EXPECT_FALSE(pack_tokens(std::vector<float>(2), 1, l, small).ok());  // surface too small
}

}  // namespace
}  // namespace anelm::ane
