// The lexer. Whitespace control as jinja2 with trim_blocks and lstrip_blocks (transformers' setup):
//  - "{%-" / "{{-" / "{#-" strip all whitespace before the tag, "-%}" / "-}}" / "-#}" all after;
//  - lstrip_blocks: spaces and tabs between a line start and "{%" or "{#" are removed ("{%+" keeps them);
//  - trim_blocks: the first newline after "%}" or "#}" is removed ("+%}" keeps it).
#include "jinja/lexer.h"
#include "jinja/utf8.h"

#include <cctype>

#include "jinja/jinja.h"

namespace anelm::jinja {

namespace {

[[noreturn]] void syntax_error(const std::string& what, int line) {
  throw Error("TemplateSyntaxError: " + what + " (line " + std::to_string(line) + ")");
}

int count_lines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}


class Lexer {
 public:
  explicit Lexer(std::string_view src) : s_(src) {}

  std::vector<Token> run() {
    bool strip_next = false;   // the previous tag ended with "-"
    bool trim_newline = false; // the previous tag was a block/comment ending in "%}" / "#}"
    bool line_start = true;    // the text starts a line (lstrip_blocks applies to its first line)
    while (pos_ < s_.size()) {
      const size_t open = find_tag(pos_);
      std::string text(s_.substr(pos_, open - pos_));
      if (strip_next) {
        size_t k = 0;
        while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
        text.erase(0, k);
        line_start = k > 0 && s_[pos_ + k - 1] == '\n';
      } else if (trim_newline) {
        line_start = !text.empty() && text[0] == '\n';
        if (line_start) text.erase(0, 1);
      } else if (pos_ > 0) {
        line_start = false;
      }
      strip_next = trim_newline = false;
      const int text_line = line_;
      line_ += count_lines(s_.substr(pos_, open - pos_));
      pos_ = open;
      if (pos_ >= s_.size()) {
        emit_text(std::move(text), text_line);
        break;
      }
      const char kind = s_[pos_ + 1];  // '{', '%' or '#'
      const char marker = pos_ + 2 < s_.size() ? s_[pos_ + 2] : '\0';
      if (marker == '-') {
        while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
      } else if (marker != '+' && kind != '{') {
        lstrip(text, line_start);
      }
      emit_text(std::move(text), text_line);
      pos_ += (marker == '-' || marker == '+') ? 3 : 2;
      if (kind == '#') {
        const size_t end = s_.find("#}", pos_);
        if (end == std::string_view::npos) syntax_error("unterminated comment", line_);
        const bool dash = end > pos_ && s_[end - 1] == '-', plus = end > pos_ && s_[end - 1] == '+';
        line_ += count_lines(s_.substr(pos_, end - pos_));
        pos_ = end + 2;
        strip_next = dash;
        trim_newline = !dash && !plus;
        continue;
      }
      if (kind == '%' && raw_block()) {
        strip_next = raw_strip_;
        trim_newline = raw_trim_;
        continue;
      }
      const bool block = kind == '%';
      tokens_.push_back({block ? Token::Kind::kBlockBegin : Token::Kind::kVarBegin, "", line_});
      const char close = block ? '%' : '}';
      const char end_marker = lex_tag(close);
      tokens_.push_back({block ? Token::Kind::kBlockEnd : Token::Kind::kVarEnd, "", line_});
      strip_next = end_marker == '-';
      trim_newline = block && end_marker != '-' && end_marker != '+';
    }
    tokens_.push_back({Token::Kind::kEnd, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t k = s_.find('{', from); k != std::string_view::npos; k = s_.find('{', k + 1)) {
      if (k + 1 < s_.size() && (s_[k + 1] == '{' || s_[k + 1] == '%' || s_[k + 1] == '#')) return k;
    }
    return s_.size();
  }

  // lstrip_blocks: drop the spaces/tabs that precede the tag on its line (when that line starts
  // in this text, or the text itself starts a line).
  static void lstrip(std::string& text, bool line_start) {
    size_t k = text.size();
    while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) --k;
    if (k == 0 ? line_start : text[k - 1] == '\n') text.erase(k);
  }

  void emit_text(std::string text, int line) {
    if (!text.empty()) tokens_.push_back({Token::Kind::kText, std::move(text), line});
  }

  // {% raw %}...{% endraw %}: the inside is text, verbatim. Returns false when the tag is not raw.
  bool raw_block() {
    size_t k = pos_;
    while (k < s_.size() && std::isspace(static_cast<unsigned char>(s_[k]))) ++k;
    if (s_.compare(k, 3, "raw") != 0 || (k + 3 < s_.size() && std::isalnum(static_cast<unsigned char>(s_[k + 3]))))
      return false;
    k += 3;
    while (k < s_.size() && std::isspace(static_cast<unsigned char>(s_[k]))) ++k;
    const bool dash = s_.compare(k, 3, "-%}") == 0;
    if (!dash && s_.compare(k, 2, "%}") != 0) syntax_error("malformed raw tag", line_);
    k += dash ? 3 : 2;
    // Find {% endraw %} (with optional - markers).
    for (size_t e = s_.find("{%", k); e != std::string_view::npos; e = s_.find("{%", e + 2)) {
      size_t m = e + 2;
      const bool dash_open = m < s_.size() && s_[m] == '-';
      if (dash_open || (m < s_.size() && s_[m] == '+')) ++m;
      while (m < s_.size() && std::isspace(static_cast<unsigned char>(s_[m]))) ++m;
      if (s_.compare(m, 6, "endraw") != 0) continue;
      m += 6;
      while (m < s_.size() && std::isspace(static_cast<unsigned char>(s_[m]))) ++m;
      const bool dash_close = s_.compare(m, 3, "-%}") == 0;
      if (!dash_close && s_.compare(m, 2, "%}") != 0) continue;
      std::string text(s_.substr(k, e - k));
      if (dash) {
        size_t n = 0;
        while (n < text.size() && std::isspace(static_cast<unsigned char>(text[n]))) ++n;
        text.erase(0, n);
      }
      if (dash_open) {
        while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
      } else {
        lstrip(text, false);
      }
      emit_text(std::move(text), line_);
      line_ += count_lines(s_.substr(pos_, m - pos_));
      pos_ = m + (dash_close ? 3 : 2);
      raw_strip_ = dash_close;
      raw_trim_ = !dash_close;
      return true;
    }
    syntax_error("unterminated raw block", line_);
  }

  // Tokens up to the closing "}}" / "%}"; returns the marker before it ('-', '+' or '\0').
  char lex_tag(char close) {
    int depth = 0;  // brackets: "}}" inside a dict literal is not the end
    for (;;) {
      while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) {
        if (s_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= s_.size()) syntax_error("unexpected end of template inside a tag", line_);
      const char c = s_[pos_];
      const auto at = [&](size_t k) { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; };
      if (depth == 0) {
        if ((c == '-' || c == '+') && at(1) == close && at(2) == '}') {
          pos_ += 3;
          return c;
        }
        if (c == close && at(1) == '}') {
          pos_ += 2;
          return '\0';
        }
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t k = pos_;
        while (k < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[k])) || s_[k] == '_')) ++k;
        tokens_.push_back({Token::Kind::kName, std::string(s_.substr(pos_, k - pos_)), line_});
        pos_ = k;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        static const char* kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                     "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|"};
        bool found = false;
        for (const char* op : kOps) {
          const size_t n = std::char_traits<char>::length(op);
          if (s_.compare(pos_, n, op) == 0) {
            if (op[0] == '(' || op[0] == '[' || op[0] == '{') ++depth;
            if ((op[0] == ')' || op[0] == ']' || op[0] == '}') && depth > 0) --depth;
            tokens_.push_back({Token::Kind::kOperator, op, line_});
            pos_ += n;
            found = true;
            break;
          }
        }
        if (!found) syntax_error(std::string("unexpected character '") + c + "'", line_);
      }
    }
  }

  void lex_number() {
    size_t k = pos_;
    while (k < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[k])) || s_[k] == '_')) ++k;
    bool is_float = false;
    if (k + 1 < s_.size() && s_[k] == '.' && std::isdigit(static_cast<unsigned char>(s_[k + 1]))) {
      is_float = true;
      ++k;
      while (k < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[k])) || s_[k] == '_')) ++k;
    }
    if (k < s_.size() && (s_[k] == 'e' || s_[k] == 'E')) {
      size_t e = k + 1;
      if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
      if (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) {
        is_float = true;
        k = e;
        while (k < s_.size() && std::isdigit(static_cast<unsigned char>(s_[k]))) ++k;
      }
    }
    std::string text;
    for (char ch : s_.substr(pos_, k - pos_))
      if (ch != '_') text += ch;
    tokens_.push_back({is_float ? Token::Kind::kFloat : Token::Kind::kInteger, text, line_});
    pos_ = k;
  }

  void lex_string(char quote) {
    std::string out;
    size_t k = pos_ + 1;
    for (;;) {
      if (k >= s_.size()) syntax_error("unterminated string", line_);
      const char c = s_[k];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\') {
        out += c;
        ++k;
        continue;
      }
      if (k + 1 >= s_.size()) syntax_error("unterminated string", line_);
      const char e = s_[k + 1];
      k += 2;
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': ++line_; break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (k + n > s_.size()) syntax_error("truncated \\" + std::string(1, e) + " escape", line_);
          uint32_t cp = 0;
          for (size_t d = 0; d < n; ++d) {
            const char h = s_[k + d];
            if (!std::isxdigit(static_cast<unsigned char>(h))) syntax_error("bad \\" + std::string(1, e) + " escape", line_);
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          k += n;
          append_utf8(out, cp);
          break;
        }
        default:
          out += '\\';
          out += e;
      }
    }
    tokens_.push_back({Token::Kind::kString, std::move(out), line_});
    pos_ = k + 1;
  }

  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1;
  bool raw_strip_ = false, raw_trim_ = false;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  // As jinja2: every "\r\n" and "\r" becomes "\n", and one trailing newline is dropped
  // (keep_trailing_newline is off).
  std::string normal;
  normal.reserve(source.size());
  for (size_t k = 0; k < source.size(); ++k) {
    if (source[k] == '\r') {
      normal += '\n';
      if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
    } else {
      normal += source[k];
    }
  }
  if (!normal.empty() && normal.back() == '\n') normal.pop_back();
  return Lexer(normal).run();
}

}  // namespace anelm::jinja
