// MILBlob v2 writer/reader tests: every header and record field checked byte by byte.
#include "ane_bridge/weight_blob.h"

#include <gtest/gtest.h>

#include "ane_bridge/fp16.h"

namespace anelm::ane {
namespace {

std::uint32_t u32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return read_u32_le(b.data() + at);
}
std::uint64_t u64(const std::vector<std::uint8_t>& b, std::size_t at) {
  return read_u64_le(b.data() + at);
}

void expect_zero(const std::vector<std::uint8_t>& b, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i) ASSERT_EQ(b[i], 0) << "byte " << i;
}

TEST(WeightBlob, SingleFp16TensorMatchesTheSpecHexDump) {
  // §3.2: 2x2 fp16 [[1,2],[3,4]].
  WeightBlobWriter w;
  const std::vector<float> v = {1, 2, 3, 4};
  EXPECT_EQ(w.add_fp16_from_fp32(v), 64u);
  const auto& b = w.bytes();
  ASSERT_EQ(b.size(), 136u);  // 128 + 2*N
  const std::vector<std::uint8_t> head = {0x01, 0, 0, 0, 0x02, 0, 0, 0};
  EXPECT_TRUE(std::equal(head.begin(), head.end(), b.begin()));
  expect_zero(b, 8, 64);
  const std::vector<std::uint8_t> rec = {0xEF, 0xBE, 0xAD, 0xDE, 0x01, 0, 0, 0, 0x08, 0, 0, 0,
                                         0,    0,    0,    0,    0x80, 0, 0, 0, 0,    0, 0, 0};
  EXPECT_TRUE(std::equal(rec.begin(), rec.end(), b.begin() + 64));
  expect_zero(b, 88, 128);
  const std::vector<std::uint8_t> data = {0x00, 0x3C, 0x00, 0x40, 0x00, 0x42, 0x00, 0x44};
  EXPECT_TRUE(std::equal(data.begin(), data.end(), b.begin() + 128));
}

TEST(WeightBlob, LegacyAndCanonicalAgreeForOneFp16Tensor) {
  WeightBlobWriter c(BlobMode::kCanonical), l(BlobMode::kLegacy);
  const std::vector<float> v = {0.5f, -1.5f, 3.0f};
  c.add_fp16_from_fp32(v);
  l.add_fp16_from_fp32(v);
  EXPECT_EQ(c.bytes(), l.bytes());
}

TEST(WeightBlob, CanonicalMultiTensorLayoutOfSpecSection2_9) {
  // W [1152, 896] fp16 then B [1152] fp16: records at 64 and 2,064,512, file ends at 2,066,880.
  WeightBlobWriter w;
  EXPECT_EQ(w.add_fp16(std::vector<std::uint16_t>(1152 * 896, 0x3c00)), 64u);
  EXPECT_EQ(w.add_fp16(std::vector<std::uint16_t>(1152, 0x4000)), 2064512u);
  const auto& b = w.bytes();
  EXPECT_EQ(b.size(), 2066880u);
  EXPECT_EQ(u32(b, 0), 2u);  // count = number of tensors
  EXPECT_EQ(u32(b, 4), 2u);  // version
  expect_zero(b, 8, 64);
  EXPECT_EQ(u32(b, 64), 0xDEADBEEFu);
  EXPECT_EQ(u32(b, 68), 1u);
  EXPECT_EQ(u64(b, 72), 2064384u);
  EXPECT_EQ(u64(b, 80), 128u);
  EXPECT_EQ(u64(b, 88), 0u);
  expect_zero(b, 96, 128);
  EXPECT_EQ(u32(b, 2064512), 0xDEADBEEFu);
  EXPECT_EQ(u64(b, 2064512 + 8), 2304u);
  EXPECT_EQ(u64(b, 2064512 + 16), 2064576u);
}

TEST(WeightBlob, CanonicalAlignsRecordsAfterOddPayloads) {
  WeightBlobWriter w;
  EXPECT_EQ(w.add_int8(std::vector<std::int8_t>(10, 1)), 64u);
  EXPECT_EQ(w.add_int8(std::vector<std::int8_t>(3, -2)), 192u);  // 64 + 64 + 10 -> aligned to 192
  const auto& b = w.bytes();
  EXPECT_EQ(u32(b, 0), 2u);
  EXPECT_EQ(u32(b, 68), 1u);  // int8 tagged as the seeds tag it (§3.2), not CT's 4
  EXPECT_EQ(u32(b, 192 + 4), 1u);
  EXPECT_EQ(u64(b, 72), 10u);
  expect_zero(b, 128 + 10, 192);  // alignment padding is zero
  EXPECT_EQ(u64(b, 192 + 16), 256u);
  EXPECT_EQ(static_cast<std::int8_t>(b[256]), -2);
  EXPECT_EQ(b.size(), 259u);
}

TEST(WeightBlob, Int8DtypeCodeIsASwitch) {
  WeightBlobWriter ct(BlobMode::kCanonical, kInt8BlobDtypeCodeCt);
  EXPECT_EQ(ct.add_int8(std::vector<std::int8_t>(10, 1)), 64u);
  EXPECT_EQ(ct.add_fp16(std::vector<std::uint16_t>(4, 0x3C00)), 192u);
  EXPECT_EQ(u32(ct.bytes(), 68), 4u);       // CT Int8
  EXPECT_EQ(u32(ct.bytes(), 192 + 4), 1u);  // fp16 stays 1 whatever the switch
  WeightBlobWriter seeds;
  seeds.add_int8(std::vector<std::int8_t>(10, 1));
  EXPECT_EQ(u32(seeds.bytes(), 68), kInt8BlobDtypeCodeSeeds);
  EXPECT_EQ(kInt8BlobDtypeCodeSeeds, 1u);
}

TEST(WeightBlob, LegacyModeLaysChunksEndToEndWithCountOne) {
  WeightBlobWriter w(BlobMode::kLegacy);
  EXPECT_EQ(w.add_int8(std::vector<std::int8_t>(10, 1)), 64u);
  EXPECT_EQ(w.add_int8(std::vector<std::int8_t>(3, 1)), 138u);  // 64 + 64 + 10, no padding (§3.2)
  EXPECT_EQ(u32(w.bytes(), 0), 1u);
  EXPECT_EQ(u32(w.bytes(), 68), 1u);  // everything tagged dtype 1 in legacy mode
}

TEST(WeightBlob, ReaderAcceptsWhatTheWriterWrites) {
  WeightBlobWriter w;
  w.add_fp16_from_fp32(std::vector<float>(32, 1.0f));
  const std::uint64_t off = w.add_fp16_from_fp32(std::vector<float>{7.0f, 8.0f});
  BlobCheck check;
  check.expect_bytes = 4;
  check.dtype_codes = {1};
  BlobRecord r;
  std::span<const std::uint8_t> payload;
  ASSERT_TRUE(read_blob_record(w.bytes(), off, check, &r, &payload).ok());
  EXPECT_EQ(r.payload_offset, off + 64);
  EXPECT_EQ(fp16_to_fp32(static_cast<std::uint16_t>(payload[2] | payload[3] << 8)), 8.0f);
}

TEST(WeightBlob, ReaderRejectsMalformedBlobsPrecisely) {
  WeightBlobWriter w;
  w.add_fp16_from_fp32(std::vector<float>(4, 1.0f));
  BlobCheck check;
  check.expect_bytes = 8;
  check.dtype_codes = {1};
  BlobRecord r;
  std::span<const std::uint8_t> p;
  auto bad = w.bytes();
  bad[64] = 0x00;
  Status s = read_blob_record(bad, 64, check, &r, &p);
  EXPECT_NE(s.message().find("bad blob record magic 0xDEADBE00"), std::string::npos) << s.message();
  s = read_blob_record(w.bytes(), 128, check, &r, &p);  // the payload, not the record (§3.3)
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.message();
  check.expect_bytes = 16;
  s = read_blob_record(w.bytes(), 64, check, &r, &p);
  EXPECT_NE(s.message().find("has size 8 bytes, the MIL type needs 16"), std::string::npos)
      << s.message();
  check.expect_bytes = 8;
  bad = w.bytes();
  bad[4] = 1;
  s = read_blob_record(bad, 64, check, &r, &p);
  EXPECT_NE(s.message().find("version is 1"), std::string::npos) << s.message();
  bad = w.bytes();
  bad[80] = 0;  // payload offset field
  s = read_blob_record(bad, 64, check, &r, &p);
  EXPECT_NE(s.message().find("payload offset 0, expected 128"), std::string::npos) << s.message();
  check.strict = false;  // lenient: reads at record + 64 regardless (§3.5)
  EXPECT_TRUE(read_blob_record(bad, 64, check, &r, &p).ok());
  check.strict = true;
  check.dtype_codes = {4};
  s = read_blob_record(w.bytes(), 64, check, &r, &p);
  EXPECT_NE(s.message().find("dtype code 1"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace anelm::ane
