// jinja2's tests ("x is defined", "x is string", ...) and the globals a chat template may call:
// range, namespace, dict, and transformers' raise_exception and strftime_now.
#include <ctime>
#include <map>

#include "jinja/builtins.h"
#include "jinja/unicode.h"

namespace anelm::jinja {

namespace {

using TestFn = bool (*)(Context&, const Value&, Args&);

const Value& need(Context& ctx, Args& a, const char* test) {
  if (a.empty()) fail(ctx, "TypeError", std::string("test '") + test + "' needs an argument");
  return a[0];
}

bool is_ascii_case(const Value& v, bool upper) { return upper ? py_isupper(to_str(v)) : py_islower(to_str(v)); }

const std::map<std::string, TestFn>& tests() {
  using K = Value::Kind;
  static const std::map<std::string, TestFn> table = {
      {"defined", [](Context&, const Value& v, Args&) { return !v.is_undefined(); }},
      {"undefined", [](Context&, const Value& v, Args&) { return v.is_undefined(); }},
      {"none", [](Context&, const Value& v, Args&) { return v.is_none(); }},
      {"boolean", [](Context&, const Value& v, Args&) { return v.kind == K::kBool; }},
      {"true", [](Context&, const Value& v, Args&) { return v.kind == K::kBool && v.b; }},
      {"false", [](Context&, const Value& v, Args&) { return v.kind == K::kBool && !v.b; }},
      {"integer", [](Context&, const Value& v, Args&) { return v.kind == K::kInt; }},
      {"float", [](Context&, const Value& v, Args&) { return v.kind == K::kFloat; }},
      {"number", [](Context&, const Value& v, Args&) { return v.is_number(); }},
      {"string", [](Context&, const Value& v, Args&) { return v.is_string(); }},
      {"mapping", [](Context&, const Value& v, Args&) { return v.is_dict(); }},
      // Python: iter() works on str, list, dict, generators and jinja2's Undefined.
      {"iterable", [](Context&, const Value& v, Args&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
      {"sequence", [](Context&, const Value& v, Args&) {
         return v.is_string() || (v.is_list() && v.name.empty()) || v.is_dict() || v.is_undefined();
       }},
      {"callable", [](Context&, const Value& v, Args&) { return v.kind == K::kCallable; }},
      {"escaped", [](Context&, const Value& v, Args&) { return v.is_string() && v.safe; }},
      {"lower", [](Context&, const Value& v, Args&) { return is_ascii_case(v, false); }},
      {"upper", [](Context&, const Value& v, Args&) { return is_ascii_case(v, true); }},
      // value % 2 == 1, value % 2 == 0, value % num == 0, with Python's % (floats too).
      {"odd", [](Context& c, const Value& v, Args&) { return equals(binary_op(c, "%", v, Value::integer(2)), Value::integer(1)); }},
      {"even", [](Context& c, const Value& v, Args&) { return equals(binary_op(c, "%", v, Value::integer(2)), Value::integer(0)); }},
      {"divisibleby", [](Context& c, const Value& v, Args& a) {
         return equals(binary_op(c, "%", v, need(c, a, "divisibleby")), Value::integer(0));
       }},
      {"eq", [](Context& c, const Value& v, Args& a) { return equals(v, need(c, a, "eq")); }},
      {"ne", [](Context& c, const Value& v, Args& a) { return !equals(v, need(c, a, "ne")); }},
      {"lt", [](Context& c, const Value& v, Args& a) { return less(c, v, need(c, a, "lt")); }},
      {"gt", [](Context& c, const Value& v, Args& a) { return less(c, need(c, a, "gt"), v); }},
      {"le", [](Context& c, const Value& v, Args& a) { return !less(c, need(c, a, "le"), v); }},
      {"ge", [](Context& c, const Value& v, Args& a) { return !less(c, v, need(c, a, "ge")); }},
      {"in", [](Context& c, const Value& v, Args& a) { return contains(c, need(c, a, "in"), v); }},
      {"sameas", [](Context& c, const Value& v, Args& a) {
         // Python "is": singletons (None, True, False) by value, containers by identity.
         const Value& o = need(c, a, "sameas");
         if (v.kind != o.kind) return false;
         switch (v.kind) {
           case K::kNone: case K::kUndefined: return true;
           case K::kBool: return v.b == o.b;
           case K::kList: return v.list == o.list;
           case K::kDict: case K::kNamespace: return v.dict == o.dict;
           default: return equals(v, o);
         }
       }},
  };
  return table;
}

const std::map<std::string, std::string>& test_aliases() {
  static const std::map<std::string, std::string> aliases = {
      {"==", "eq"}, {"equalto", "eq"}, {"!=", "ne"}, {"<", "lt"}, {"lessthan", "lt"}, {"<=", "le"},
      {">", "gt"}, {"greaterthan", "gt"}, {">=", "ge"}};
  return aliases;
}

Value range_fn(Context& ctx, Args& a, Kwargs&) {
  int64_t start = 0, stop = 0, step = 1;
  auto as_i = [&](const Value& v) {
    if (v.kind == Value::Kind::kBool) return static_cast<int64_t>(v.b);
    if (v.kind != Value::Kind::kInt) fail(ctx, "TypeError", std::string("'") + type_name(v) + "' object cannot be interpreted as an integer");
    return v.i;
  };
  if (a.size() == 1) stop = as_i(a[0]);
  else if (a.size() == 2 || a.size() == 3) {
    start = as_i(a[0]);
    stop = as_i(a[1]);
    if (a.size() == 3) step = as_i(a[2]);
  } else {
    fail(ctx, "TypeError", "range expected 1 to 3 arguments, got " + std::to_string(a.size()));
  }
  if (step == 0) fail(ctx, "ValueError", "range() arg 3 must not be zero");
  const __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  const __int128 by = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
  const __int128 count = span > 0 ? (span + by - 1) / by : 0;
  // The sandbox's MAX_RANGE; a larger range is an error, never a long loop.
  if (count > 100000) fail(ctx, "OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  List out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out.push_back(Value::integer(start + i * step));
  return Value::make_list(std::move(out));
}

Dict kwargs_dict(Context& ctx, Args& a, Kwargs& k, const char* fn) {
  Dict d;
  if (!a.empty()) {
    if (a.size() > 1 || !a[0].is_mapping()) fail(ctx, "TypeError", std::string(fn) + "() takes at most one mapping argument");
    d = *a[0].dict;
  }
  for (auto& [key, v] : k) {
    const Value kv = Value::string(key);
    auto it = std::find_if(d.begin(), d.end(), [&](const auto& p) { return equals(p.first, kv); });
    if (it != d.end()) it->second = v;
    else d.emplace_back(kv, v);
  }
  return d;
}

}  // namespace

bool has_test(const std::string& name) { return tests().count(name) > 0 || test_aliases().count(name) > 0; }

bool apply_test(Context& ctx, const std::string& name, const Value& input, Args& args) {
  ctx.step();
  std::string key = name;
  if (auto alias = test_aliases().find(name); alias != test_aliases().end()) key = alias->second;
  const auto it = tests().find(key);
  if (it == tests().end()) fail(ctx, "TemplateRuntimeError", "No test named '" + name + "'.");
  return it->second(ctx, input, args);
}

void add_globals(Context::Scope& scope) {
  scope.emplace_back("range", Value::callable("range", range_fn));
  scope.emplace_back("namespace", Value::callable("namespace", [](Context& c, Args& a, Kwargs& k) {
    return Value::make_namespace(kwargs_dict(c, a, k, "namespace"));
  }));
  scope.emplace_back("dict", Value::callable("dict", [](Context& c, Args& a, Kwargs& k) {
    return Value::make_dict(kwargs_dict(c, a, k, "dict"));
  }));
  scope.emplace_back("raise_exception", Value::callable("raise_exception", [](Context&, Args& a, Kwargs& k) -> Value {
    const Value* msg = arg(a, k, 0, "message");
    throw Raised(msg ? to_str(*msg) : std::string());
  }));
  scope.emplace_back("strftime_now", Value::callable("strftime_now", [](Context& c, Args& a, Kwargs& k) {
    const Value* fmt = arg(a, k, 0, "format");
    if (!fmt || !fmt->is_string()) fail(c, "TypeError", "strftime_now needs a format string");
    const std::time_t t = std::chrono::system_clock::to_time_t(c.now);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::string out(256 + fmt->str().size() * 8, '\0');
    const size_t n = std::strftime(out.data(), out.size(), fmt->str().c_str(), &tm);
    out.resize(n);
    return Value::string(std::move(out));
  }));
}

}  // namespace anelm::jinja
