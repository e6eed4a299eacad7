// UTF-8 helpers and utf8proc-backed character classes for the tokenizer.
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>

namespace anelm::tok::unicode {

size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

uint32_t decode_at(std::string_view s, size_t pos, size_t* len) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data() + pos);
  utf8proc_int32_t cp = -1;
  const utf8proc_ssize_t n = utf8proc_iterate(p, static_cast<utf8proc_ssize_t>(s.size() - pos), &cp);
  if (n <= 0 || cp < 0) {
    *len = 1;
    return kReplacement;
  }
  *len = static_cast<size_t>(n);
  return static_cast<uint32_t>(cp);
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacement;
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

uint8_t classify(uint32_t cp) {
  // White_Space = the C0 controls 9..13, U+0085, and the Zs/Zl/Zp categories (same set as \s in
  // the Rust/Oniguruma regexes HF uses and llama.cpp's whitespace table).
  if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x85) return kWhitespace;
  if (cp < 0x80) {  // fast path: ASCII
    if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return kLetter;
    if (cp >= '0' && cp <= '9') return kNumber;
    return cp == ' ' ? kWhitespace : 0;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
      return kLetter;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return kNumber;
    case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
      return kWhitespace;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
      return kMark;
    default:
      return 0;
  }
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = 0;
    const uint32_t cp = decode_at(s, i, &len);
    if (cp == kReplacement && !(len == 3 && s.compare(i, 3, "\xEF\xBF\xBD") == 0)) return false;
    i += len;
  }
  return true;
}

std::string nfc(std::string_view s) {
  bool ascii = true;
  for (char c : s) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(s);  // ASCII is always NFC
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &out,
                                          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) return std::string(s);  // invalid UTF-8: keep the raw bytes for byte-level BPE
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

}  // namespace anelm::tok::unicode
