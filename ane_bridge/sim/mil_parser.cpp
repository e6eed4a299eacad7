// Hand-written lexer and recursive-descent parser for dialect-A MIL.
#include "ane_bridge/sim/mil_parser.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace anelm::ane::sim {

std::string at(const SrcLoc& loc) {
  return "line " + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": ";
}

namespace {

enum class Tok { kIdent, kNumber, kString, kPunct, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  // identifier, number text, string contents, or punctuation
  double number = 0;
  SrcLoc loc;
};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Status next(Token* t) {
    skip_space();
    t->loc = SrcLoc{line_, col()};
    t->text.clear();
    if (pos_ >= s_.size()) {
      t->kind = Tok::kEnd;
      return {};
    }
    const char c = s_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t e = pos_;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_'))
        ++e;
      t->kind = Tok::kIdent;
      t->text = std::string(s_.substr(pos_, e - pos_));
      pos_ = e;
      return {};
    }
    const bool sign =
        (c == '-' || c == '+') && pos_ + 1 < s_.size() &&
        (std::isdigit(static_cast<unsigned char>(s_[pos_ + 1])) || s_[pos_ + 1] == '.');
    if (std::isdigit(static_cast<unsigned char>(c)) || sign || c == '.') {
      const std::string rest(s_.substr(pos_, std::min<std::size_t>(64, s_.size() - pos_)));
      char* end = nullptr;
      const double v = std::strtod(rest.c_str(), &end);
      if (end == rest.c_str()) return invalid_mil(at(t->loc) + "malformed number");
      t->kind = Tok::kNumber;
      t->number = v;
      t->text = rest.substr(0, end - rest.c_str());
      pos_ += t->text.size();
      return {};
    }
    if (c == '"') {
      std::size_t e = pos_ + 1;
      while (e < s_.size() && s_[e] != '"' && s_[e] != '\n') ++e;
      if (e >= s_.size() || s_[e] != '"')
        return invalid_mil(at(t->loc) + "unterminated string literal");
      t->kind = Tok::kString;
      t->text = std::string(s_.substr(pos_ + 1, e - pos_ - 1));
      pos_ = e + 1;
      return {};
    }
    if (c == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '>') {
      t->kind = Tok::kPunct;
      t->text = "->";
      pos_ += 2;
      return {};
    }
    if (std::string_view("()[]{}<>,=;").find(c) != std::string_view::npos) {
      t->kind = Tok::kPunct;
      t->text = std::string(1, c);
      ++pos_;
      return {};
    }
    return invalid_mil(at(t->loc) + "unexpected character '" + std::string(1, c) + "'");
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) {
      if (s_[pos_] == '\n') {
        ++line_;
        line_start_ = pos_ + 1;
      }
      ++pos_;
    }
  }
  int col() const { return static_cast<int>(pos_ - line_start_) + 1; }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::size_t line_start_ = 0;
  int line_ = 1;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : lex_(text) {}

  Status parse(ProgramAst* out) {
    ANE_RETURN_IF_ERROR(advance());
    ANE_RETURN_IF_ERROR(expect_ident("program"));
    ANE_RETURN_IF_ERROR(expect("("));
    if (tok_.kind != Tok::kNumber) return error("expected the program version");
    out->version = tok_.text;
    if (out->version != "1.3")
      return error("program(" + out->version +
                   ") is not dialect A; this simulator accepts program(1.3) only");
    ANE_RETURN_IF_ERROR(advance());
    ANE_RETURN_IF_ERROR(expect(")"));
    ANE_RETURN_IF_ERROR(parse_build_info(out));
    ANE_RETURN_IF_ERROR(expect("{"));
    while (is_ident("func")) {
      out->functions.emplace_back();
      ANE_RETURN_IF_ERROR(parse_function(&out->functions.back()));
    }
    if (out->functions.empty()) return error("expected 'func'");
    ANE_RETURN_IF_ERROR(expect("}"));
    if (tok_.kind != Tok::kEnd) return error("unexpected text after the program's closing '}'");
    return {};
  }

 private:
  Status advance() { return lex_.next(&tok_); }
  Status error(const std::string& m) const {
    std::string found = tok_.kind == Tok::kEnd ? "end of input" : "'" + tok_.text + "'";
    return invalid_mil(at(tok_.loc) + m + " (found " + found + ")");
  }
  bool is_punct(std::string_view p) const { return tok_.kind == Tok::kPunct && tok_.text == p; }
  bool is_ident(std::string_view p) const { return tok_.kind == Tok::kIdent && tok_.text == p; }
  Status expect(std::string_view p) {
    if (!is_punct(p)) return error("expected '" + std::string(p) + "'");
    return advance();
  }
  Status expect_ident(std::string_view p) {
    if (!is_ident(p)) return error("expected '" + std::string(p) + "'");
    return advance();
  }
  Status ident(std::string* out) {
    if (tok_.kind != Tok::kIdent) return error("expected an identifier");
    *out = tok_.text;
    return advance();
  }
  Status string_lit(std::string* out) {
    if (tok_.kind != Tok::kString) return error("expected a string literal");
    *out = tok_.text;
    return advance();
  }
  Status integer(std::int64_t* out) {
    if (tok_.kind != Tok::kNumber || tok_.number != std::floor(tok_.number))
      return error("expected an integer");
    *out = static_cast<std::int64_t>(tok_.number);
    return advance();
  }

  Status parse_build_info(ProgramAst* out) {
    ANE_RETURN_IF_ERROR(expect("["));
    ANE_RETURN_IF_ERROR(expect_ident("buildInfo"));
    ANE_RETURN_IF_ERROR(expect("="));
    ANE_RETURN_IF_ERROR(expect_ident("dict"));
    ANE_RETURN_IF_ERROR(expect("<"));
    MilType k, v;
    ANE_RETURN_IF_ERROR(parse_type(&k));
    ANE_RETURN_IF_ERROR(expect(","));
    ANE_RETURN_IF_ERROR(parse_type(&v));
    if (!k.scalar || k.dtype != DType::kString || !v.scalar || v.dtype != DType::kString)
      return error("buildInfo must be dict<string, string>");
    ANE_RETURN_IF_ERROR(expect(">"));
    ANE_RETURN_IF_ERROR(expect("("));
    ANE_RETURN_IF_ERROR(expect("{"));
    while (is_punct("{")) {
      ANE_RETURN_IF_ERROR(advance());
      std::string a, b;
      ANE_RETURN_IF_ERROR(string_lit(&a));
      ANE_RETURN_IF_ERROR(expect(","));
      ANE_RETURN_IF_ERROR(string_lit(&b));
      ANE_RETURN_IF_ERROR(expect("}"));
      out->build_info.emplace_back(a, b);
      if (!is_punct(",")) break;
      ANE_RETURN_IF_ERROR(advance());
    }
    ANE_RETURN_IF_ERROR(expect("}"));
    ANE_RETURN_IF_ERROR(expect(")"));
    return expect("]");
  }

  // scalar := fp16 | fp32 | int32 | bool | string | ...;  tensor<dtype, [dims]> (rank >= 1)
  Status parse_type(MilType* t) {
    if (tok_.kind != Tok::kIdent) return error("expected a type");
    if (tok_.text != "tensor") {
      DType d;
      if (!dtype_from_name(tok_.text, &d)) return error("unknown type '" + tok_.text + "'");
      *t = MilType::scalar_of(d);
      return advance();
    }
    ANE_RETURN_IF_ERROR(advance());
    ANE_RETURN_IF_ERROR(expect("<"));
    DType d;
    if (tok_.kind != Tok::kIdent || !dtype_from_name(tok_.text, &d))
      return error("expected an element type");
    ANE_RETURN_IF_ERROR(advance());
    ANE_RETURN_IF_ERROR(expect(","));
    const SrcLoc dims_loc = tok_.loc;
    ANE_RETURN_IF_ERROR(expect("["));
    std::vector<std::int64_t> dims;
    while (!is_punct("]")) {
      std::int64_t v = 0;
      ANE_RETURN_IF_ERROR(integer(&v));
      if (v <= 0) return invalid_mil(at(dims_loc) + "tensor dimensions must be positive");
      dims.push_back(v);
      if (!is_punct(",")) break;
      ANE_RETURN_IF_ERROR(advance());
    }
    ANE_RETURN_IF_ERROR(expect("]"));
    if (dims.empty())
      return invalid_mil(
          at(dims_loc) +
          "rank-0 tensor type is dialect B (ios16); dialect A uses bare scalars, and mixing "
          "dialects is an InvalidMILProgram");
    *t = MilType::tensor(d, dims);
    return expect(">");
  }

  Status parse_value(const MilType& type, ConstValue* v) {
    if (tok_.kind == Tok::kNumber) {
      v->nums.push_back(tok_.number);
    } else if (is_ident("true") || is_ident("false")) {
      v->nums.push_back(tok_.text == "true" ? 1.0 : 0.0);
    } else if (tok_.kind == Tok::kString && type.dtype == DType::kString) {
      v->text = tok_.text;
    } else {
      return error("expected a " + std::string(dtype_name(type.dtype)) + " value");
    }
    return advance();
  }

  Status parse_literal(Literal* lit) {
    lit->loc = tok_.loc;
    ANE_RETURN_IF_ERROR(parse_type(&lit->type));
    ANE_RETURN_IF_ERROR(expect("("));
    if (lit->type.scalar) {
      ANE_RETURN_IF_ERROR(parse_value(lit->type, &lit->value));
      return expect(")");
    }
    if (is_ident("BLOBFILE")) {
      ANE_RETURN_IF_ERROR(advance());
      ANE_RETURN_IF_ERROR(expect("("));
      ANE_RETURN_IF_ERROR(expect_ident("path"));
      ANE_RETURN_IF_ERROR(expect("="));
      ANE_RETURN_IF_ERROR(expect_ident("string"));
      ANE_RETURN_IF_ERROR(expect("("));
      ANE_RETURN_IF_ERROR(string_lit(&lit->blob_path));
      ANE_RETURN_IF_ERROR(expect(")"));
      ANE_RETURN_IF_ERROR(expect(","));
      ANE_RETURN_IF_ERROR(expect_ident("offset"));
      ANE_RETURN_IF_ERROR(expect("="));
      ANE_RETURN_IF_ERROR(expect_ident("uint64"));
      ANE_RETURN_IF_ERROR(expect("("));
      std::int64_t off = 0;
      ANE_RETURN_IF_ERROR(integer(&off));
      if (off < 0) return error("BLOBFILE offset must be non-negative");
      lit->blob_offset = static_cast<std::uint64_t>(off);
      lit->is_blob = true;
      ANE_RETURN_IF_ERROR(expect(")"));
      ANE_RETURN_IF_ERROR(expect(")"));
      return expect(")");
    }
    ANE_RETURN_IF_ERROR(expect("["));
    while (!is_punct("]")) {
      ANE_RETURN_IF_ERROR(parse_value(lit->type, &lit->value));
      if (!is_punct(",")) break;
      ANE_RETURN_IF_ERROR(advance());
    }
    ANE_RETURN_IF_ERROR(expect("]"));
    if (static_cast<std::int64_t>(lit->value.nums.size()) != lit->type.numel())
      return invalid_mil(at(lit->loc) + "literal has " + std::to_string(lit->value.nums.size()) +
                         " values, its type " + lit->type.str() + " needs " +
                         std::to_string(lit->type.numel()));
    return expect(")");
  }

  Status parse_function(FunctionAst* f) {
    f->loc = tok_.loc;
    ANE_RETURN_IF_ERROR(expect_ident("func"));
    ANE_RETURN_IF_ERROR(ident(&f->name));
    ANE_RETURN_IF_ERROR(expect("<"));
    const SrcLoc opset_loc = tok_.loc;
    ANE_RETURN_IF_ERROR(ident(&f->opset));
    if (f->opset != "ios18")
      return invalid_mil(at(opset_loc) + "function opset <" + f->opset +
                         "> under program(1.3): dialect A needs <ios18> (mixing dialects is an "
                         "InvalidMILProgram)");
    ANE_RETURN_IF_ERROR(expect(">"));
    ANE_RETURN_IF_ERROR(expect("("));
    while (!is_punct(")")) {
      ParamAst p;
      p.loc = tok_.loc;
      ANE_RETURN_IF_ERROR(parse_type(&p.type));
      ANE_RETURN_IF_ERROR(ident(&p.name));
      f->params.push_back(std::move(p));
      if (!is_punct(",")) break;
      ANE_RETURN_IF_ERROR(advance());
    }
    ANE_RETURN_IF_ERROR(expect(")"));
    ANE_RETURN_IF_ERROR(expect("{"));
    while (!is_punct("}")) {
      f->body.emplace_back();
      ANE_RETURN_IF_ERROR(parse_statement(&f->body.back()));
    }
    ANE_RETURN_IF_ERROR(expect("}"));
    ANE_RETURN_IF_ERROR(expect("->"));
    ANE_RETURN_IF_ERROR(expect("("));
    while (!is_punct(")")) {
      f->output_locs.push_back(tok_.loc);
      std::string o;
      ANE_RETURN_IF_ERROR(ident(&o));
      f->outputs.push_back(o);
      if (!is_punct(",")) break;
      ANE_RETURN_IF_ERROR(advance());
    }
    ANE_RETURN_IF_ERROR(expect(")"));
    return expect(";");
  }

  Status parse_statement(StatementAst* st) {
    st->loc = tok_.loc;
    ANE_RETURN_IF_ERROR(parse_type(&st->type));
    ANE_RETURN_IF_ERROR(ident(&st->var));
    ANE_RETURN_IF_ERROR(expect("="));
    st->op_loc = tok_.loc;
    ANE_RETURN_IF_ERROR(ident(&st->op));
    ANE_RETURN_IF_ERROR(expect("("));
    while (!is_punct(")")) {
      ArgAst a;
      a.loc = tok_.loc;
      ANE_RETURN_IF_ERROR(ident(&a.name));
      ANE_RETURN_IF_ERROR(expect("="));
      if (is_punct("(")) {
        a.tuple = true;
        ANE_RETURN_IF_ERROR(advance());
        while (!is_punct(")")) {
          std::string v;
          ANE_RETURN_IF_ERROR(ident(&v));
          a.vars.push_back(v);
          if (!is_punct(",")) break;
          ANE_RETURN_IF_ERROR(advance());
        }
        ANE_RETURN_IF_ERROR(expect(")"));
      } else {
        if (tok_.kind != Tok::kIdent)
          return error("op arguments must be variables (literals belong in the [...] attributes)");
        std::string v;
        ANE_RETURN_IF_ERROR(ident(&v));
        a.vars.push_back(v);
      }
      st->args.push_back(std::move(a));
      if (!is_punct(",")) break;
      ANE_RETURN_IF_ERROR(advance());
    }
    ANE_RETURN_IF_ERROR(expect(")"));
    ANE_RETURN_IF_ERROR(expect("["));
    while (!is_punct("]")) {
      AttrAst at_;
      at_.loc = tok_.loc;
      ANE_RETURN_IF_ERROR(ident(&at_.name));
      ANE_RETURN_IF_ERROR(expect("="));
      ANE_RETURN_IF_ERROR(parse_literal(&at_.value));
      st->attrs.push_back(std::move(at_));
      if (!is_punct(",")) break;
      ANE_RETURN_IF_ERROR(advance());
    }
    ANE_RETURN_IF_ERROR(expect("]"));
    return expect(";");
  }

  Lexer lex_;
  Token tok_;
};

}  // namespace

Status parse_mil(std::string_view text, ProgramAst* out) {
  *out = ProgramAst{};
  Parser p(text);
  return p.parse(out);
}

}  // namespace anelm::ane::sim
