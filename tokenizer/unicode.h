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

// ---- What BERT's WordPiece pre-tokenizer needs, with llama.cpp's semantics (unicode.cpp) ----

// Decodes as llama.cpp's unicode_cpts_from_utf8 does, so that invalid input splits into the same
// words: the lead byte's bit pattern gives the length and only the continuation bytes' top bits are
// checked, so overlong forms and surrogates decode to their value and 4-byte forms reach 0x1FFFFF.
// A bad or truncated sequence is kReplacement with *len = 1.
uint32_t decode_lenient_at(std::string_view s, size_t pos, size_t* len);

// llama.cpp's unicode_cpt_flags that the BERT pre-tokenizer reads. Whitespace is the White_Space
// property; the rest are general categories. Unassigned code points (Cn) and values past U+10FFFF
// have no flag.
enum CategoryFlag : uint8_t {
  kIsWhitespace = 1,
  kIsControl = 2,      // Cc, Cf, Co, Cs (but 9..13 and U+0085 are whitespace)
  kIsPunctuation = 4,  // P*
  kIsSymbol = 8,       // S*
  kIsAccentMark = 16,  // M* (Mn, Mc, Me): llama.cpp strips all three, not only Mn as HF does
};
uint8_t category_flags(uint32_t cp);

// Simple one-to-one lower-case mapping of UnicodeData.txt (llama.cpp's unicode_tolower).
uint32_t to_lower(uint32_t cp);

// First code point of cp's canonical decomposition, cp itself when it has none: llama.cpp's
// unicode_cpts_normalize_nfd, which maps one code point to one ("é" -> "e", a Hangul syllable ->
// its leading jamo) rather than producing the full NFD sequence.
uint32_t nfd_first(uint32_t cp);

// The CJK ideograph blocks BERT makes one-character words of (llama.cpp's is_chinese_char, which
// keeps HF's 0x2B920 start of the fifth extension range).
bool is_cjk_ideograph(uint32_t cp);

}  // namespace anelm::tok::unicode
