// Pre-tokenizer: a direct, left-to-right transcription of the regex alternations (first match wins).
#include "tokenizer/pretokenizer.h"

#include <cstdint>

#include "tokenizer/unicode.h"

namespace anelm::tok {
namespace {

// The text as code points with their byte offsets and classes; index n is an end sentinel.
struct CodePoints {
  std::vector<uint32_t> cp;
  std::vector<uint8_t> cls;
  std::vector<size_t> off;  // size n + 1

  bool marks = false;  // Qwen3.5: \p{M} joins \p{L} in words and leaves the "other" class

  CodePoints(std::string_view text, bool with_marks) : marks(with_marks) {
    cp.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      size_t len = 0;
      const uint32_t c = unicode::decode_at(text, i, &len);
      cp.push_back(c);
      // An undecodable byte is "other": matched by [^\s\p{L}\p{N}].
      cls.push_back(unicode::classify(c));
      off.push_back(i);
      i += len;
    }
    off.push_back(text.size());
  }
  size_t size() const { return cp.size(); }
  bool letter(size_t i) const {
    return i < size() && ((cls[i] & unicode::kLetter) || (marks && (cls[i] & unicode::kMark)));
  }
  bool number(size_t i) const { return i < size() && (cls[i] & unicode::kNumber); }
  bool space(size_t i) const { return i < size() && (cls[i] & unicode::kWhitespace); }
  bool other(size_t i) const {
    constexpr uint8_t kClassed = unicode::kLetter | unicode::kNumber | unicode::kWhitespace;
    return i < size() && (cls[i] & kClassed) == 0 && !(marks && (cls[i] & unicode::kMark));
  }
  bool newline(size_t i) const { return i < size() && (cp[i] == '\r' || cp[i] == '\n'); }
  uint32_t lower(size_t i) const { return i < size() ? unicode::ascii_lower(cp[i]) : 0; }
  uint32_t at(size_t i) const { return i < size() ? cp[i] : 0; }
};

// Length in code points of a contraction ('s 't 're 've 'm 'll 'd) at i, or 0.
size_t match_contraction(const CodePoints& c, size_t i, bool case_insensitive) {
  if (c.at(i) != '\'') return 0;
  auto get = [&](size_t k) { return case_insensitive ? c.lower(k) : c.at(k); };
  const uint32_t a = get(i + 1), b = get(i + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s*[\r\n]+ | \s+(?!\S) | \s+ at i (c.space(i) holds). Returns the end index.
size_t match_whitespace(const CodePoints& c, size_t i, bool newline_rule) {
  size_t end = i;
  size_t last_newline_end = 0;
  while (c.space(end)) {
    if (c.newline(end)) last_newline_end = end + 1;
    ++end;
  }
  // \s*[\r\n]+: the longest run ending in a newline (backtracking to the last \r or \n).
  if (newline_rule && last_newline_end > 0) return last_newline_end;
  // \s+(?!\S): leave the last space for the next word unless the run reaches the end.
  if (end - i > 1 && end < c.size()) return end - 1;
  return end;
}

// Qwen2 and Qwen3.5 (max_digits 1; Qwen3.5 with marks) and Llama-3 (max_digits 3).
size_t next_word_llama3(const CodePoints& c, size_t i, size_t max_digits) {
  if (size_t n = match_contraction(c, i, true)) return i + n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!c.newline(i) && !c.number(i) && (c.letter(i) || c.letter(i + 1))) {
    size_t k = i + 1;
    while (c.letter(k)) ++k;
    return k;
  }
  // \p{N}{1,max_digits}
  if (c.number(i)) {
    size_t k = i;
    while (c.number(k) && k - i < max_digits) ++k;
    return k;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  const size_t p = (c.at(i) == ' ') ? i + 1 : i;
  if (c.other(p)) {
    size_t k = p;
    while (c.other(k)) ++k;
    while (c.newline(k)) ++k;
    return k;
  }
  if (c.space(i)) return match_whitespace(c, i, true);
  return i + 1;  // unreachable: every code point is letter, number, space or other
}

size_t next_word_gpt2(const CodePoints& c, size_t i) {
  if (size_t n = match_contraction(c, i, false)) return i + n;
  const size_t p = (c.at(i) == ' ') ? i + 1 : i;
  size_t k = p;
  if (c.letter(p)) {
    while (c.letter(k)) ++k;
    return k;
  }
  if (c.number(p)) {
    while (c.number(k)) ++k;
    return k;
  }
  if (c.other(p)) {
    while (c.other(k)) ++k;
    return k;
  }
  if (c.space(i)) return match_whitespace(c, i, false);
  return i + 1;
}

}  // namespace

std::vector<std::string_view> pre_tokenize(std::string_view text, PreTokenizer kind) {
  std::vector<std::string_view> words;
  if (text.empty()) return words;
  if (kind == PreTokenizer::kNone) {
    words.push_back(text);
    return words;
  }
  const CodePoints c(text, kind == PreTokenizer::kQwen35);
  for (size_t i = 0; i < c.size();) {
    size_t end = 0;
    switch (kind) {
      case PreTokenizer::kQwen2:
      case PreTokenizer::kQwen35: end = next_word_llama3(c, i, 1); break;
      case PreTokenizer::kLlama3: end = next_word_llama3(c, i, 3); break;
      default: end = next_word_gpt2(c, i); break;
    }
    words.push_back(text.substr(c.off[i], c.off[end] - c.off[i]));
    i = end;
  }
  return words;
}

}  // namespace anelm::tok
