// Strict HTTP/1.1 request parsing with limits, and response heads (RFC 9110 / 9112).
#include "server/http_wire.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace anelm::server {

namespace {

constexpr size_t kMaxChunkLine = 1024;
constexpr size_t kMaxTrailerBytes = 16 * 1024;

bool is_tchar(unsigned char c) {
  return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Field values: visible characters, spaces, tabs and obs-text; never NUL, CR, LF or other controls.
bool valid_value(std::string_view v) {
  return std::all_of(v.begin(), v.end(), [](char ch) {
    unsigned char c = static_cast<unsigned char>(ch);
    return c == '\t' || (c >= 0x20 && c != 0x7f);
  });
}

// Decimal Content-Length; false on anything but digits. Saturates at UINT64_MAX (still > limit).
bool parse_length(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
  }
  *out = v;
  return true;
}

WireError err(int status, std::string message) { return WireError{status, std::move(message)}; }

size_t skip_leading_crlf(std::string_view buf) {
  size_t i = 0;
  while (i + 1 < buf.size() && buf[i] == '\r' && buf[i + 1] == '\n') i += 2;
  return i;
}

// An absolute-form request target (RFC 9112 §3.2.2), "http://host[:port][/path][?query]" (http or
// https, any case): `target` becomes its origin form ("/path?query", "/" when there is no path) and
// `authority` its host[:port]. False for another scheme, an empty authority, userinfo ("user@",
// which RFC 9110 §4.2.4 says to treat as an error) or characters a host may not hold.
bool absolute_to_origin(std::string& target, std::string* authority) {
  const size_t colon = target.find("://");
  if (colon == std::string::npos) return false;
  const std::string scheme = lower(std::string_view(target).substr(0, colon));
  if (scheme != "http" && scheme != "https") return false;
  const size_t start = colon + 3;
  const size_t end = std::min(target.find_first_of("/?", start), target.size());
  const std::string_view auth = std::string_view(target).substr(start, end - start);
  const bool host_chars = std::all_of(auth.begin(), auth.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-._~:[]%!$&'()*+,;=").find(c) != std::string_view::npos;
  });
  if (auth.empty() || !host_chars || auth[0] == ':') return false;
  *authority = std::string(auth);
  std::string origin = target.substr(end);
  if (origin.empty() || origin[0] == '?') origin.insert(0, "/");
  target = std::move(origin);
  return true;
}

}  // namespace

HeadScan scan_head(std::string_view buf, const WireLimits& limits) {
  HeadScan s;
  const size_t start = skip_leading_crlf(buf);
  const size_t end = buf.find("\r\n\r\n", start);
  const size_t seen = end == std::string_view::npos ? buf.size() : end + 4;
  // Lines so far: the request line plus header fields (the blank line is not one).
  const size_t region_end = end == std::string_view::npos ? buf.size() : end;
  size_t lines = 0;
  for (size_t p = buf.find("\r\n", start); p != std::string_view::npos && p <= region_end; p = buf.find("\r\n", p + 2))
    ++lines;
  if (lines > static_cast<size_t>(limits.max_headers) + 1) {
    s.error = err(431, "too many header fields (limit " + std::to_string(limits.max_headers) + ")");
    return s;
  }
  if (seen > limits.max_header_bytes) {
    s.error = err(431, "request header block too large (limit " + std::to_string(limits.max_header_bytes) + " bytes)");
    return s;
  }
  if (end != std::string_view::npos) s.head_bytes = end + 4;
  return s;
}

WireError parse_head(std::string_view head, const WireLimits& limits, RequestHead* out) {
  RequestHead h;
  head.remove_prefix(skip_leading_crlf(head));
  if (head.size() >= 4 && head.substr(head.size() - 4) == "\r\n\r\n") head.remove_suffix(2);
  // Request line.
  size_t eol = head.find("\r\n");
  if (eol == std::string_view::npos) return err(400, "malformed request line");
  const std::string_view line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return err(400, "malformed request line");
  h.method = std::string(line.substr(0, sp1));
  h.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(h.method)) return err(400, "malformed request method");
  if (h.target.empty() || !std::all_of(h.target.begin(), h.target.end(), [](char c) { return c > 0x20 && c != 0x7f; }))
    return err(400, "malformed request target");
  std::string authority;  // of an absolute-form target
  if (h.target[0] != '/' && h.target != "*" && !absolute_to_origin(h.target, &authority))
    return err(400, "malformed request target");
  if (version == "HTTP/1.1") h.minor_version = 1;
  else if (version == "HTTP/1.0") h.minor_version = 0;
  else if (version.substr(0, 5) == "HTTP/") return err(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  else return err(400, "malformed HTTP version");

  // Header fields.
  int n_fields = 0, n_host = 0;
  bool has_length = false;
  std::string transfer_encoding;
  size_t pos = eol + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string_view::npos) e = head.size();
    const std::string_view field = head.substr(pos, e - pos);
    pos = e + 2;
    if (field.empty()) break;
    if (++n_fields > limits.max_headers)
      return err(431, "too many header fields (limit " + std::to_string(limits.max_headers) + ")");
    if (field[0] == ' ' || field[0] == '\t') return err(400, "obsolete header line folding");
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || !is_token(field.substr(0, colon)))
      return err(400, "malformed header field");
    const std::string name = lower(field.substr(0, colon));
    const std::string_view value = trim(field.substr(colon + 1));
    if (!valid_value(value)) return err(400, "invalid character in header " + name);
    if (name == "host") ++n_host;
    if (name == "content-length") {
      uint64_t n = 0;
      if (!parse_length(value, &n)) return err(400, "invalid Content-Length");
      if (has_length && n != h.content_length) return err(400, "conflicting Content-Length headers");
      has_length = true;
      h.content_length = n;
      h.headers[name] = std::string(value);
      continue;
    }
    if (name == "transfer-encoding") {
      if (!transfer_encoding.empty()) transfer_encoding += ", ";
      transfer_encoding += lower(value);
    }
    auto [it, inserted] = h.headers.emplace(name, std::string(value));
    if (!inserted) {
      it->second += ", ";
      it->second += value;
    }
  }
  if (n_host > 1) return err(400, "more than one Host header");
  if (n_host == 0 && h.minor_version == 1) return err(400, "missing Host header");
  // RFC 9112 §3.2.2: with an absolute-form target the server uses its authority and ignores Host,
  // so the Host policy (DNS rebinding) judges the authority.
  if (!authority.empty()) h.headers["host"] = authority;
  if (!transfer_encoding.empty()) {
    if (has_length) return err(400, "both Transfer-Encoding and Content-Length");
    if (h.minor_version == 0) return err(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (transfer_encoding != "chunked") return err(501, "Transfer-Encoding other than chunked is not supported");
    h.chunked = true;
  }
  if (has_length && h.content_length > limits.max_body_bytes)
    return err(413, "request body too large (limit " + std::to_string(limits.max_body_bytes) + " bytes)");
  if (auto it = h.headers.find("content-encoding"); it != h.headers.end()) {
    const std::string enc = lower(it->second);
    if (enc == "gzip" || enc == "x-gzip" || enc == "deflate") h.compressed = true;
    else if (enc != "identity")
      return err(415, "Content-Encoding '" + enc.substr(0, 32) + "' is not supported (gzip, deflate or identity)");
  }

  std::string connection;
  if (auto it = h.headers.find("connection"); it != h.headers.end()) connection = lower(it->second);
  const bool says_close = connection.find("close") != std::string::npos;
  const bool says_keep = connection.find("keep-alive") != std::string::npos;
  h.keep_alive = h.minor_version == 1 ? !says_close : says_keep && !says_close;
  if (auto it = h.headers.find("expect"); it != h.headers.end())
    h.expect_continue = lower(it->second) == "100-continue" && h.minor_version == 1;
  *out = std::move(h);
  return {};
}

// zlib's stream, inflating gzip or zlib data (windowBits 15 + 32 detects the header).
struct Inflater {
  z_stream zs{};
  bool ok = false, ended = false;
  Inflater() { ok = inflateInit2(&zs, 15 + 32) == Z_OK; }
  ~Inflater() {
    if (ok) inflateEnd(&zs);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

BodyDecoder::BodyDecoder() = default;
BodyDecoder::~BodyDecoder() = default;
BodyDecoder::BodyDecoder(BodyDecoder&&) noexcept = default;
BodyDecoder& BodyDecoder::operator=(BodyDecoder&&) noexcept = default;

bool BodyDecoder::emit(std::string_view data, std::string* body) {
  const std::string too_large = "request body too large (limit " + std::to_string(max_) + " bytes)";
  raw_bytes_ += data.size();
  if (raw_bytes_ > max_) return fail(413, too_large), false;
  if (!inflater_) {
    if (body->size() + data.size() > max_) return fail(413, too_large), false;
    body->append(data.data(), data.size());
    return true;
  }
  Inflater& f = *inflater_;
  if (!f.ok) return fail(500, "cannot start zlib"), false;
  if (f.ended) return data.empty() || (fail(400, "data after the end of the compressed body"), false);
  f.zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  f.zs.avail_in = static_cast<uInt>(data.size());
  char out[16384];
  // The limit applies to the inflated bytes as they come out, so a small bomb stops at max_.
  while (f.zs.avail_in > 0 && !f.ended) {
    f.zs.next_out = reinterpret_cast<Bytef*>(out);
    f.zs.avail_out = sizeof out;
    const int rc = inflate(&f.zs, Z_NO_FLUSH);
    const size_t produced = sizeof out - f.zs.avail_out;
    if (body->size() + produced > max_) return fail(413, too_large + " once decompressed"), false;
    body->append(out, produced);
    if (rc == Z_STREAM_END) f.ended = true;
    else if (rc != Z_OK && rc != Z_BUF_ERROR) return fail(400, "the compressed body is corrupt"), false;
    else if (produced == 0 && f.zs.avail_in > 0 && rc == Z_BUF_ERROR) return fail(400, "the compressed body is corrupt"), false;
  }
  if (f.ended && f.zs.avail_in > 0) return fail(400, "data after the end of the compressed body"), false;
  return true;
}

BodyDecoder::BodyDecoder(const RequestHead& head, size_t max_body_bytes) : max_(max_body_bytes) {
  if (head.compressed) inflater_ = std::make_unique<Inflater>();
  if (head.chunked) {
    state_ = State::kChunkSize;
  } else if (head.content_length > 0) {
    state_ = State::kLength;
    remaining_ = head.content_length;
  }
}

size_t BodyDecoder::fail(int status, std::string message) {
  error_ = err(status, std::move(message));
  state_ = State::kDone;
  return 0;
}

size_t BodyDecoder::feed(std::string_view in, std::string* body) {
  size_t used = 0;
  while (used < in.size() && state_ != State::kDone && !error_) {
    const std::string_view rest = in.substr(used);
    switch (state_) {
      case State::kLength:
      case State::kChunkData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, rest.size()));
        if (!emit(rest.substr(0, n), body)) return 0;
        used += n;
        remaining_ -= n;
        if (remaining_ == 0) state_ = state_ == State::kLength ? State::kDone : State::kChunkDataEnd;
        break;
      }
      case State::kChunkSize:
      case State::kChunkDataEnd:
      case State::kTrailer: {
        // Line-oriented states: collect up to CRLF.
        const size_t lf = rest.find('\n');
        const size_t take = lf == std::string_view::npos ? rest.size() : lf + 1;
        line_.append(rest.data(), take);
        used += take;
        const size_t cap = state_ == State::kTrailer ? kMaxTrailerBytes : kMaxChunkLine;
        if (line_.size() > cap) return fail(state_ == State::kTrailer ? 431 : 400, "chunk line too long");
        if (lf == std::string_view::npos) break;
        if (line_.size() < 2 || line_[line_.size() - 2] != '\r') return fail(400, "bare LF in chunked body");
        std::string_view l(line_.data(), line_.size() - 2);
        if (state_ == State::kChunkDataEnd) {
          if (!l.empty()) return fail(400, "chunk data longer than its size");
          state_ = State::kChunkSize;
        } else if (state_ == State::kTrailer) {
          trailer_bytes_ += line_.size();
          if (trailer_bytes_ > kMaxTrailerBytes) return fail(431, "chunked trailer too large");
          if (l.empty()) state_ = State::kDone;
        } else {
          const size_t semi = l.find(';');
          const std::string_view hex = trim(l.substr(0, semi));
          if (hex.empty() || hex.size() > 15) return fail(hex.empty() ? 400 : 413, "invalid chunk size");
          uint64_t size = 0;
          for (char c : hex) {
            const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                        : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                        : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (d < 0) return fail(400, "invalid chunk size");
            size = size * 16 + static_cast<uint64_t>(d);
          }
          if (raw_bytes_ + size > max_)
            return fail(413, "request body too large (limit " + std::to_string(max_) + " bytes)");
          remaining_ = size;
          state_ = size == 0 ? State::kTrailer : State::kChunkData;
        }
        line_.clear();
        break;
      }
      case State::kDone:
        break;
    }
  }
  if (state_ == State::kDone && !error_ && inflater_ && raw_bytes_ > 0 && !inflater_->ended)
    fail(400, "the compressed body is truncated");
  return used;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string response_head(int status, const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  for (const auto& [k, v] : headers) {
    // Header values come from our own code, but never let one split the head.
    if (k.find_first_of("\r\n:") != std::string::npos || v.find_first_of("\r\n") != std::string::npos) continue;
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

}  // namespace anelm::server
