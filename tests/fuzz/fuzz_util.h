// Helpers shared by the libFuzzer targets: an in-memory file for readers that take a path, and the
// shared test-data folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace anelm::fuzz {

// One file per process whose contents each input replaces (a memfd on Linux, a temp file
// elsewhere); readers open it by path().
class ScratchFile {
 public:
  ScratchFile();
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  void write(const uint8_t* data, size_t size);
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
  bool unlink_ = false;
};

// A fresh temporary directory for this process (removed at exit).
std::string scratch_dir(const char* tag);

// $ANELM_SHARED_DIR/models/<rel>, else the shared/ folder beside the checkout; empty when absent.
std::string shared_model(const std::string& rel);

}  // namespace anelm::fuzz
