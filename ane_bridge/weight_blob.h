// MILBlob v2 weight files (coremltools StorageFormat): writer and a strict/lenient record reader.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ane_bridge/status.h"

namespace anelm::ane {

// BlobDataType codes from CT BlobDataType.hpp (§3.1).
enum class BlobDType : std::uint32_t {
  kFloat16 = 1,
  kFloat32 = 2,
  kUInt8 = 3,
  kInt8 = 4,
  kBFloat16 = 5,
  kInt16 = 6,
  kUInt16 = 7,
  kInt32 = 14,
  kUInt32 = 15,
};

inline constexpr std::uint32_t kBlobSentinel = 0xDEADBEEFu;
inline constexpr std::uint32_t kBlobVersion = 2;
inline constexpr std::uint64_t kBlobAlignment = 64;
inline constexpr std::uint64_t kBlobHeaderBytes = 64;
inline constexpr std::uint64_t kBlobRecordBytes = 64;

enum class BlobMode {
  // CT/OM form: count = number of tensors, u64 size and absolute payload offset, every record and
  // payload 64-byte aligned, CT dtype codes except int8 (the writer's int8_dtype_code). The
  // default.
  kCanonical,
  // MX/AI form (§3.2) for byte-identical reproduction: count stays 1, chunks laid end to end with
  // no
  // padding, every payload tagged dtype 1. A single fp16 tensor gives the same bytes in both modes.
  kLegacy,
};

// [contested §3.2, §10.16] The dtype code int8 payloads are tagged with. CT's enum says 4; OM (the
// production seed) tags its int8 chunks 1 and they compile and run, while 4 has never been seen
// compiling. Default: 1, what compiles for the seeds; 4 is the switch if a Mac shows 1 misread.
inline constexpr std::uint32_t kInt8BlobDtypeCodeSeeds = 1;
inline constexpr std::uint32_t kInt8BlobDtypeCodeCt = 4;

// Builds one weights/*.bin file in memory. Each add_* returns the BLOBFILE offset to print in the
// MIL: the offset of the tensor's 64-byte metadata record, not of its payload (§3.3).
class WeightBlobWriter {
 public:
  explicit WeightBlobWriter(BlobMode mode = BlobMode::kCanonical,
                            std::uint32_t int8_dtype_code = kInt8BlobDtypeCodeSeeds);

  std::uint64_t add_fp16(std::span<const std::uint16_t> values);
  // Rounds each value to fp16 (nearest even).
  std::uint64_t add_fp16_from_fp32(std::span<const float> values);
  std::uint64_t add_int8(std::span<const std::int8_t> values);
  std::uint64_t add_raw(BlobDType dtype, std::span<const std::uint8_t> payload);

  int count() const { return count_; }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  BlobMode mode_;
  std::uint32_t int8_code_;
  int count_ = 0;
  std::vector<std::uint8_t> bytes_;
};

// A decoded metadata record.
struct BlobRecord {
  std::uint32_t sentinel = 0;
  std::uint32_t dtype = 0;
  std::uint64_t size_bytes = 0;
  std::uint64_t payload_offset = 0;
  std::uint64_t padding_bits = 0;
};

// What the reader enforces. Strict (default in the simulator, §3.5): header count >= 1 and
// version 2, sentinel, record in bounds, payload offset = record + 64 and 64-aligned, size equal to
// numel * elem_size, dtype code matching. Lenient mimics the observed tolerance of the device:
// only the version and the sentinel are checked, and the payload is read at record + 64.
struct BlobCheck {
  bool strict = true;
  std::uint64_t expect_bytes = 0;          // numel * elem_size of the MIL type
  std::vector<std::uint32_t> dtype_codes;  // accepted dtype codes (strict only); empty = any
};

// Validates the file header and the record at `offset`; on success `payload` views the tensor
// bytes.
Status read_blob_record(std::span<const std::uint8_t> file, std::uint64_t offset,
                        const BlobCheck& check, BlobRecord* record,
                        std::span<const std::uint8_t>* payload);

// Little-endian field helpers (the format is little-endian on every platform).
std::uint32_t read_u32_le(const std::uint8_t* p);
std::uint64_t read_u64_le(const std::uint8_t* p);

}  // namespace anelm::ane
