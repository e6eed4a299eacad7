// The compile-time checks jinja2 makes after parsing.
#include <string>

#include "jinja/builtins.h"
#include "jinja/jinja.h"
#include "jinja/parser.h"

namespace anelm::jinja {

namespace {

// jinja2's compiler refuses an unknown filter or test (TemplateAssertionError) unless it sits in
// an if statement's tests and direct body or in an inline if ("soft" frames), where it raises
// TemplateRuntimeError when reached. A for loop, macro, set or filter block starts a new frame.
class UnknownNameCheck {
 public:
  void body(const Body& b, bool soft) {
    for (const StmtPtr& s : b) stmt(*s, soft);
  }

 private:
  void stmt(const Stmt& s, bool soft) {
    if (s.expr && s.kind != Stmt::Kind::kFilterBlock) expr(*s.expr, soft);
    switch (s.kind) {
      case Stmt::Kind::kIf:
        for (const auto& [cond, b] : s.branches) {
          expr(*cond, true);
          body(b, true);
        }
        body(s.else_body, true);
        return;
      case Stmt::Kind::kFilterBlock: expr(*s.expr, false); break;
      case Stmt::Kind::kMacro:
        for (const MacroParam& p : s.params)
          if (p.default_value) expr(*p.default_value, false);
        break;
      default: break;
    }
    if (s.cond) expr(*s.cond, false);
    body(s.body, false);
    body(s.else_body, false);
  }

  void expr(const Expr& e, bool soft) {
    if (e.kind == Expr::Kind::kCond) soft = true;
    if (!soft && e.kind == Expr::Kind::kFilter && !has_filter(e.name)) unknown("filter", e);
    if (!soft && e.kind == Expr::Kind::kTest && !has_test(e.name)) unknown("test", e);
    for (const Expr* c : {e.a.get(), e.b.get(), e.c.get()})
      if (c) expr(*c, soft);
    for (const auto& x : e.items) expr(*x, soft);
    for (const auto& x : e.keys) expr(*x, soft);
    for (const auto& kv : e.kwargs) expr(*kv.second, soft);
  }

  [[noreturn]] static void unknown(const char* what, const Expr& e) {
    throw Error(std::string("TemplateAssertionError: No ") + what + " named '" + e.name + "'. (line " +
                std::to_string(e.line) + ")");
  }
};

}  // namespace

void check_filter_and_test_names(const Program& program) { UnknownNameCheck().body(program.body, false); }

}  // namespace anelm::jinja
