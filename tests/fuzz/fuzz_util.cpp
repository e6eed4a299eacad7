// ScratchFile and the shared-data lookup for the fuzz targets.
#include "tests/fuzz/fuzz_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace anelm::fuzz {

namespace fs = std::filesystem;

ScratchFile::ScratchFile() {
#ifdef __linux__
  fd_ = memfd_create("anelm-fuzz", MFD_CLOEXEC);
  if (fd_ >= 0) path_ = "/proc/self/fd/" + std::to_string(fd_);
#endif
  if (fd_ < 0) {
    std::string tmpl = (fs::temp_directory_path() / "anelm-fuzz-XXXXXX").string();
    fd_ = mkstemp(tmpl.data());
    if (fd_ < 0) {
      std::perror("anelm fuzz: mkstemp");
      std::abort();
    }
    path_ = tmpl;
    unlink_ = true;
  }
}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) close(fd_);
  if (unlink_) unlink(path_.c_str());
}

void ScratchFile::write(const uint8_t* data, size_t size) {
  if (ftruncate(fd_, 0) != 0) std::abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
}

namespace {

struct DirRemover {
  std::string dir;
  ~DirRemover() {
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};

}  // namespace

std::string scratch_dir(const char* tag) {
  static DirRemover remover;  // one per process is all the targets need
  std::string tmpl = (fs::temp_directory_path() / (std::string("anelm-fuzz-") + tag + "-XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) {
    std::perror("anelm fuzz: mkdtemp");
    std::abort();
  }
  remover.dir = tmpl;
  return tmpl;
}

std::string shared_model(const std::string& rel) {
  const char* env = std::getenv("ANELM_SHARED_DIR");
  const fs::path p = fs::path(env && *env ? env : ANELM_FUZZ_SHARED) / "models" / rel;
  return fs::exists(p) ? p.string() : std::string();
}

}  // namespace anelm::fuzz
