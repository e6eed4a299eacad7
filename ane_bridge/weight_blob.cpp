// MILBlob v2 writer and reader; byte layout in ane-programming-model.md §3.1–§3.5.
#include "ane_bridge/weight_blob.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "ane_bridge/fp16.h"

namespace anelm::ane {

namespace {

void put_u32(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put_u64(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

std::uint32_t read_u32_le(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

std::uint64_t read_u64_le(const std::uint8_t* p) {
  return static_cast<std::uint64_t>(read_u32_le(p)) | static_cast<std::uint64_t>(read_u32_le(p + 4))
                                                          << 32;
}

WeightBlobWriter::WeightBlobWriter(BlobMode mode, std::uint32_t int8_dtype_code)
    : mode_(mode), int8_code_(int8_dtype_code), bytes_(kBlobHeaderBytes, 0) {
  put_u32(bytes_, 0, mode_ == BlobMode::kLegacy ? 1u : 0u);  // count
  put_u32(bytes_, 4, kBlobVersion);
}

std::uint64_t WeightBlobWriter::add_raw(BlobDType dtype, std::span<const std::uint8_t> payload) {
  // Canonical: the record starts at the next 64-byte boundary (CT StorageWriter). Legacy: end to
  // end.
  const std::uint64_t record =
      mode_ == BlobMode::kCanonical ? align_up(bytes_.size(), kBlobAlignment) : bytes_.size();
  const std::uint64_t data = record + kBlobRecordBytes;
  bytes_.resize(data + payload.size(), 0);
  put_u32(bytes_, record + 0, kBlobSentinel);
  const std::uint32_t code = mode_ == BlobMode::kLegacy ? 1u
                             : dtype == BlobDType::kInt8  ? int8_code_
                                                          : static_cast<std::uint32_t>(dtype);
  put_u32(bytes_, record + 4, code);
  put_u64(bytes_, record + 8, payload.size());
  put_u64(bytes_, record + 16, data);
  // record + 24: padding_size_in_bits = 0 (no sub-byte types); record + 32..63 reserved = 0.
  if (!payload.empty()) std::memcpy(bytes_.data() + data, payload.data(), payload.size());
  ++count_;
  if (mode_ == BlobMode::kCanonical) {
    // The file is not padded at its end (CT and §2.9: the file ends right after the last payload).
    put_u32(bytes_, 0, static_cast<std::uint32_t>(count_));
  }
  return record;
}

std::uint64_t WeightBlobWriter::add_fp16(std::span<const std::uint16_t> values) {
  std::vector<std::uint8_t> raw(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    raw[2 * i] = static_cast<std::uint8_t>(values[i] & 0xff);
    raw[2 * i + 1] = static_cast<std::uint8_t>(values[i] >> 8);
  }
  return add_raw(BlobDType::kFloat16, raw);
}

std::uint64_t WeightBlobWriter::add_fp16_from_fp32(std::span<const float> values) {
  std::vector<std::uint16_t> h(values.size());
  fp32_to_fp16(values, h);
  return add_fp16(h);
}

std::uint64_t WeightBlobWriter::add_int8(std::span<const std::int8_t> values) {
  return add_raw(BlobDType::kInt8,
                 std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(values.data()),
                                               values.size()));
}

Status read_blob_record(std::span<const std::uint8_t> file, std::uint64_t offset,
                        const BlobCheck& check, BlobRecord* record,
                        std::span<const std::uint8_t>* payload) {
  if (file.size() < kBlobHeaderBytes)
    return compile_failed("blob is " + std::to_string(file.size()) +
                          " bytes, smaller than the 64-byte header");
  const std::uint32_t count = read_u32_le(file.data());
  const std::uint32_t version = read_u32_le(file.data() + 4);
  if (version != kBlobVersion)
    return compile_failed("blob header version is " + std::to_string(version) + ", expected 2");
  if (check.strict && count == 0) return compile_failed("blob header count is 0");
  if (offset < kBlobHeaderBytes || offset + kBlobRecordBytes > file.size())
    return compile_failed("BLOBFILE offset " + std::to_string(offset) + " is out of range for a " +
                          std::to_string(file.size()) + "-byte blob");
  const std::uint8_t* r = file.data() + offset;
  record->sentinel = read_u32_le(r);
  record->dtype = read_u32_le(r + 4);
  record->size_bytes = read_u64_le(r + 8);
  record->payload_offset = read_u64_le(r + 16);
  record->padding_bits = read_u64_le(r + 24);
  if (record->sentinel != kBlobSentinel) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%08X", record->sentinel);
    return compile_failed(
        "bad blob record magic " + std::string(buf) + " at offset " + std::to_string(offset) +
        " (expected 0xDEADBEEF; BLOBFILE offset must point at the metadata record)");
  }
  const std::uint64_t data = offset + kBlobRecordBytes;
  if (check.strict) {
    if (offset % kBlobAlignment != 0)
      return compile_failed("blob record at offset " + std::to_string(offset) +
                            " is not 64-byte aligned");
    if (record->payload_offset != data)
      return compile_failed("blob record at " + std::to_string(offset) + " has payload offset " +
                            std::to_string(record->payload_offset) + ", expected " +
                            std::to_string(data));
    if (record->size_bytes != check.expect_bytes)
      return compile_failed("blob record at " + std::to_string(offset) + " has size " +
                            std::to_string(record->size_bytes) + " bytes, the MIL type needs " +
                            std::to_string(check.expect_bytes));
    if (!check.dtype_codes.empty() && std::find(check.dtype_codes.begin(), check.dtype_codes.end(),
                                                record->dtype) == check.dtype_codes.end())
      return compile_failed("blob record at " + std::to_string(offset) + " has dtype code " +
                            std::to_string(record->dtype) +
                            ", which does not match the MIL element type");
  }
  if (data + check.expect_bytes > file.size())
    return compile_failed("blob payload at " + std::to_string(data) + " of " +
                          std::to_string(check.expect_bytes) + " bytes runs past the end of the " +
                          std::to_string(file.size()) + "-byte blob");
  *payload = file.subspan(data, check.expect_bytes);
  return {};
}

}  // namespace anelm::ane
