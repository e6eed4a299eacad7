// Simple case mappings (UnicodeData.txt) of the scripts chat text mostly uses, plus the one special
// case that changes length in practice (ß -> "SS").
#include "jinja/utf8.h"
#include "jinja/unicode.h"

#include <cstdint>
#include <vector>

namespace anelm::jinja {

namespace {

std::vector<uint32_t> decode(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t k = 0; k < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || k + n > s.size()) {  // a stray byte: kept as is (0x110000 + byte)
      out.push_back(0x110000u + c);
      ++k;
      continue;
    }
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
    for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[k + i]) & 0x3f);
    out.push_back(cp);
    k += n;
  }
  return out;
}

void encode(uint32_t cp, std::string& out) {
  if (cp >= 0x110000u) out += static_cast<char>(cp - 0x110000u);  // a raw byte of invalid UTF-8, kept
  else append_utf8(out, cp);
}

// Pairs where the upper case letter is at an even (even_upper) or odd code point.
bool in_pairs(uint32_t c, uint32_t lo, uint32_t hi) { return c >= lo && c <= hi; }

uint32_t upper(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0xB5) return c;
  if (c == 0xB5) return 0x39C;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0x131) return 'I';
  if (c == 0x17F) return 'S';
  if ((in_pairs(c, 0x100, 0x137) || in_pairs(c, 0x14A, 0x177)) && (c & 1)) return c - 1;
  if ((in_pairs(c, 0x139, 0x148) || in_pairs(c, 0x179, 0x17E)) && !(c & 1)) return c - 1;
  if (c == 0x3C2) return 0x3A3;
  if ((c >= 0x3B1 && c <= 0x3CB)) return c - 32;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c >= 0x3CD && c <= 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if ((in_pairs(c, 0x460, 0x481) || in_pairs(c, 0x48A, 0x4BF) || in_pairs(c, 0x4D0, 0x52F)) && (c & 1)) return c - 1;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return c;
}

uint32_t lower(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0xC0) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if ((in_pairs(c, 0x100, 0x137) || in_pairs(c, 0x14A, 0x177)) && !(c & 1) && c != 0x130) return c + 1;
  if ((in_pairs(c, 0x139, 0x148) || in_pairs(c, 0x179, 0x17E)) && (c & 1)) return c + 1;
  if ((c >= 0x391 && c <= 0x3AB && c != 0x3A2)) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c >= 0x38E && c <= 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if ((in_pairs(c, 0x460, 0x481) || in_pairs(c, 0x48A, 0x4BF) || in_pairs(c, 0x4D0, 0x52F)) && !(c & 1)) return c + 1;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return c;
}

bool is_upper(uint32_t c) { return lower(c) != c || c == 0x130; }
bool is_lower(uint32_t c) { return upper(c) != c || c == 0xDF; }
bool is_cased(uint32_t c) { return is_upper(c) || is_lower(c); }

void put_upper(uint32_t c, std::string& out) {
  if (c == 0xDF) out += "SS";
  else encode(upper(c), out);
}
void put_title(uint32_t c, std::string& out) {
  if (c == 0xDF) out += "Ss";
  else encode(upper(c), out);
}
void put_lower(uint32_t c, std::string& out) {
  if (c == 0x130) out += "i\xCC\x87";  // İ -> i + combining dot above
  else encode(lower(c), out);
}

}  // namespace

std::string py_upper(const std::string& s) {
  std::string out;
  for (uint32_t c : decode(s)) put_upper(c, out);
  return out;
}

std::string py_lower(const std::string& s) {
  std::string out;
  for (uint32_t c : decode(s)) put_lower(c, out);
  return out;
}

std::string py_capitalize(const std::string& s) {
  std::string out;
  bool first = true;
  for (uint32_t c : decode(s)) {
    if (first) put_title(c, out);
    else put_lower(c, out);
    first = false;
  }
  return out;
}

std::string py_title(const std::string& s) {
  std::string out;
  bool previous_cased = false;
  for (uint32_t c : decode(s)) {
    if (previous_cased) put_lower(c, out);
    else put_title(c, out);
    previous_cased = is_cased(c);
  }
  return out;
}

bool py_islower(const std::string& s) {
  bool cased = false;
  for (uint32_t c : decode(s)) {
    if (is_upper(c)) return false;
    cased = cased || is_lower(c);
  }
  return cased;
}

bool py_isupper(const std::string& s) {
  bool cased = false;
  for (uint32_t c : decode(s)) {
    if (is_lower(c)) return false;
    cased = cased || is_upper(c);
  }
  return cased;
}

}  // namespace anelm::jinja
