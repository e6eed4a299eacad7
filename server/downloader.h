// HTTP(S) file download with libcurl: atomic .part -> final rename, size check, progress reporting.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "engine/error.h"

namespace anelm::server {

// Progress of one file: (file label, bytes done, total bytes or -1 when the size is unknown).
using DownloadProgress =
    std::function<void(const std::string& file, int64_t done, int64_t total)>;

struct DownloadOptions {
  std::string label;            // name passed to `progress`; empty: the destination's file name
  DownloadProgress progress;    // called as bytes arrive and once at the end; may be empty
  std::string bearer_token;     // sent as "Authorization: Bearer ..." (never logged); empty: none
  long connect_timeout_s = 30;  // TCP/TLS connect limit
  long stall_timeout_s = 60;    // abort when slower than 1 KiB/s for this long (dead server)
};

struct DownloadResult {
  int64_t bytes = 0;        // size of the finished file
  std::string repo_commit;  // X-Repo-Commit header (HuggingFace), empty when the server sent none
};

// An HTTP status >= 400. kind() is kNotFound for 401/403/404 (HuggingFace answers 401 for a
// repository that does not exist), kIo otherwise.
class HttpError : public Error {
 public:
  HttpError(int status, std::string url, const std::string& message);
  int status() const { return status_; }
  const std::string& url() const { return url_; }

 private:
  int status_;
  std::string url_;
};

// Downloads `url` (http or https; redirects followed, up to 10) to `dest`, creating its parent
// directories. The body is written to "<dest>.part", checked against Content-Length, flushed and
// renamed onto `dest`, so `dest` is either the complete old file, the complete new file, or
// absent; a failure removes the .part file.
// Throws HttpError for a status >= 400 and Error(kIo) for transport failures, a truncated body or
// a write error; every message names the URL.
DownloadResult download_file(const std::string& url, const std::filesystem::path& dest,
                             const DownloadOptions& opts = {});

// The progress reporter used when the caller gives none: a redrawn bar on stderr when stderr is
// a terminal, otherwise a log line at start, every 10 s and at the end of each file.
DownloadProgress make_default_progress();

// "1.5 MiB", "312 B": binary units with one decimal.
std::string format_bytes(int64_t bytes);

// One status line, e.g. "model.safetensors  45%  421.9 MiB / 942.3 MiB  12.3 MiB/s"; `seconds` is
// the time since the file started (0: rate omitted). total < 0 prints no percentage.
std::string format_progress(const std::string& file, int64_t done, int64_t total, double seconds);

}  // namespace anelm::server
