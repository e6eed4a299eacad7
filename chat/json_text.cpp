// Internal helpers of the chat parsers (see json_text.h) and call id generation.
#include "chat/json_text.h"

#include <random>

#include "chat/chat_format.h"

namespace anelm::chat {
namespace detail {

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

StringDecoder::Result StringDecoder::feed(char c, std::string& out) {
  if (state_ == 0) {
    if (high_ != 0) {  // a high surrogate must be followed by \u + low surrogate
      if (c != '\\') return Result::kError;
      state_ = 1;
      return Result::kMore;
    }
    if (c == '"') return Result::kEnd;
    if (c == '\\') {
      state_ = 1;
      return Result::kMore;
    }
    out.push_back(c);
    return Result::kMore;
  }
  if (state_ == 1) {
    if (high_ != 0 && c != 'u') return Result::kError;
    char decoded = 0;
    switch (c) {
      case '"':
        decoded = '"';
        break;
      case '\\':
        decoded = '\\';
        break;
      case '/':
        decoded = '/';
        break;
      case 'b':
        decoded = '\b';
        break;
      case 'f':
        decoded = '\f';
        break;
      case 'n':
        decoded = '\n';
        break;
      case 'r':
        decoded = '\r';
        break;
      case 't':
        decoded = '\t';
        break;
      case 'u':
        state_ = 2;
        cp_ = 0;
        return Result::kMore;
      default:
        return Result::kError;
    }
    state_ = 0;
    out.push_back(decoded);
    return Result::kMore;
  }
  const int v = hex_value(c);
  if (v < 0) return Result::kError;
  cp_ = cp_ * 16 + static_cast<std::uint32_t>(v);
  if (++state_ < 6) return Result::kMore;
  state_ = 0;
  if (high_ != 0) {
    if (cp_ < 0xDC00 || cp_ > 0xDFFF) return Result::kError;
    append_utf8(out, 0x10000 + ((high_ - 0xD800) << 10) + (cp_ - 0xDC00));
    high_ = 0;
    return Result::kMore;
  }
  if (cp_ >= 0xD800 && cp_ <= 0xDBFF) {
    high_ = cp_;
    return Result::kMore;
  }
  if (cp_ >= 0xDC00 && cp_ <= 0xDFFF) return Result::kError;
  append_utf8(out, cp_);
  return Result::kMore;
}

MarkerMatcher::MarkerMatcher(std::string marker)
    : marker_(std::move(marker)), fail_(marker_.size(), 0) {
  for (std::size_t i = 1, k = 0; i < marker_.size(); ++i) {
    while (k > 0 && marker_[i] != marker_[k]) k = fail_[k - 1];
    if (marker_[i] == marker_[k]) ++k;
    fail_[i] = k;
  }
}

bool MarkerMatcher::step(char c, std::string& text) {
  while (k_ > 0 && marker_[k_] != c) {
    const std::size_t f = fail_[k_ - 1];
    text.append(marker_, 0, k_ - f);
    k_ = f;
  }
  if (marker_[k_] == c) {
    if (++k_ == marker_.size()) {
      k_ = 0;
      return true;
    }
    return false;
  }
  text.push_back(c);
  return false;
}

namespace {

// A recursive-descent reader over one JSON value; depth bounded by the caller's limit.
struct JsonSyntax {
  std::string_view s;
  std::size_t i = 0;
  int max_depth;

  void ws() {
    while (i < s.size() && is_ws(s[i])) ++i;
  }
  bool lit(std::string_view w) {
    if (s.substr(i, w.size()) != w) return false;
    i += w.size();
    return true;
  }
  bool digits() {
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > start;
  }
  bool number() {
    if (i < s.size() && s[i] == '-') ++i;
    if (i < s.size() && s[i] == '0') {
      ++i;
    } else if (!digits()) {
      return false;
    }
    if (i < s.size() && s[i] == '.' && (++i, !digits())) return false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (!digits()) return false;
    }
    return true;
  }
  bool string() {  // after the opening quote
    StringDecoder dec;
    std::string sink;
    while (i < s.size()) {
      const char c = s[i++];
      if (static_cast<unsigned char>(c) < 0x20) return false;
      sink.clear();
      switch (dec.feed(c, sink)) {
        case StringDecoder::Result::kEnd: return true;
        case StringDecoder::Result::kError: return false;
        case StringDecoder::Result::kMore: break;
      }
    }
    return false;
  }
  bool value(int depth) {
    ws();
    if (i >= s.size()) return false;
    const char c = s[i];
    if (c == '"') return ++i, string();
    if (c == '{' || c == '[') {
      if (depth >= max_depth) return false;
      const char close = c == '{' ? '}' : ']';
      ++i;
      ws();
      if (i < s.size() && s[i] == close) return ++i, true;
      for (;;) {
        if (c == '{') {
          ws();
          if (i >= s.size() || s[i] != '"' || (++i, !string())) return false;
          ws();
          if (i >= s.size() || s[i++] != ':') return false;
        }
        if (!value(depth + 1)) return false;
        ws();
        if (i >= s.size()) return false;
        if (s[i] == close) return ++i, true;
        if (s[i++] != ',') return false;
      }
    }
    if (c == 't') return lit("true");
    if (c == 'f') return lit("false");
    if (c == 'n') return lit("null");
    return number();
  }
};

}  // namespace

bool is_json_text(std::string_view text, int max_depth) {
  JsonSyntax r{text, 0, max_depth};
  if (!r.value(0)) return false;
  r.ws();
  return r.i == text.size();
}

}  // namespace detail

std::string make_call_id(ToolSyntax syntax, std::uint64_t& state) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  auto next = [&state] {  // splitmix64
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const bool mistral = syntax == ToolSyntax::kMistral;
  std::string id = mistral ? "" : "call_";
  const int n = mistral ? 9 : 24;
  for (int i = 0; i < n; ++i) id.push_back(kAlphabet[next() % 62]);
  return id;
}

}  // namespace anelm::chat
