// The GBNF text parser (llama.cpp's dialect). Rules may span lines: a rule ends where the next
// `name ::=` begins, so continuation lines need no special marker.
#include <string>

#include "grammar/gbnf_builder.h"
#include "grammar/utf8.h"

namespace anelm::grammar {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
 public:
  Parser(std::string_view text, GrammarBuilder& b, CompileBudget* budget) : src_(text), b_(b), budget_(budget) {}

  void parse_all() {
    skip_space();
    while (pos_ < src_.size()) {
      size_t at = pos_;
      const std::string_view name = parse_name();
      rule_ = name;
      skip_space();
      if (src_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + std::string(name) + "'");
      pos_ += 3;
      uint32_t id = b_.named_rule(name, at, rule_);
      auto alts = parse_alternates(0);
      if (pos_ < src_.size()) {
        if (src_[pos_] == ')') fail("unmatched ')'");
        if (!starts_rule()) fail(std::string("unexpected '") + src_[pos_] + "'");
      }
      b_.define(id, std::move(alts), at);
      skip_space();
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error("GBNF: " + what + " (" + where(pos_) + ")"); }

  std::string where(size_t at) const { return describe(src_, at, rule_); }

 public:
  // "line L:C in rule 'x'": a scan from the start, so only for error messages.
  static std::string describe(std::string_view src, size_t at, std::string_view rule) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < src.size(); ++i) {
      if (src[i] == '\n') ++line, col = 1;
      else ++col;
    }
    std::string s = "line " + std::to_string(line) + ":" + std::to_string(col);
    if (!rule.empty()) s += " in rule '" + std::string(rule) + "'";
    return s;
  }

 private:

  void skip_space() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view parse_name() {
    size_t start = pos_;
    while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return src_.substr(start, pos_ - start);
  }

  // Is the text at pos_ the start of the next rule (`name ::=`)?
  bool starts_rule() const {
    size_t p = pos_;
    while (p < src_.size() && is_name_char(src_[p])) ++p;
    if (p == pos_) return false;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t')) ++p;
    return src_.substr(p, 3) == "::=";
  }

  std::vector<Sequence> parse_alternates(int depth) {
    if (depth > kMaxNesting) fail("groups nested deeper than " + std::to_string(kMaxNesting));
    std::vector<Sequence> alts;
    alts.push_back(parse_sequence(depth));
    while (pos_ < src_.size() && src_[pos_] == '|') {
      ++pos_;
      alts.push_back(parse_sequence(depth));
    }
    return alts;
  }

  Sequence parse_sequence(int depth) {
    Sequence seq;
    for (;;) {
      skip_space();
      if (pos_ >= src_.size()) break;
      char c = src_[pos_];
      if (c == '|' || c == ')' || starts_rule()) break;
      if (budget_) budget_->tick();
      // The primary is appended in place (no vector per element); only a repeated one is moved out.
      const size_t start = seq.size();
      parse_primary(depth, seq);
      skip_space();
      if (pos_ < src_.size() && is_postfix(src_[pos_])) {
        Sequence unit(seq.begin() + static_cast<std::ptrdiff_t>(start), seq.end());
        seq.resize(start);
        unit = parse_postfix(std::move(unit));
        seq.insert(seq.end(), unit.begin(), unit.end());
      }
    }
    return seq;
  }

  static bool is_postfix(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

  void parse_primary(int depth, Sequence& out) {
    char c = src_[pos_];
    if (c == '"') return parse_literal(out);
    if (c == '[') return out.push_back(Elem{ElemKind::Chars, parse_class()});
    if (c == '.') {
      ++pos_;
      return out.push_back(Elem{ElemKind::Chars, b_.add_charset(CharSet({{0, 0x10FFFF}}))});
    }
    if (c == '(') {
      ++pos_;
      auto alts = parse_alternates(depth + 1);
      if (pos_ >= src_.size() || src_[pos_] != ')') fail("expected ')'");
      ++pos_;
      if (alts.size() == 1) return out.insert(out.end(), alts[0].begin(), alts[0].end()), void();
      return out.push_back(Elem{ElemKind::Ref, b_.generated_rule(rule_, "group", std::move(alts))});
    }
    if (is_name_char(c)) {
      size_t at = pos_;
      const std::string_view name = parse_name();
      return out.push_back(Elem{ElemKind::Ref, b_.named_rule(name, at, rule_)});
    }
    fail(std::string("unexpected character '") + c + "'");
  }

  Sequence parse_postfix(Sequence unit) {
    for (;;) {
      if (pos_ >= src_.size()) return unit;
      char c = src_[pos_];
      int min, max;
      if (c == '*') {
        min = 0, max = -1, ++pos_;
      } else if (c == '+') {
        min = 1, max = -1, ++pos_;
      } else if (c == '?') {
        min = 0, max = 1, ++pos_;
      } else if (c == '{') {
        ++pos_;
        skip_space();
        min = peek_digit() ? parse_count() : 0;
        skip_space();
        max = min;
        if (pos_ < src_.size() && src_[pos_] == ',') {
          ++pos_;
          skip_space();
          max = peek_digit() ? parse_count() : -1;
          skip_space();
        }
        if (pos_ >= src_.size() || src_[pos_] != '}') fail("expected '}' closing a repetition");
        ++pos_;
        if (max >= 0 && max < min) fail("repetition {m,n} with n < m");
      } else {
        return unit;
      }
      unit = b_.repeat(unit, min, max, rule_);
      skip_space();
    }
  }

  bool peek_digit() const { return pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9'; }

  int parse_count() {
    long long n = 0;
    while (peek_digit()) {
      n = n * 10 + (src_[pos_++] - '0');
      if (n > kMaxRepetition) fail("repetition count above " + std::to_string(kMaxRepetition));
    }
    return static_cast<int>(n);
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= src_.size()) fail("truncated escape");
      char c = src_[pos_++];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) fail("bad hex digit in escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  // One (possibly escaped) character of a literal or class, as a code point.
  uint32_t parse_char() {
    if (pos_ >= src_.size()) fail("unterminated literal or class");
    if (src_[pos_] != '\\') {
      int32_t cp = decode_utf8(src_, pos_);
      if (cp < 0) fail("invalid UTF-8 in grammar text");
      return static_cast<uint32_t>(cp);
    }
    ++pos_;
    if (pos_ >= src_.size()) fail("truncated escape");
    char c = src_[pos_++];
    switch (c) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case '0': return 0;
      case '\\': case '"': case '\'': case '[': case ']': case '-': case '/': case '^': return static_cast<uint8_t>(c);
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      default: fail(std::string("unknown escape '\\") + c + "'");
    }
  }

  void parse_literal(Sequence& seq) {
    ++pos_;  // opening quote
    while (pos_ < src_.size() && src_[pos_] != '"') {
      uint32_t cp = parse_char();
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("escape is not a Unicode scalar value");
      if (cp < 0x80) {
        seq.push_back(Elem{ElemKind::Byte, cp});
        continue;
      }
      utf8_.clear();
      append_utf8(utf8_, cp);
      for (unsigned char byte : utf8_) seq.push_back(Elem{ElemKind::Byte, byte});
    }
    if (pos_ >= src_.size()) fail("unterminated string literal");
    ++pos_;
  }

  uint32_t parse_class() {
    ++pos_;  // '['
    bool negated = pos_ < src_.size() && src_[pos_] == '^';
    if (negated) ++pos_;
    std::vector<CodeRange> ranges;
    while (pos_ < src_.size() && src_[pos_] != ']') {
      uint32_t lo = parse_char(), hi = lo;
      if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail("character range with end before start");
      }
      ranges.push_back({lo, hi});
    }
    if (pos_ >= src_.size()) fail("unterminated character class");
    ++pos_;
    if (negated) {
      CharSet sorted(ranges);  // merges and sorts, so the complement is one pass
      std::vector<CodeRange> inv;
      uint32_t next = 0;
      for (auto r : sorted.ranges()) {
        if (r.lo > next) inv.push_back({next, r.lo - 1});
        next = r.hi + 1;
      }
      if (next <= 0x10FFFF) inv.push_back({next, 0x10FFFF});
      ranges = std::move(inv);
    }
    CharSet set(std::move(ranges));
    if (set.ranges().empty()) fail("character class matches nothing");
    return b_.add_charset(std::move(set));
  }

  std::string_view src_;
  GrammarBuilder& b_;
  CompileBudget* budget_;
  size_t pos_ = 0;
  std::string_view rule_;  // the rule being parsed (a view of src_)
  std::string utf8_;       // scratch for one multi-byte character
};

}  // namespace

std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, std::string_view root, const GbnfOptions& options) {
  if (text.size() > options.max_bytes) {
    throw Error("GBNF: grammar text of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                std::to_string(options.max_bytes));
  }
  GrammarBuilder builder([text](size_t at, std::string_view rule) { return Parser::describe(text, at, rule); },
                         options.budget);
  Parser(text, builder, options.budget).parse_all();
  return builder.finish(std::string(root));
}

}  // namespace anelm::grammar
