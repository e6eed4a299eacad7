// Internal: UTF-8 encoding and decoding of single code points.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace anelm::grammar {

inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes the code point at text[pos], advancing pos. Returns -1 (pos unchanged) on invalid UTF-8
// (overlong forms, surrogates and values past U+10FFFF included).
inline int32_t decode_utf8(std::string_view text, size_t& pos) {
  auto b0 = static_cast<uint8_t>(text[pos]);
  if (b0 < 0x80) return pos++, b0;
  int len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
  if (len == 0 || pos + len > text.size()) return -1;
  uint32_t cp = b0 & (0x7F >> len);
  for (int i = 1; i < len; ++i) {
    auto b = static_cast<uint8_t>(text[pos + i]);
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  pos += len;
  return static_cast<int32_t>(cp);
}

}  // namespace anelm::grammar
