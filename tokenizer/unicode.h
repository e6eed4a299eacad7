// UTF-8 decode/encode, NFC, and the Unicode character classes the pre-tokenizers need (via utf8proc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace anelm::tok::unicode {

inline constexpr uint32_t kReplacement = 0xFFFD;

// Decodes the code point starting at s[pos] and stores its byte length in *len (>= 1).
// Invalid or truncated sequences decode as kReplacement with *len = 1, so callers keep raw bytes.
uint32_t decode_at(std::string_view s, size_t pos, size_t* len);

// Appends the UTF-8 encoding of cp (surrogates and values past U+10FFFF become U+FFFD).
void append_utf8(std::string& out, uint32_t cp);

// Length of the sequence a lead byte announces (1 for continuation/invalid bytes).
size_t sequence_length(unsigned char lead);

// Character classes used by the GPT-2 family regexes: \p{L}, \p{N}, \s (Unicode White_Space) and
// \p{M} (combining marks: only the Qwen3.5 regex treats them apart from "other").
enum CpClass : uint8_t { kLetter = 1, kNumber = 2, kWhitespace = 4, kMark = 8 };
uint8_t classify(uint32_t cp);

// ASCII-only lower-casing: enough for the (?i:'s|'t|...) contraction rule.
inline uint32_t ascii_lower(uint32_t cp) { return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp; }

// NFC normalisation; returns the input unchanged when it is not valid UTF-8.
std::string nfc(std::string_view s);

// True when s is entirely valid UTF-8.
bool is_valid_utf8(std::string_view s);

}  // namespace anelm::tok::unicode
