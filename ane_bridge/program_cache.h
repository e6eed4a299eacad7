// On-disk cache of compiled programs keyed by a 64-bit hash of MIL text + blobs, with hit/miss
// stats.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "ane_bridge/program.h"

namespace anelm::ane {

// FNV-1a 64-bit over `data`, continuing from `h` (so several parts can be chained).
inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;
std::uint64_t fnv1a64(std::span<const std::uint8_t> data, std::uint64_t h = kFnvOffset);
std::uint64_t fnv1a64(std::string_view text, std::uint64_t h = kFnvOffset);

// Cache key: our format version, the runtime id (the OS build on macOS, §1.13: a new OS build must
// miss), the MIL bytes and every weight file's path and bytes, each length-prefixed.
std::uint64_t program_key(const ProgramSource& source, std::string_view runtime_id);
std::string key_hex(std::uint64_t key);  // 16 lower-case hex digits

// Stored layout, one directory per key (the same layout as the macOS staging directory):
//   <root>/<key>/model.mil, <root>/<key>/weights/*.bin, <root>/<key>/entry.txt (written last:
//   name, sizes and FNV hashes of every file; an entry without it is incomplete and ignored).
// Cached files are untrusted input: load() checks sizes, hashes and the key before use.
class ProgramCache {
 public:
  ProgramCache() = default;
  explicit ProgramCache(std::filesystem::path root) : root_(std::move(root)) {}

  bool enabled() const { return !root_.empty(); }
  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path entry_dir(std::uint64_t key) const { return root_ / key_hex(key); }

  // True when a complete entry exists (cheap: checks entry.txt only).
  bool contains(std::uint64_t key) const;
  // Writes the entry (files first, entry.txt last via rename).
  Status store(std::uint64_t key, const ProgramSource& source, std::string_view runtime_id) const;
  // Reads an entry back and verifies it; a corrupt entry is removed and reported as kIoError.
  Status load(std::uint64_t key, std::string_view runtime_id, ProgramSource* out) const;
  // Deletes an entry (e.g. after a failed load on device).
  void remove(std::uint64_t key) const;

  // Counters the runtime updates on lookups.
  void record_hit() { ++hits_; }
  void record_miss() { ++misses_; }
  int hits() const { return hits_; }
  int misses() const { return misses_; }

 private:
  std::filesystem::path root_;
  int hits_ = 0;
  int misses_ = 0;
};

// "@model_path/weights/w.bin" -> "weights/w.bin"; empty when the path is not a safe relative path
// under @model_path (no "..", no absolute parts).
std::string weight_relative_path(std::string_view blobfile_path);

// Reads/writes a whole file.
Status read_file_bytes(const std::filesystem::path& path, std::vector<std::uint8_t>* out);
Status write_file_bytes(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

}  // namespace anelm::ane
