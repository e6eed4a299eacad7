// The parsed template: expression and statement nodes (internal to the jinja library).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jinja/value.h"

namespace anelm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // items
    kTuple,      // items
    kDict,       // keys, items
    kGetAttr,    // a.name
    kGetItem,    // a[b]
    kSlice,      // a[b:c:d] (null parts allowed)
    kUnary,      // op a   (not, -, +)
    kBinary,     // a op b (or, and, ==, !=, <, <=, >, >=, in, not in, +, -, *, /, //, %, **, ~)
    kCall,       // a(args, kwargs)
    kFilter,     // a | name(args, kwargs)
    kTest,       // a is [not] name(args)
    kCond,       // b if a else c
  };
  Kind kind;
  int line = 0;
  int height = 1;  // of the subtree (the parser bounds it: evaluation and destruction recurse on it)
  Value value;
  std::string name;  // kName, kGetAttr, kFilter, kTest; op for kUnary/kBinary
  bool negate = false;  // kTest: "is not"
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;  // list/tuple items, call/filter/test positional args
  std::vector<ExprPtr> keys;   // dict keys
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  enum class Kind {
    kText,       // text
    kOutput,     // {{ expr }}
    kIf,         // branches (cond, body); else_body
    kFor,        // targets in iter [if filter]: body; else_body
    kSet,        // targets = expr | ns.attr = expr
    kSetBlock,   // {% set x %}body{% endset %}
    kMacro,      // name(params): body
    kFilterBlock,  // {% filter name(args) %}body{% endfilter %}
    kBreak,
    kContinue,
    kBlock,      // a plain body ({% generation %})
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;                 // output / set value / for iterable / filter-block call
  ExprPtr cond;                 // for ... if cond
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, else_body;
  std::vector<std::string> targets;  // for / set names (tuple unpacking when > 1)
  std::string attr;                  // set ns.attr: targets[0] = ns
  std::string name;                  // macro name
  std::vector<MacroParam> params;
};

struct Program {
  Body body;
};

}  // namespace anelm::jinja
