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

// ---- BERT pre-tokenizer support ------------------------------------------------------------

uint32_t decode_lenient_at(std::string_view s, size_t pos, size_t* len) {
  const auto byte = [&](size_t k) {
    return static_cast<uint32_t>(static_cast<unsigned char>(s[pos + k]));
  };
  const auto continues = [&](size_t k) { return pos + k < s.size() && (byte(k) & 0xC0) == 0x80; };
  const uint32_t b0 = byte(0);
  *len = 1;
  if (b0 < 0x80) return b0;
  if (!(b0 & 0x40)) return kReplacement;  // a stray continuation byte
  if (!(b0 & 0x20)) {
    if (!continues(1)) return kReplacement;
    *len = 2;
    return ((b0 & 0x1F) << 6) | (byte(1) & 0x3F);
  }
  if (!(b0 & 0x10)) {
    if (!continues(1) || !continues(2)) return kReplacement;
    *len = 3;
    return ((b0 & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
  }
  if (!(b0 & 0x08)) {
    if (!continues(1) || !continues(2) || !continues(3)) return kReplacement;
    *len = 4;
    return ((b0 & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) |
           (byte(3) & 0x3F);
  }
  return kReplacement;  // 0xF8..0xFF start no sequence
}

uint8_t category_flags(uint32_t cp) {
  if (cp > 0x10FFFF) return 0;
  uint8_t flags = 0;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
      flags = kIsControl;
      break;
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      flags = kIsPunctuation;
      break;
    case UTF8PROC_CATEGORY_SM: case UTF8PROC_CATEGORY_SC: case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      flags = kIsSymbol;
      break;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
      flags = kIsAccentMark;
      break;
    case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
      return kIsWhitespace;  // White_Space holds every Z* code point
    default:
      break;
  }
  // The Cc part of White_Space.
  if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x85) flags |= kIsWhitespace;
  return flags;
}

uint32_t to_lower(uint32_t cp) {
  if (cp > 0x10FFFF) return cp;
  return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

uint32_t nfd_first(uint32_t cp) {
  if (cp < 0xC0 || cp > 0x10FFFF) return cp;  // nothing below U+00C0 decomposes
  utf8proc_int32_t out[8];  // a canonical decomposition has at most 4 code points
  int boundclass = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), out, 8,
                                                     UTF8PROC_DECOMPOSE, &boundclass);
  return (n >= 1 && n <= 8) ? static_cast<uint32_t>(out[0]) : cp;
}

bool is_cjk_ideograph(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

}  // namespace anelm::tok::unicode
