// The interpreter: statements write to the context's output, expressions evaluate to Values.
#include <algorithm>

#include "jinja/ast.h"
#include "jinja/builtins.h"
#include "jinja/context.h"
#include "jinja/jinja.h"
#include "jinja/parser.h"

namespace anelm::jinja {

Context::Context(const Limits& l, std::chrono::system_clock::time_point t)
    : limits(l), now(t), start_(std::chrono::steady_clock::now()) {}

Value Context::lookup(const std::string& name) const {
  for (auto s = scopes.rbegin(); s != scopes.rend(); ++s)
    for (auto it = s->rbegin(); it != s->rend(); ++it)
      if (it->first == name) return it->second;
  return Value::undefined(name);
}

void Context::assign(const std::string& name, Value v) {
  Scope& s = scopes.back();
  for (auto& [k, x] : s) {
    if (k == name) {
      x = std::move(v);
      return;
    }
  }
  s.emplace_back(name, std::move(v));
}

void Context::step() {
  if (++steps_ > limits.max_steps) fail(*this, "LimitError", "the template took more than " + std::to_string(limits.max_steps) + " steps");
  if ((steps_ & 255) == 0) check_time();
}

void Context::check_time() const {
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  if (ms > limits.max_ms) fail(*this, "LimitError", "the template ran longer than " + std::to_string(static_cast<int>(limits.max_ms)) + " ms");
}

void Context::check_items(size_t items) const {
  if (items > static_cast<size_t>(limits.max_items))
    fail(*this, "LimitError", "a list of " + std::to_string(items) + " items exceeds the limit of " + std::to_string(limits.max_items));
  check_time();
}

void Context::check_size(size_t bytes) const {
  check_time();
  if (bytes > static_cast<size_t>(limits.max_output_bytes))
    fail(*this, "LimitError", "a value of " + std::to_string(bytes) + " bytes exceeds the output limit of " +
                                  std::to_string(limits.max_output_bytes));
}

void Context::write(const std::string& s) {
  check_size(out.size() + s.size());
  out += s;
}

void fail(const Context& ctx, const std::string& prefix, const std::string& what) {
  throw Error((prefix.empty() ? what : prefix + ": " + what) + (ctx.line > 0 ? " (line " + std::to_string(ctx.line) + ")" : ""));
}

namespace {

enum class Flow { kNormal, kBreak, kContinue };

// Whether `target` (a namespace's attributes) is reachable from v.
bool reaches(const Value& v, const Dict* target, std::vector<const Dict*>& seen) {
  if (v.kind == Value::Kind::kNamespace) {
    if (v.dict.get() == target) return true;
    if (std::find(seen.begin(), seen.end(), v.dict.get()) != seen.end()) return false;
    seen.push_back(v.dict.get());
    for (const auto& kv : *v.dict)
      if (reaches(kv.second, target, seen)) return true;
    return false;
  }
  if (!v.holds_namespace) return false;
  if (v.kind == Value::Kind::kList)
    for (const Value& x : *v.list)
      if (reaches(x, target, seen)) return true;
  if (v.kind == Value::Kind::kDict)
    for (const auto& kv : *v.dict)
      if (reaches(kv.second, target, seen)) return true;
  return false;
}

struct DepthGuard {
  Context& ctx;
  explicit DepthGuard(Context& c) : ctx(c) {
    if (++ctx.depth > ctx.limits.max_depth)
      fail(ctx, "RecursionError", "maximum recursion depth exceeded (the limit is " + std::to_string(ctx.limits.max_depth) +
                                      " nested macro calls and expressions)");
  }
  ~DepthGuard() { --ctx.depth; }
};

class Interpreter {
 public:
  explicit Interpreter(Context& ctx) : ctx_(ctx) {}

  Flow exec(const Body& body) {
    for (const StmtPtr& s : body) {
      const Flow f = exec(*s);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Value eval(const Expr& e) {
    DepthGuard guard(ctx_);
    ctx_.step();
    ctx_.line = e.line;
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: return ctx_.lookup(e.name);
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        List l;
        for (const ExprPtr& x : e.items) l.push_back(eval(*x));
        return e.kind == Expr::Kind::kTuple ? Value::make_tuple(std::move(l)) : Value::make_list(std::move(l));
      }
      case Expr::Kind::kDict: {
        Dict d;
        for (size_t k = 0; k < e.keys.size(); ++k) {
          Value key = eval(*e.keys[k]);
          Value val = eval(*e.items[k]);
          auto it = std::find_if(d.begin(), d.end(), [&](const auto& kv) { return equals(kv.first, key); });
          if (it != d.end()) it->second = std::move(val);
          else d.emplace_back(std::move(key), std::move(val));
        }
        return Value::make_dict(std::move(d));
      }
      case Expr::Kind::kGetAttr: {
        const Value obj = eval(*e.a);
        ctx_.line = e.line;
        if (obj.is_undefined()) undefined_error(ctx_, obj);
        return get_attribute(ctx_, obj, e.name);
      }
      case Expr::Kind::kGetItem: {
        const Value obj = eval(*e.a);
        const Value key = eval(*e.b);
        ctx_.line = e.line;
        if (obj.is_undefined()) undefined_error(ctx_, obj);
        return get_item(ctx_, obj, key);
      }
      case Expr::Kind::kSlice: {
        const Value obj = eval(*e.a);
        const Value start = e.b ? eval(*e.b) : Value::none();
        const Value stop = e.c ? eval(*e.c) : Value::none();
        const Value step = e.items.empty() ? Value::none() : eval(*e.items[0]);
        if (obj.is_undefined()) undefined_error(ctx_, obj);
        return slice(ctx_, obj, start, stop, step);
      }
      case Expr::Kind::kUnary: {
        const Value v = eval(*e.a);
        if (e.name == "not") return Value::boolean(!v.truthy());
        if (v.is_undefined()) undefined_error(ctx_, v);
        if (!v.is_number()) fail(ctx_, "TypeError", std::string("bad operand type for unary ") + e.name + ": '" + type_name(v) + "'");
        if (e.name == "+") return v;
        if (v.kind == Value::Kind::kFloat) return Value::number(-v.f);
        return Value::integer(-(v.kind == Value::Kind::kBool ? static_cast<int64_t>(v.b) : v.i));
      }
      case Expr::Kind::kBinary: return eval_binary(e);
      case Expr::Kind::kCall: {
        const Value callee = eval(*e.a);
        Args args;
        Kwargs kwargs;
        eval_args(e, args, kwargs);
        ctx_.line = e.line;
        if (callee.is_undefined()) undefined_error(ctx_, callee);
        return call_value(ctx_, callee, args, kwargs);
      }
      case Expr::Kind::kFilter: {
        const Value input = eval(*e.a);
        Args args;
        Kwargs kwargs;
        eval_args(e, args, kwargs);
        ctx_.line = e.line;
        // Only an unknown filter inside an if statement or an inline if gets here (elsewhere the
        // parser refuses it, as jinja2's compiler): jinja2 raises when it is called.
        if (!has_filter(e.name)) fail(ctx_, "TemplateRuntimeError", "No filter named " + to_repr(Value::string(e.name)) + " found.");
        return apply_filter(ctx_, e.name, input, args, kwargs);
      }
      case Expr::Kind::kTest: {
        const Value input = eval(*e.a);
        Args args;
        Kwargs kwargs;
        eval_args(e, args, kwargs);
        ctx_.line = e.line;
        if (!has_test(e.name)) fail(ctx_, "TemplateRuntimeError", "No test named " + to_repr(Value::string(e.name)) + " found.");
        return Value::boolean(apply_test(ctx_, e.name, input, args) != e.negate);
      }
      case Expr::Kind::kCond: {
        if (eval(*e.a).truthy()) return eval(*e.b);
        if (e.c) return eval(*e.c);
        return Value::undefined_hint("the inline if-expression on line " + std::to_string(e.line) +
                                     " evaluated to false and no else section was defined.");
      }
    }
    return Value::undefined();
  }

 private:
  void eval_args(const Expr& e, Args& args, Kwargs& kwargs) {
    for (const ExprPtr& x : e.items) args.push_back(eval(*x));
    for (const auto& [k, x] : e.kwargs) kwargs.emplace_back(k, eval(*x));
  }

  Value eval_binary(const Expr& e) {
    if (e.name == "and") {
      Value a = eval(*e.a);
      return a.truthy() ? eval(*e.b) : a;
    }
    if (e.name == "or") {
      Value a = eval(*e.a);
      return a.truthy() ? a : eval(*e.b);
    }
    const Value a = eval(*e.a);
    const Value b = eval(*e.b);
    ctx_.line = e.line;
    return binary_op(ctx_, e.name, a, b);
  }

  Flow exec(const Stmt& s) {
    ctx_.step();
    ctx_.line = s.line;
    switch (s.kind) {
      case Stmt::Kind::kText: ctx_.write(s.text); return Flow::kNormal;
      case Stmt::Kind::kOutput: {
        const Value v = eval(*s.expr);
        ctx_.write(to_str(v));
        return Flow::kNormal;
      }
      case Stmt::Kind::kIf:
        for (const auto& [cond, body] : s.branches)
          if (eval(*cond).truthy()) return exec(body);
        return exec(s.else_body);
      case Stmt::Kind::kFor: return exec_for(s);
      case Stmt::Kind::kSet: {
        Value v = eval(*s.expr);
        if (!s.attr.empty()) {
          const Value ns = ctx_.lookup(s.targets[0]);
          if (ns.kind != Value::Kind::kNamespace || !ns.name.empty())
            fail(ctx_, "TemplateRuntimeError", "cannot assign attribute on non-namespace object");
          // Python allows a namespace to contain itself; here the cycle would never be freed.
          std::vector<const Dict*> seen;
          if (reaches(v, ns.dict.get(), seen))
            fail(ctx_, "LimitError", "a namespace cannot contain itself (set " + s.targets[0] + "." + s.attr + ")");
          for (auto& [k, x] : *ns.dict) {
            if (k.is_string() && k.str() == s.attr) {
              x = std::move(v);
              return Flow::kNormal;
            }
          }
          ns.dict->emplace_back(Value::string(s.attr), std::move(v));
          return Flow::kNormal;
        }
        assign_targets(s.targets, v);
        return Flow::kNormal;
      }
      case Stmt::Kind::kSetBlock: ctx_.assign(s.targets[0], Value::string(capture(s.body))); return Flow::kNormal;
      case Stmt::Kind::kMacro: define_macro(s); return Flow::kNormal;
      case Stmt::Kind::kFilterBlock: {
        const Value text = Value::string(capture(s.body));
        Args args;
        Kwargs kwargs;
        eval_args(*s.expr, args, kwargs);
        ctx_.write(to_str(apply_filter(ctx_, s.expr->name, text, args, kwargs)));
        return Flow::kNormal;
      }
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
      case Stmt::Kind::kBlock: return exec(s.body);
    }
    return Flow::kNormal;
  }

  std::string capture(const Body& body) {
    std::string saved = std::move(ctx_.out);
    ctx_.out.clear();
    exec(body);
    std::string text = std::move(ctx_.out);
    ctx_.out = std::move(saved);
    return text;
  }

  void assign_targets(const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      ctx_.assign(targets[0], v);
      return;
    }
    std::vector<Value> items = iterate(ctx_, v);
    if (items.size() > targets.size())
      fail(ctx_, "ValueError", "too many values to unpack (expected " + std::to_string(targets.size()) + ")");
    if (items.size() < targets.size())
      fail(ctx_, "ValueError", "not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                                   std::to_string(items.size()) + ")");
    for (size_t k = 0; k < targets.size(); ++k) ctx_.assign(targets[k], items[k]);
  }

  Flow exec_for(const Stmt& s) {
    const Value seq = eval(*s.expr);
    std::vector<Value> items = iterate(ctx_, seq);
    if (s.cond) {  // `for x in xs if cond`: filtered before loop.* is computed
      std::vector<Value> kept;
      ctx_.scopes.emplace_back();
      for (Value& x : items) {
        ctx_.step();
        assign_targets(s.targets, x);
        if (eval(*s.cond).truthy()) kept.push_back(std::move(x));
      }
      ctx_.scopes.pop_back();
      items = std::move(kept);
    }
    if (items.empty()) return exec(s.else_body);
    ctx_.scopes.emplace_back();
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < n; ++k) {
      ctx_.step();
      Dict loop = {
          {Value::string("index"), Value::integer(k + 1)},
          {Value::string("index0"), Value::integer(k)},
          {Value::string("revindex"), Value::integer(n - k)},
          {Value::string("revindex0"), Value::integer(n - k - 1)},
          {Value::string("first"), Value::boolean(k == 0)},
          {Value::string("last"), Value::boolean(k == n - 1)},
          {Value::string("length"), Value::integer(n)},
          {Value::string("depth"), Value::integer(1)},
          {Value::string("depth0"), Value::integer(0)},
          {Value::string("previtem"), k > 0 ? items[static_cast<size_t>(k - 1)] : Value::undefined_hint("there is no previous item")},
          {Value::string("nextitem"), k + 1 < n ? items[static_cast<size_t>(k + 1)] : Value::undefined_hint("there is no next item")},
          {Value::string("cycle"), Value::callable("cycle", [k](Context& c, Args& a, Kwargs&) {
             if (a.empty()) fail(c, "TypeError", "no items for cycling given");
             return a[static_cast<size_t>(k) % a.size()];
           })},
      };
      Value loop_value = Value::make_dict(std::move(loop));
      loop_value.kind = Value::Kind::kNamespace;  // attribute access only, printed as an object
      loop_value.name = "jinja2.runtime.LoopContext";
      ctx_.assign("loop", loop_value);
      assign_targets(s.targets, items[static_cast<size_t>(k)]);
      if (exec(s.body) == Flow::kBreak) break;
    }
    ctx_.scopes.pop_back();
    return Flow::kNormal;
  }

  void define_macro(const Stmt& s) {
    const Stmt* def = &s;
    Context* ctx = &ctx_;
    Value macro = Value::callable(s.name, [def, ctx](Context& c, Args& args, Kwargs& kwargs) {
      DepthGuard guard(c);
      if (args.size() > def->params.size())
        fail(c, "TypeError", "macro '" + def->name + "' takes not more than " + std::to_string(def->params.size()) +
                                 " argument(s)");
      Context::Scope frame;
      Interpreter in(*ctx);
      for (size_t k = 0; k < def->params.size(); ++k) {
        const MacroParam& p = def->params[k];
        Value v;
        if (k < args.size()) {
          v = args[k];
        } else {
          auto it = std::find_if(kwargs.begin(), kwargs.end(), [&](const auto& kw) { return kw.first == p.name; });
          if (it != kwargs.end()) v = it->second;
          else if (p.default_value) v = in.eval(*p.default_value);
          else v = Value::undefined_hint("parameter " + to_repr(Value::string(p.name)) + " was not provided");
        }
        frame.emplace_back(p.name, std::move(v));
      }
      for (const auto& [k, v] : kwargs) {
        const std::string& key = k;  // clang < 16 cannot capture a structured binding
        const bool known = std::any_of(def->params.begin(), def->params.end(), [&](const MacroParam& p) { return p.name == key; });
        if (!known) fail(c, "TypeError", "macro '" + def->name + "' takes no keyword argument '" + k + "'");
      }
      // A macro sees the template's top-level names and its parameters, not the caller's locals.
      std::vector<Context::Scope> saved = std::move(c.scopes);
      c.scopes = {saved.front(), std::move(frame)};
      std::string out_saved = std::move(c.out);
      c.out.clear();
      try {
        in.exec(def->body);
      } catch (...) {
        saved.front() = std::move(c.scopes.front());
        c.scopes = std::move(saved);
        c.out = std::move(out_saved);
        throw;
      }
      saved.front() = std::move(c.scopes.front());  // top-level macros defined inside stay visible
      c.scopes = std::move(saved);
      std::string text = std::move(c.out);
      c.out = std::move(out_saved);
      Value result = Value::string(std::move(text));
      return result;
    });
    macro.b = true;
    ctx_.assign(s.name, std::move(macro));
  }

  Context& ctx_;
};

}  // namespace

std::string render_program(const Program& program, Context& ctx) {
  Interpreter in(ctx);
  in.exec(program.body);
  return std::move(ctx.out);
}

Template Template::parse(std::string_view source, const Limits& limits) {
  if (static_cast<int64_t>(source.size()) > limits.max_template_bytes)
    throw Error("LimitError: the template has " + std::to_string(source.size()) + " bytes, more than the limit of " +
                std::to_string(limits.max_template_bytes));
  Template t;
  t.program_ = std::make_shared<const Program>(parse_program(source, limits.max_depth));
  t.limits_ = limits;
  return t;
}

std::string Template::render(const nlohmann::ordered_json& context, std::chrono::system_clock::time_point now) const {
  Context ctx(limits_, now);
  ctx.scopes.emplace_back();
  add_globals(ctx.scopes.back());
  if (!context.is_object()) throw Error("TypeError: the render context must be a JSON object");
  for (const auto& [k, v] : context.items()) ctx.assign(k, Value::from_json(v));
  return render_program(*program_, ctx);
}

}  // namespace anelm::jinja
