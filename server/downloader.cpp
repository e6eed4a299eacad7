// libcurl download of one file to <dest>.part, verified and renamed into place; progress printing.
#include "server/downloader.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <system_error>

namespace anelm::server {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxErrorBody = 512;  // bytes of an error response kept for the message

// curl_global_init is not thread-safe, so it runs exactly once, before the first handle.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char a = s[i], b = prefix[i];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z') b = static_cast<char>(b - 'A' + 'a');
    if (a != b) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// Error bodies come from the network: keep them short and free of control characters, since
// they end up in log lines and terminal output.
std::string sanitize_snippet(const std::string& body) {
  std::string out;
  for (char c : body) {
    if (out.size() >= 200) break;
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  }
  return std::string(trim(out));
}

// State shared with the curl callbacks of one transfer.
struct Transfer {
  CURL* curl = nullptr;
  std::FILE* file = nullptr;
  fs::path dir;               // for the free-space check
  const std::string* label = nullptr;
  const DownloadProgress* progress = nullptr;
  int64_t written = 0;
  int64_t total = -1;         // Content-Length of the final response, -1 until known
  bool total_checked = false;
  std::string commit;         // first X-Repo-Commit seen (the HF resolve response, before a redirect)
  std::string error_body;     // start of a >= 400 response body
  int write_errno = 0;        // set when fwrite failed
  int64_t space_needed = -1;  // set when the disk is too small
  int64_t space_available = -1;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  constexpr std::string_view kCommit = "x-repo-commit:";
  if (t->commit.empty() && starts_with_nocase(line, kCommit))
    t->commit = std::string(trim(line.substr(kCommit.size())));
  return size * n;
}

size_t on_write(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 400) {  // keep the error text for the message, never write it to the file
    t->error_body.append(data, std::min(len, kMaxErrorBody - std::min(kMaxErrorBody, t->error_body.size())));
    return len;
  }
  if (!t->total_checked) {
    t->total_checked = true;
    curl_off_t cl = -1;
    if (curl_easy_getinfo(t->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK && cl >= 0)
      t->total = cl;
    // Fail before filling the disk rather than after.
    std::error_code ec;
    auto space = fs::space(t->dir, ec);
    if (!ec && t->total >= 0 && static_cast<uintmax_t>(t->total) > space.available) {
      t->space_needed = t->total;
      t->space_available = static_cast<int64_t>(space.available);
      return 0;  // aborts the transfer with CURLE_WRITE_ERROR
    }
  }
  if (std::fwrite(data, 1, len, t->file) != len) {
    t->write_errno = errno ? errno : EIO;
    return 0;
  }
  t->written += static_cast<int64_t>(len);
  if (*t->progress) (*t->progress)(*t->label, t->written, t->total);
  return len;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

// Removes the .part file unless commit() was called, so no failure path leaves one behind.
class PartFile {
 public:
  explicit PartFile(fs::path path) : path_(std::move(path)) {}
  ~PartFile() {
    if (file_) std::fclose(file_);
    if (!committed_) {
      std::error_code ec;
      fs::remove(path_, ec);
    }
  }
  PartFile(const PartFile&) = delete;
  PartFile& operator=(const PartFile&) = delete;

  std::FILE* open() {
    file_ = std::fopen(path_.c_str(), "wb");
    return file_;
  }
  // Flushes to disk (so the rename never exposes a file whose data is not yet written) and closes.
  bool flush_and_close() {
    bool ok = std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
    ok = (std::fclose(file_) == 0) && ok;
    file_ = nullptr;
    return ok;
  }
  void commit() { committed_ = true; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

void configure(CURL* curl, const std::string& url, Transfer& t, curl_slist* headers,
               const DownloadOptions& opts, char* errbuf) {
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  // A redirect must not be able to turn an HTTP download into file:// or another scheme.
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS, CURLPROTO_HTTP | CURLPROTO_HTTPS);
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS, CURLPROTO_HTTP | CURLPROTO_HTTPS);
#endif
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "anelm/0.1");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in a multi-threaded process
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, opts.connect_timeout_s);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, opts.stall_timeout_s);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  // curl only sends custom headers to the original host on redirects (CDN hosts never get the
  // token), which is the behaviour we want for HF's LFS redirects.
  if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
}

[[noreturn]] void throw_transfer_error(const std::string& url, const fs::path& part, CURLcode rc,
                                       const char* errbuf, const Transfer& t) {
  if (t.space_needed >= 0)
    throw Error(ErrorKind::kIo, "not enough disk space for " + url + ": it needs " +
                                    format_bytes(t.space_needed) + ", " +
                                    format_bytes(t.space_available) + " free in " + t.dir.string());
  if (t.write_errno)
    throw Error(ErrorKind::kIo, "cannot write " + part.string() + " while downloading " + url +
                                    ": " + std::strerror(t.write_errno));
  std::string detail = errbuf[0] ? std::string(errbuf) : curl_easy_strerror(rc);
  std::string got = "after " + std::to_string(t.written) + " bytes";
  if (t.total >= 0) got = "after " + std::to_string(t.written) + " of " + std::to_string(t.total) + " bytes";
  throw Error(ErrorKind::kIo, "download of " + url + " failed " + got + ": " + detail);
}

}  // namespace

HttpError::HttpError(int status, std::string url, const std::string& message)
    : Error(status == 401 || status == 403 || status == 404 ? ErrorKind::kNotFound : ErrorKind::kIo,
            message),
      status_(status),
      url_(std::move(url)) {}

DownloadResult download_file(const std::string& url, const fs::path& dest,
                             const DownloadOptions& opts) {
  if (!starts_with_nocase(url, "http://") && !starts_with_nocase(url, "https://"))
    throw Error(ErrorKind::kInvalidArgument, "download URL must be http:// or https://: " + url);
  if (dest.filename().empty())
    throw Error(ErrorKind::kInvalidArgument, "download destination has no file name: " + dest.string());

  std::error_code ec;
  const fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot create directory " + dir.string() + ": " + ec.message());

  PartFile part(fs::path(dest.string() + ".part"));
  Transfer t;
  t.file = part.open();
  if (!t.file)
    throw Error(ErrorKind::kIo, "cannot create " + part.path().string() + ": " + std::strerror(errno));
  const std::string label = opts.label.empty() ? dest.filename().string() : opts.label;
  t.label = &label;
  t.progress = &opts.progress;
  t.dir = dir;

  init_curl_once();
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) throw Error(ErrorKind::kInternal, "curl_easy_init failed");
  t.curl = curl.get();
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  if (!opts.bearer_token.empty()) {
    const std::string auth = "Authorization: Bearer " + opts.bearer_token;
    headers.reset(curl_slist_append(nullptr, auth.c_str()));
  }
  char errbuf[CURL_ERROR_SIZE] = {0};
  configure(curl.get(), url, t, headers.get(), opts, errbuf);

  const CURLcode rc = curl_easy_perform(curl.get());
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status >= 400) {
    std::string msg = "HTTP " + std::to_string(status) + " for " + url;
    if (auto snippet = sanitize_snippet(t.error_body); !snippet.empty()) msg += ": " + snippet;
    throw HttpError(static_cast<int>(status), url, msg);
  }
  if (rc != CURLE_OK) throw_transfer_error(url, part.path(), rc, errbuf, t);
  if (status < 200 || status >= 300)
    throw Error(ErrorKind::kIo, "unexpected HTTP " + std::to_string(status) + " for " + url);
  // curl reports a short body as CURLE_PARTIAL_FILE already; this also covers an empty body, where
  // the write callback never ran.
  curl_off_t cl = -1;
  if (curl_easy_getinfo(curl.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK && cl >= 0 &&
      cl != t.written)
    throw Error(ErrorKind::kIo, "download of " + url + " is truncated: got " +
                                    std::to_string(t.written) + " of " + std::to_string(cl) + " bytes");

  if (!part.flush_and_close())
    throw Error(ErrorKind::kIo, "cannot write " + part.path().string() + ": " + std::strerror(errno));
  fs::rename(part.path(), dest, ec);
  if (ec)
    throw Error(ErrorKind::kIo, "cannot rename " + part.path().string() + " to " + dest.string() +
                                    ": " + ec.message());
  part.commit();
  if (opts.progress) opts.progress(label, t.written, t.written);
  return DownloadResult{t.written, t.commit};
}

// ---- progress printing ----------------------------------------------------------------------

std::string format_bytes(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024.0 && unit < 3) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string format_progress(const std::string& file, int64_t done, int64_t total, double seconds) {
  std::string line = file;
  if (total > 0) {
    const int pct = static_cast<int>(done * 100 / total);
    constexpr int kWidth = 20;
    const int filled = static_cast<int>(done * kWidth / total);
    char head[16];
    std::snprintf(head, sizeof(head), " %3d%% [", pct);
    line += head;
    line += std::string(static_cast<size_t>(std::clamp(filled, 0, kWidth)), '#');
    line += std::string(static_cast<size_t>(kWidth - std::clamp(filled, 0, kWidth)), '.');
    line += "] " + format_bytes(done) + " / " + format_bytes(total);
  } else {
    line += "  " + format_bytes(done);
  }
  if (seconds > 0) line += "  " + format_bytes(static_cast<int64_t>(done / seconds)) + "/s";
  return line;
}

namespace {

// Default reporter. A terminal gets one line redrawn at most 10 times a second; a log file or
// pipe gets a line every 10 s, since a redrawn bar would fill it with carriage returns.
class ProgressPrinter {
 public:
  void operator()(const std::string& file, int64_t done, int64_t total) {
    using namespace std::chrono;
    const auto now = steady_clock::now();
    if (file != file_ || (finished_ && (total < 0 || done < total))) {
      file_ = file;
      start_ = last_ = now;
      finished_ = false;
      if (!tty_) spdlog::info("downloading {}", file);
    }
    if (finished_) return;
    const bool final = total >= 0 && done >= total;
    const double secs = duration<double>(now - start_).count();
    if (tty_) {
      if (!final && now - last_ < milliseconds(100)) return;
      std::fprintf(stderr, "\r%s\x1b[K%s", format_progress(file, done, total, secs).c_str(),
                   final ? "\n" : "");
      std::fflush(stderr);
    } else if (final) {
      spdlog::info("downloaded {} ({}) in {:.1f} s", file, format_bytes(done), secs);
    } else if (now - last_ >= seconds(10)) {
      spdlog::info("downloading {}", format_progress(file, done, total, secs));
    } else {
      return;
    }
    last_ = now;
    finished_ = final;
  }

 private:
  bool tty_ = ::isatty(STDERR_FILENO) == 1;
  std::string file_;
  std::chrono::steady_clock::time_point start_, last_;
  bool finished_ = true;
};

}  // namespace

DownloadProgress make_default_progress() {
  auto printer = std::make_shared<ProgressPrinter>();
  return [printer](const std::string& file, int64_t done, int64_t total) {
    (*printer)(file, done, total);
  };
}

}  // namespace anelm::server
