// HTTP/1.1 wire format without sockets: strict request-head parsing with limits, an incremental
// body decoder (Content-Length or chunked) with a size cap, and response-head serialisation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace anelm::server {

struct WireLimits {
  size_t max_header_bytes = 16 * 1024;  // request line + headers + the blank line
  int max_headers = 100;                // header fields per request (431 beyond)
  size_t max_body_bytes = 4u << 20;     // decoded body (413 beyond)
};

// A refusal while parsing: the status to answer (400, 413, 415, 431, 501) and why.
struct WireError {
  int status = 0;
  std::string message;
  explicit operator bool() const { return status != 0; }
};

struct RequestHead {
  std::string method;
  std::string target;  // origin-form ("/path?query"; an absolute-form target is reduced to it) or "*"
  int minor_version = 1;  // HTTP/1.<minor>
  std::map<std::string, std::string> headers;  // lower-cased names; repeats joined with ", "
  bool chunked = false;
  uint64_t content_length = 0;
  bool keep_alive = true;  // what the client asked for (version + Connection)
  bool expect_continue = false;
  bool compressed = false;  // Content-Encoding gzip or deflate: the body is inflated under the limit
};

// Result of looking for a complete head at the start of `buf`.
struct HeadScan {
  size_t head_bytes = 0;  // 0: incomplete, keep reading; else bytes up to and including CRLFCRLF
  WireError error;        // set when the bytes seen already break a limit or the syntax
};

// Finds the end of the request head in `buf` (leading empty lines are skipped per RFC 9112 §2.2)
// and enforces the size and field-count limits on what has arrived so far, so a flood of
// headers is refused before it is complete.
HeadScan scan_head(std::string_view buf, const WireLimits& limits);

// Parses a complete head (the first `head_bytes` of the buffer). Refuses: bad request line or
// field syntax, obs-fold, a missing (HTTP/1.1) or repeated Host, an absolute-form target other than
// http(s)://authority (an accepted one's authority replaces the Host header, RFC 9112 §3.2.2), conflicting or invalid
// Content-Length, Transfer-Encoding other than "chunked", TE together with CL (smuggling),
// Content-Length over the body limit (413), and Content-Encoding other than identity (415).
WireError parse_head(std::string_view head, const WireLimits& limits, RequestHead* out);

// Decodes a request body as its bytes arrive; enforces the decoded-size limit at every step.
struct Inflater;  // zlib stream state (http_wire.cpp)

class BodyDecoder {
 public:
  BodyDecoder();
  BodyDecoder(const RequestHead& head, size_t max_body_bytes);
  ~BodyDecoder();
  BodyDecoder(BodyDecoder&&) noexcept;
  BodyDecoder& operator=(BodyDecoder&&) noexcept;

  // Consumes bytes from `in` (as many as belong to this body), appending decoded data to `body`.
  // Returns the bytes consumed; check error() and done() afterwards.
  size_t feed(std::string_view in, std::string* body);
  bool done() const { return state_ == State::kDone; }
  const WireError& error() const { return error_; }

 private:
  enum class State { kLength, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kDone };
  size_t fail(int status, std::string message);
  // Transfer-decoded bytes -> the body (inflated when compressed); false once a limit is broken.
  bool emit(std::string_view data, std::string* body);

  State state_ = State::kDone;
  uint64_t remaining_ = 0;  // bytes of the current Content-Length body or chunk
  size_t max_ = 0;
  std::string line_;        // a partial chunk-size or trailer line
  size_t trailer_bytes_ = 0;
  size_t raw_bytes_ = 0;    // transfer-decoded bytes received (compressed size when compressed)
  std::unique_ptr<Inflater> inflater_;
  WireError error_;
};

// The reason phrase of a status code ("OK", "Not Found", ...; "Unknown" otherwise).
const char* reason_phrase(int status);

// "HTTP/1.1 <status> <reason>\r\n<headers>\r\n".
std::string response_head(int status, const std::vector<std::pair<std::string, std::string>>& headers);

}  // namespace anelm::server
