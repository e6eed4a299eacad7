// GPT-2's bytes_to_unicode(): printable Latin-1 bytes keep their code point, the other 68 bytes
// are numbered from U+0100 upwards in byte order.
#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"

namespace anelm::tok::byte_level {
namespace {

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 512> to_byte{};  // every mapped code point is < 0x144

  Tables() {
    to_byte.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      to_cp[b] = printable ? static_cast<uint32_t>(b) : next++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t byte_to_cp(uint8_t b) { return tables().to_cp[b]; }

int cp_to_byte(uint32_t cp) { return cp < 512 ? tables().to_byte[cp] : -1; }

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) unicode::append_utf8(out, byte_to_cp(b));
  return out;
}

std::string decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len = 0;
    const uint32_t cp = unicode::decode_at(text, i, &len);
    const int b = cp_to_byte(cp);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace anelm::tok::byte_level
