// Internal helpers of the chat parsers: byte classes, an incremental JSON string decoder, a
// one-marker matcher (KMP) and call id generation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace anelm::chat::detail {

inline bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
inline bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

void append_utf8(std::string& out, std::uint32_t cp);

// Decodes the inside of a JSON string one raw byte at a time (the opening quote already consumed).
// Lenient about raw control characters; strict about escapes and surrogate pairs.
class StringDecoder {
 public:
  enum class Result { kMore, kEnd, kError };
  // Decoded bytes, if any, are appended to `out`. kEnd: the closing quote.
  Result feed(char c, std::string& out);
  bool mid_escape() const { return state_ != 0 || high_ != 0; }
  void reset() { *this = StringDecoder(); }

 private:
  int state_ = 0;  // 0: plain, 1: after '\', 2..5: that many minus 2 hex digits of \uXXXX read
  std::uint32_t cp_ = 0;
  std::uint32_t high_ = 0;  // a pending high surrogate
};

// True when `text` is one JSON value (RFC 8259 syntax, whitespace around it allowed) nested at most
// `max_depth` deep. Syntax only: a number of any length is a number (a parser that converts to
// double may refuse one that overflows; the JSON text is still valid).
bool is_json_text(std::string_view text, int max_depth);

// Finds one marker in a byte stream (Knuth-Morris-Pratt): step() hands back the bytes that can no
// longer be part of a match; the bytes of a partial match are held (pending()).
class MarkerMatcher {
 public:
  MarkerMatcher() = default;
  explicit MarkerMatcher(std::string marker);
  bool empty() const { return marker_.empty(); }
  // Feeds c. Returns true when the marker just completed (then nothing is pending); otherwise
  // appends to `text` the bytes that are now known not to start the marker.
  bool step(char c, std::string& text);
  std::string_view pending() const { return std::string_view(marker_).substr(0, k_); }
  void reset() { k_ = 0; }

 private:
  std::string marker_;
  std::vector<std::size_t> fail_;
  std::size_t k_ = 0;
};

}  // namespace anelm::chat::detail
