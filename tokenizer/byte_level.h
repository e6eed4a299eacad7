// GPT-2 byte <-> unicode mapping used by byte-level BPE vocabularies (Qwen2, Llama-3).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace anelm::tok::byte_level {

// Code point that stands for byte b in token texts (printable bytes map to themselves).
uint32_t byte_to_cp(uint8_t b);
// Byte for a mapped code point, or -1 when cp is not one of the 256 mapped code points.
int cp_to_byte(uint32_t cp);
// Raw bytes -> token-text form (each byte becomes one code point, UTF-8 encoded).
std::string encode(std::string_view bytes);
// Token-text form -> raw bytes; code points outside the mapping are copied through as UTF-8.
std::string decode(std::string_view text);

}  // namespace anelm::tok::byte_level
