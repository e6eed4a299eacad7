// Regex -> GBNF for JSON Schema `pattern`: a recursive-descent parse of the regex that emits GBNF
// directly. Each matched character becomes the JSON text that encodes it ("\"" for a quote), so
// the grammar constrains the string literal as it appears in the output.
#include "grammar/json_pattern.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "grammar/json_primitives.h"
#include "grammar/rules.h"
#include "grammar/utf8.h"

namespace anelm::grammar {
namespace {

std::string class_char(uint32_t cp) {
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9')) return std::string(1, static_cast<char>(cp));
  char buf[16];
  if (cp <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04X", cp);
  else std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  return buf;
}

// The JSON-encoded alternatives for a set of code points: the characters JSON writes as they are in
// one class, then the escaped forms of the quote, the backslash and \n \r \t when the set holds
// them. Returns "" when the set yields nothing.
std::string encode_set(const std::vector<CodeRange>& in) {
  const CharSet set(in);
  std::vector<CodeRange> plain;  // minus 0x00-0x1F, '"' and '\\'
  for (CodeRange r : set.ranges()) {
    for (uint32_t cut : {0x22u, 0x5Cu}) {
      if (r.lo <= cut && cut <= r.hi) {
        if (r.lo < cut) plain.push_back({std::max(r.lo, 0x20u), cut - 1});
        r.lo = cut + 1;
      }
    }
    if (r.lo <= r.hi && r.hi >= 0x20) plain.push_back({std::max(r.lo, 0x20u), r.hi});
  }
  std::vector<std::string> alts;
  std::string cls;
  for (CodeRange r : plain) {
    if (r.lo > r.hi) continue;
    cls += class_char(r.lo);
    if (r.hi > r.lo) cls += "-" + class_char(r.hi);
  }
  if (!cls.empty()) alts.push_back("[" + cls + "]");
  if (set.contains('"')) alts.push_back(R"("\\\"")");
  if (set.contains('\\')) alts.push_back(R"("\\\\")");
  if (set.contains('\n')) alts.push_back(R"("\\n")");
  if (set.contains('\r')) alts.push_back(R"("\\r")");
  if (set.contains('\t')) alts.push_back(R"("\\t")");
  if (alts.empty()) return "";
  if (alts.size() == 1) return alts[0];
  std::string s = "(";
  for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : " ") + alts[i];
  return s + " )";
}

std::vector<CodeRange> complement(const std::vector<CodeRange>& in) {
  const CharSet sorted(in);
  std::vector<CodeRange> out;
  uint32_t next = 0;
  for (CodeRange r : sorted.ranges()) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return out;
}

class RegexParser {
 public:
  RegexParser(std::string_view src, CompileBudget* budget) : src_(src), budget_(budget) {}

  // Top level: alternatives, each with its own anchors.
  std::string parse() {
    std::vector<std::string> alts;
    for (;;) {
      bool start = false, end = false;
      if (peek('^')) ++pos_, start = true;
      std::string body = sequence(0, &end);
      const std::string any = "json-char*";
      std::string alt = (start ? "" : any + " ") + (body.empty() ? "\"\"" : body) + (end ? "" : " " + any);
      alts.push_back(alt);
      if (pos_ >= src_.size()) break;
      if (src_[pos_] == ')') fail("unmatched ')'");
      ++pos_;  // '|'
    }
    if (alts.size() == 1) return alts[0];
    std::string s = "(";
    for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : " ") + alts[i];
    return s + " )";
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw PatternError(what + " at offset " + std::to_string(pos_) + " of the pattern");
  }
  bool peek(char c) const { return pos_ < src_.size() && src_[pos_] == c; }

  // A run of quantified atoms up to '|' or ')' or the end. `end` (top level only) receives a
  // trailing '$'.
  std::string sequence(int depth, bool* end) {
    if (depth > kMaxNesting) fail("groups nested deeper than " + std::to_string(kMaxNesting));
    std::string out;
    while (pos_ < src_.size() && src_[pos_] != '|' && src_[pos_] != ')') {
      if (budget_) budget_->tick();
      if (src_[pos_] == '$') {
        ++pos_;
        if (end && (pos_ == src_.size() || src_[pos_] == '|')) {
          *end = true;
          break;
        }
        fail("'$' is supported only at the end of the pattern or of a top-level alternative");
      }
      if (src_[pos_] == '^') fail("'^' is supported only at the start of the pattern or of a top-level alternative");
      std::string atom_text = atom(depth);
      atom_text = quantified(std::move(atom_text));
      if (!atom_text.empty()) out += (out.empty() ? "" : " ") + atom_text;
    }
    return out;
  }

  std::string alternation(int depth) {
    std::vector<std::string> alts;
    for (;;) {
      std::string s = sequence(depth + 1, nullptr);
      alts.push_back(s.empty() ? "\"\"" : s);
      if (!peek('|')) break;
      ++pos_;
    }
    std::string s = "(";
    for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : " ") + alts[i];
    return s + " )";
  }

  std::string atom(int depth) {
    const char c = src_[pos_];
    if (c == '(') {
      ++pos_;
      if (peek('?')) {
        ++pos_;
        if (peek(':')) {
          ++pos_;
        } else if ((peek('<') || peek('P')) && !(pos_ + 1 < src_.size() && (src_[pos_ + 1] == '=' || src_[pos_ + 1] == '!'))) {
          if (peek('P')) ++pos_;
          if (!peek('<')) fail("unsupported group syntax");
          while (pos_ < src_.size() && src_[pos_] != '>') ++pos_;
          if (!peek('>')) fail("unterminated group name");
          ++pos_;
        } else {
          fail("lookaround and other '(?' groups are unsupported");
        }
      }
      std::string inner = alternation(depth);
      if (!peek(')')) fail("missing ')'");
      ++pos_;
      return inner;
    }
    if (c == '[') return set_text(char_class());
    if (c == '.') {
      ++pos_;
      return set_text(complement({{'\n', '\n'}, {'\r', '\r'}}));
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (c == '{' && !looks_like_count()) return literal(static_cast<uint32_t>(src_[pos_++]));
      fail(std::string("quantifier '") + c + "' with nothing to repeat");
    }
    if (c == '\\') {
      std::vector<CodeRange> set;
      uint32_t cp = escape(set, false);
      return set.empty() ? literal(cp) : set_text(set);
    }
    size_t at = pos_;
    int32_t cp = decode_utf8(src_, at);
    if (cp < 0) fail("invalid UTF-8");
    pos_ = at;
    return literal(static_cast<uint32_t>(cp));
  }

  std::string set_text(const std::vector<CodeRange>& set) {
    std::string s = encode_set(set);
    if (s.empty()) fail("a character class that no JSON string character can match");
    return s;
  }

  std::string literal(uint32_t cp) {
    std::string text;
    if (cp == '"') text = "\\\"";
    else if (cp == '\\') text = "\\\\";
    else if (cp == '\n') text = "\\n";
    else if (cp == '\r') text = "\\r";
    else if (cp == '\t') text = "\\t";
    else if (cp < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      text = buf;
    } else {
      append_utf8(text, cp);
    }
    return gbnf_literal(text);
  }

  bool looks_like_count() const {
    size_t p = pos_ + 1;
    bool digits = false;
    while (p < src_.size() && src_[p] >= '0' && src_[p] <= '9') ++p, digits = true;
    if (p < src_.size() && src_[p] == ',') {
      ++p;
      while (p < src_.size() && src_[p] >= '0' && src_[p] <= '9') ++p;
    }
    return digits && p < src_.size() && src_[p] == '}';
  }

  int number() {
    long long n = 0;
    while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') {
      n = n * 10 + (src_[pos_++] - '0');
      if (n > kMaxRepetition) fail("repetition count above " + std::to_string(kMaxRepetition));
    }
    return static_cast<int>(n);
  }

  std::string quantified(std::string atom_text) {
    for (;;) {
      if (pos_ >= src_.size()) return atom_text;
      const char c = src_[pos_];
      std::string q;
      if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        q = std::string(1, c);
      } else if (c == '{' && looks_like_count()) {
        ++pos_;
        int lo = number(), hi = lo;
        bool open = false;
        if (peek(',')) {
          ++pos_;
          open = !(pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9');
          if (!open) hi = number();
        }
        ++pos_;  // '}'
        if (!open && hi < lo) fail("repetition {m,n} with n < m");
        q = "{" + std::to_string(lo) + (open ? "," : hi != lo ? "," + std::to_string(hi) : "") + "}";
      } else {
        return atom_text;
      }
      if (peek('?') || peek('+')) ++pos_;  // lazy / possessive: the same language
      atom_text = "(" + atom_text + ")" + q;
    }
  }

  // After '\\'. Fills `set` for class escapes (\d...), else returns the code point.
  uint32_t escape(std::vector<CodeRange>& set, bool in_class) {
    ++pos_;
    if (pos_ >= src_.size()) fail("trailing backslash");
    const char c = src_[pos_++];
    static const std::vector<CodeRange> kDigit{{'0', '9'}}, kWord{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}},
        kSpace{{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x2028, 0x2029}, {0xFEFF, 0xFEFF}};
    switch (c) {
      case 'd': set = kDigit; return 0;
      case 'w': set = kWord; return 0;
      case 's': set = kSpace; return 0;
      case 'D': set = complement(kDigit); return 0;
      case 'W': set = complement(kWord); return 0;
      case 'S': set = complement(kSpace); return 0;
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0': return 0;
      case 'x': return hex(2);
      case 'u':
        if (peek('{')) {
          ++pos_;
          uint32_t v = 0;
          while (pos_ < src_.size() && src_[pos_] != '}') v = v * 16 + hex(1);
          ++pos_;
          return v;
        }
        return hex(4);
      case 'b':
        if (in_class) return '\b';
        fail("'\\b' (word boundary) is unsupported");
      case 'B': fail("'\\B' is unsupported");
      default:
        if (c >= '1' && c <= '9') fail("backreferences are unsupported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) fail(std::string("unsupported escape '\\") + c + "'");
        return static_cast<uint8_t>(c);  // an escaped metacharacter or punctuation
    }
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= src_.size()) fail("truncated escape");
      const char c = src_[pos_++];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) fail("bad hex digit in escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    if (v > 0x10FFFF) fail("escape beyond U+10FFFF");
    return v;
  }

  // One class member (a char or a class escape); returns false for a class escape (set filled).
  bool class_atom(uint32_t& cp, std::vector<CodeRange>& set) {
    if (src_[pos_] == '\\') {
      set.clear();
      cp = escape(set, true);
      return set.empty();
    }
    size_t at = pos_;
    const int32_t v = decode_utf8(src_, at);
    if (v < 0) fail("invalid UTF-8");
    pos_ = at;
    cp = static_cast<uint32_t>(v);
    return true;
  }

  std::vector<CodeRange> char_class() {
    ++pos_;  // '['
    const bool negated = peek('^');
    if (negated) ++pos_;
    std::vector<CodeRange> ranges, set;
    bool first = true;
    while (pos_ < src_.size() && (src_[pos_] != ']' || first)) {
      first = false;
      if (budget_) budget_->tick();
      uint32_t lo;
      if (!class_atom(lo, set)) {
        ranges.insert(ranges.end(), set.begin(), set.end());
        continue;
      }
      uint32_t hi = lo;
      if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
        ++pos_;
        if (!class_atom(hi, set)) fail("a class escape cannot end a range");
        if (hi < lo) fail("character range with end before start");
      }
      ranges.push_back({lo, hi});
    }
    if (!peek(']')) fail("unterminated character class");
    ++pos_;
    return negated ? complement(ranges) : ranges;
  }

  std::string_view src_;
  CompileBudget* budget_;
  size_t pos_ = 0;
};

}  // namespace

std::string pattern_gbnf(SchemaConverter& out, std::string_view pattern) {
  if (pattern.size() > kMaxPatternBytes)
    throw PatternError("pattern longer than the limit of " + std::to_string(kMaxPatternBytes) + " bytes");
  need_primitive(out, "json-char");
  const std::string body = RegexParser(pattern, out.budget()).parse();
  return "\"\\\"\" " + body + " \"\\\"\"";
}

}  // namespace anelm::grammar
