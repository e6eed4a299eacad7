// Tokens -> statements and expressions, with jinja2's operator precedence:
// cond-expr < or < and < not < comparisons < + - < ~ < * / // % < ** < unary < postfix/filters.
#include "jinja/parser.h"

#include <cstdlib>

#include "jinja/jinja.h"
#include "jinja/lexer.h"

namespace anelm::jinja {

namespace {

class Parser {
 public:
  Parser(std::vector<Token> tokens, int max_depth) : t_(std::move(tokens)), max_depth_(max_depth) {}

  Program run() {
    Program p;
    p.body = parse_body({});
    if (peek().kind != Token::Kind::kEnd) fail("unexpected '" + tag_name() + "' tag");
    return p;
  }

 private:
  // ---- token helpers --------------------------------------------------------------------------
  const Token& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() {
    const Token& tok = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return tok;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("TemplateSyntaxError: " + what + " (line " + std::to_string(peek().line) + ")");
  }
  bool is_op(const char* op, size_t k = 0) const {
    return peek(k).kind == Token::Kind::kOperator && peek(k).text == op;
  }
  bool is_name(const char* name, size_t k = 0) const {
    return peek(k).kind == Token::Kind::kName && peek(k).text == name;
  }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(std::string("expected '") + op + "'");
  }
  std::string expect_name() {
    if (peek().kind != Token::Kind::kName) fail("expected a name");
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != Token::Kind::kBlockEnd) fail("expected the end of the tag, got '" + peek().text + "'");
    next();
  }
  // The tag name at a {% %}, for "unexpected tag" messages.
  std::string tag_name() const { return peek(1).text; }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > p.max_depth_) p.fail("template nests deeper than " + std::to_string(p.max_depth_) + " levels");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // ---- statements -----------------------------------------------------------------------------
  // Statements until one of the `ends` tags (left unconsumed) or the end of the template.
  // The body of a block up to and including its `{% end %}` tag.
  Body parse_closed_body(const char* end) {
    Body body = parse_body({end});
    next();
    expect_name();
    expect_block_end();
    return body;
  }

  Body parse_body(std::initializer_list<const char*> ends) {
    DepthGuard guard(*this);
    Body body;
    for (;;) {
      const Token& tok = peek();
      if (tok.kind == Token::Kind::kEnd) {
        if (ends.size() > 0) fail(std::string("missing '") + *ends.begin() + "'");
        return body;
      }
      if (tok.kind == Token::Kind::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->line = tok.line;
        s->text = next().text;
        body.push_back(std::move(s));
        continue;
      }
      if (tok.kind == Token::Kind::kVarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->line = tok.line;
        s->expr = parse_tuple_expr(true);
        if (peek().kind != Token::Kind::kVarEnd) fail("expected '}}', got '" + peek().text + "'");
        next();
        body.push_back(std::move(s));
        continue;
      }
      if (tok.kind != Token::Kind::kBlockBegin) fail("unexpected token '" + tok.text + "'");
      const std::string name = peek(1).text;
      for (const char* e : ends)
        if (name == e) return body;
      next();  // {%
      body.push_back(parse_statement());
    }
  }

  StmtPtr parse_statement() {
    const int line = peek().line;
    const std::string name = expect_name();
    auto s = std::make_unique<Stmt>();
    s->line = line;
    if (name == "if") {
      s->kind = Stmt::Kind::kIf;
      ExprPtr cond = parse_expr();
      expect_block_end();
      for (;;) {
        Body body = parse_body({"elif", "else", "endif"});
        s->branches.emplace_back(std::move(cond), std::move(body));
        next();  // {%
        const std::string tag = expect_name();
        if (tag == "elif") {
          cond = parse_expr();
          expect_block_end();
          continue;
        }
        if (tag == "else") {
          expect_block_end();
          s->else_body = parse_body({"endif"});
          next();
          expect_name();
        }
        expect_block_end();
        return s;
      }
    }
    if (name == "for") {
      s->kind = Stmt::Kind::kFor;
      s->targets = parse_targets();
      if (!accept_name("in")) fail("expected 'in'");
      s->expr = parse_tuple_expr(false);
      if (accept_name("if")) s->cond = parse_expr();
      if (accept_name("recursive")) fail("recursive loops are not supported");
      expect_block_end();
      s->body = parse_body({"else", "endfor"});
      next();
      if (expect_name() == "else") {
        expect_block_end();
        s->else_body = parse_body({"endfor"});
        next();
        expect_name();
      }
      expect_block_end();
      return s;
    }
    if (name == "set") {
      const std::string target = expect_name();
      if (accept_op(".")) {
        s->kind = Stmt::Kind::kSet;
        s->targets = {target};
        s->attr = expect_name();
        expect_op("=");
        s->expr = parse_tuple_expr(true);
        expect_block_end();
        return s;
      }
      s->targets = {target};
      while (accept_op(",")) s->targets.push_back(expect_name());
      if (peek().kind == Token::Kind::kBlockEnd && s->targets.size() == 1) {
        next();
        s->kind = Stmt::Kind::kSetBlock;
        s->body = parse_closed_body("endset");
        return s;
      }
      s->kind = Stmt::Kind::kSet;
      expect_op("=");
      s->expr = parse_tuple_expr(true);
      expect_block_end();
      return s;
    }
    if (name == "macro") {
      s->kind = Stmt::Kind::kMacro;
      s->name = expect_name();
      expect_op("(");
      while (!accept_op(")")) {
        MacroParam p;
        p.name = expect_name();
        if (accept_op("=")) p.default_value = parse_expr();
        s->params.push_back(std::move(p));
        if (!is_op(")")) expect_op(",");
      }
      expect_block_end();
      s->body = parse_body({"endmacro"});
      next();
      expect_name();
      if (peek().kind == Token::Kind::kName) next();  // {% endmacro name %}
      expect_block_end();
      return s;
    }
    if (name == "filter") {
      s->kind = Stmt::Kind::kFilterBlock;
      auto call = std::make_unique<Expr>();
      call->kind = Expr::Kind::kFilter;
      call->line = line;
      call->name = expect_name();
      if (accept_op("(")) parse_call_args(*call);
      s->expr = std::move(call);
      expect_block_end();
      s->body = parse_closed_body("endfilter");
      return s;
    }
    if (name == "generation") {
      s->kind = Stmt::Kind::kBlock;
      expect_block_end();
      s->body = parse_closed_body("endgeneration");
      return s;
    }
    if (name == "break" || name == "continue") {
      s->kind = name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      expect_block_end();
      return s;
    }
    fail("unknown tag '" + name + "'");
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool paren = accept_op("(");
    names.push_back(expect_name());
    while (accept_op(",")) {
      if (is_name("in") || is_op(")")) break;
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  // ---- expressions ----------------------------------------------------------------------------
  // Records e's height once its children are attached; operator chains (a + b + c ..., a.b.c ...,
  // x|f|g ...) are parsed by loops, not recursion, so the height is bounded here.
  ExprPtr seal(ExprPtr e) {
    int h = 0;
    for (const Expr* c : {e->a.get(), e->b.get(), e->c.get()})
      if (c) h = std::max(h, c->height);
    for (const auto& x : e->items) h = std::max(h, x->height);
    for (const auto& x : e->keys) h = std::max(h, x->height);
    for (const auto& kv : e->kwargs) h = std::max(h, kv.second->height);
    e->height = h + 1;
    if (e->height > max_depth_) fail("expression nests deeper than " + std::to_string(max_depth_) + " levels");
    return e;
  }

  ExprPtr node(Expr::Kind kind) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = peek().line;
    return e;
  }

  // A comma-separated list is a tuple ({{ a, b }}, {% set x = 1, 2 %}, for ... in a, b).
  ExprPtr parse_tuple_expr(bool with_cond) {
    ExprPtr first = with_cond ? parse_expr() : parse_or();
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::kTuple);
    t->items.push_back(std::move(first));
    while (accept_op(",")) {
      if (peek().kind == Token::Kind::kBlockEnd || peek().kind == Token::Kind::kVarEnd) break;
      t->items.push_back(with_cond ? parse_expr() : parse_or());
    }
    return seal(std::move(t));
  }

  ExprPtr parse_expr() {
    DepthGuard guard(*this);
    ExprPtr e = parse_or();
    while (is_name("if")) {
      next();
      auto c = node(Expr::Kind::kCond);
      c->a = parse_or();
      c->b = std::move(e);
      if (accept_name("else")) c->c = parse_expr();
      e = seal(std::move(c));
    }
    return e;
  }

  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b) {
    auto e = node(Expr::Kind::kBinary);
    e->name = std::move(op);
    e->a = std::move(a);
    e->b = std::move(b);
    return seal(std::move(e));
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (accept_name("or")) e = binary("or", std::move(e), parse_and());
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (accept_name("and")) e = binary("and", std::move(e), parse_not());
    return e;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      next();
      DepthGuard guard(*this);
      auto e = node(Expr::Kind::kUnary);
      e->name = "not";
      e->a = parse_not();
      return seal(std::move(e));
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    for (;;) {
      std::string op;
      if (peek().kind == Token::Kind::kOperator &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == "<=" ||
           peek().text == ">" || peek().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        return e;
      }
      e = binary(op, std::move(e), parse_math1());
    }
  }
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = next().text;
      e = binary(op, std::move(e), parse_concat());
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (accept_op("~")) e = binary("~", std::move(e), parse_math2());
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = next().text;
      e = binary(op, std::move(e), parse_pow());
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (accept_op("**")) e = binary("**", std::move(e), parse_unary(true));
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      auto u = node(Expr::Kind::kUnary);
      u->name = next().text;
      u->a = parse_unary(false);
      e = seal(std::move(u));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    return with_filter ? parse_filters(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& tok = peek();
    switch (tok.kind) {
      case Token::Kind::kName: {
        const std::string n = next().text;
        auto e = node(Expr::Kind::kLiteral);
        if (n == "true" || n == "True") e->value = Value::boolean(true);
        else if (n == "false" || n == "False") e->value = Value::boolean(false);
        else if (n == "none" || n == "None") e->value = Value::none();
        else {
          e->kind = Expr::Kind::kName;
          e->name = n;
        }
        return e;
      }
      case Token::Kind::kString: {
        std::string s = next().text;
        while (peek().kind == Token::Kind::kString) s += next().text;  // adjacent literals concatenate
        auto e = node(Expr::Kind::kLiteral);
        e->value = Value::string(std::move(s));
        return e;
      }
      case Token::Kind::kInteger: {
        auto e = node(Expr::Kind::kLiteral);
        const std::string text = next().text;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        e->value = Value::integer(v);
        return e;
      }
      case Token::Kind::kFloat: {
        auto e = node(Expr::Kind::kLiteral);
        e->value = Value::number(std::strtod(next().text.c_str(), nullptr));
        return e;
      }
      case Token::Kind::kOperator: break;
      default: fail("unexpected '" + tok.text + "'");
    }
    if (accept_op("(")) {
      if (accept_op(")")) return node(Expr::Kind::kTuple);
      ExprPtr first = parse_expr();
      if (accept_op(")")) return first;
      auto t = node(Expr::Kind::kTuple);
      t->items.push_back(std::move(first));
      while (accept_op(",")) {
        if (is_op(")")) break;
        t->items.push_back(parse_expr());
      }
      expect_op(")");
      return seal(std::move(t));
    }
    if (accept_op("[")) {
      auto l = node(Expr::Kind::kList);
      while (!accept_op("]")) {
        l->items.push_back(parse_expr());
        if (!is_op("]")) expect_op(",");
      }
      return seal(std::move(l));
    }
    if (accept_op("{")) {
      auto d = node(Expr::Kind::kDict);
      while (!accept_op("}")) {
        d->keys.push_back(parse_expr());
        expect_op(":");
        d->items.push_back(parse_expr());
        if (!is_op("}")) expect_op(",");
      }
      return seal(std::move(d));
    }
    fail("unexpected '" + tok.text + "'");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      if (accept_op(".")) {
        auto g = node(Expr::Kind::kGetAttr);
        if (peek().kind == Token::Kind::kInteger) {  // a.0 is a[0]
          g->kind = Expr::Kind::kGetItem;
          auto idx = node(Expr::Kind::kLiteral);
          idx->value = Value::integer(std::strtoll(next().text.c_str(), nullptr, 10));
          g->b = std::move(idx);
        } else {
          g->name = expect_name();
        }
        g->a = std::move(e);
        e = seal(std::move(g));
      } else if (accept_op("[")) {
        e = seal(parse_subscript(std::move(e)));
      } else if (accept_op("(")) {
        auto c = node(Expr::Kind::kCall);
        c->a = std::move(e);
        parse_call_args(*c);
        e = seal(std::move(c));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr target) {
    ExprPtr parts[3];
    int n = 0;
    bool slice = false;
    for (;;) {
      if (is_op("]")) break;
      if (accept_op(":")) {
        slice = true;
        if (++n > 2) fail("too many ':' in a slice");
        continue;
      }
      parts[n] = parse_expr();
      if (!is_op(":") && !is_op("]")) fail("expected ':' or ']'");
    }
    expect_op("]");
    auto e = node(slice ? Expr::Kind::kSlice : Expr::Kind::kGetItem);
    e->a = std::move(target);
    if (!slice) {
      if (!parts[0]) fail("empty subscript");
      e->b = std::move(parts[0]);
    } else {
      e->b = std::move(parts[0]);
      e->c = std::move(parts[1]);
      if (parts[2]) e->items.push_back(std::move(parts[2]));
    }
    return e;
  }

  void parse_call_args(Expr& call) {
    while (!accept_op(")")) {
      if (peek().kind == Token::Kind::kName && is_op("=", 1)) {
        std::string key = next().text;
        next();
        call.kwargs.emplace_back(std::move(key), parse_expr());
      } else {
        if (!call.kwargs.empty()) fail("positional argument after a keyword argument");
        call.items.push_back(parse_expr());
      }
      if (!is_op(")")) expect_op(",");
    }
  }

  ExprPtr parse_filters(ExprPtr e) {
    for (;;) {
      if (accept_op("|")) {
        auto f = node(Expr::Kind::kFilter);
        f->name = expect_name();
        while (accept_op(".")) f->name += "." + expect_name();
        if (accept_op("(")) parse_call_args(*f);
        f->a = std::move(e);
        e = seal(std::move(f));
      } else if (is_name("is")) {
        next();
        auto t = node(Expr::Kind::kTest);
        t->negate = accept_name("not");
        if (peek().kind != Token::Kind::kName) fail("expected token 'name', got '" + peek().text + "'");
        t->name = next().text;
        if (accept_op("(")) {
          parse_call_args(*t);
        } else if (starts_test_argument()) {
          t->items.push_back(parse_unary(false));
        }
        t->a = std::move(e);
        e = seal(std::move(t));
      } else if (accept_op("(")) {
        auto c = node(Expr::Kind::kCall);
        c->a = std::move(e);
        parse_call_args(*c);
        e = seal(std::move(c));
      } else {
        return e;
      }
    }
  }

  // `x is divisibleby 3`, `x is sameas none`: one argument without parentheses.
  bool starts_test_argument() const {
    const Token& tok = peek();
    if (tok.kind == Token::Kind::kString || tok.kind == Token::Kind::kInteger || tok.kind == Token::Kind::kFloat)
      return true;
    if (tok.kind == Token::Kind::kName)
      return tok.text != "else" && tok.text != "or" && tok.text != "and" && tok.text != "if" && tok.text != "in" &&
             tok.text != "not" && tok.text != "is";
    return tok.kind == Token::Kind::kOperator && (tok.text == "[" || tok.text == "{");
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  int max_depth_;
};

}  // namespace

Program parse_program(std::string_view source, int max_depth) {
  Program p = Parser(tokenize(source), max_depth).run();
  check_filter_and_test_names(p);
  return p;
}

}  // namespace anelm::jinja
