// RAII read-only memory map of a whole weights file; the mapping lives as long as the object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace anelm::engine {

// Maps `path` read-only. Throws anelm::Error: kNotFound (missing), kIo (directory, unreadable,
// mmap failure), kFormat (empty file). Not copyable; const after construction, so thread-safe.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace anelm::engine
