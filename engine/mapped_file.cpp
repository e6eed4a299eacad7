// POSIX mmap behind MappedFile: clear errors for missing files, directories and empty files.
#include "engine/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/error.h"

namespace anelm::engine {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    throw Error(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                "cannot open '" + path + "': " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw Error(ErrorKind::kIo, "cannot stat '" + path + "': " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::kIo, "'" + path + "' is a directory, expected a file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::kIo, "'" + path + "' is not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    throw Error(ErrorKind::kFormat, "'" + path + "' is empty (0 bytes)");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  if (p == MAP_FAILED) {
    throw Error(ErrorKind::kIo, "cannot mmap '" + path + "' (" + std::to_string(size_) +
                                    " bytes): " + std::strerror(err));
  }
  data_ = static_cast<const uint8_t*>(p);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace anelm::engine
