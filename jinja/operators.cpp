// Python operators, attribute and item access, iteration and slicing, with Python's type rules.
#include <algorithm>
#include <cmath>

#include "jinja/builtins.h"

namespace anelm::jinja {

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t k = 0; k < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    out.push_back(s.substr(k, n));
    k += n;
  }
  return out;
}

namespace {

int64_t as_int(const Value& v) { return v.kind == Value::Kind::kBool ? v.b : v.i; }

[[noreturn]] void type_error(const Context& ctx, const std::string& op, const Value& a, const Value& b) {
  fail(ctx, "TypeError", "unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

}  // namespace

std::string object_type_repr(const Value& obj) {
  switch (obj.kind) {
    case Value::Kind::kNone: return "None";
    case Value::Kind::kNamespace: return (obj.name.empty() ? "jinja2.utils.Namespace" : obj.name) + " object";
    case Value::Kind::kCallable: return "function object";
    default: return std::string(type_name(obj)) + " object";
  }
}

Value undefined_attribute(const Value& obj, const std::string& name) {
  return Value::undefined_hint(to_repr(Value::string(object_type_repr(obj))) + " has no attribute " +
                               to_repr(Value::string(name)));
}

Value undefined_element(const Value& obj, const Value& key) {
  return Value::undefined_hint(object_type_repr(obj) + " has no element " + to_repr(key));
}

void undefined_error(const Context& ctx, const Value& u) {
  if (u.b) fail(ctx, u.i == 1 ? "SecurityError" : "UndefinedError", u.name);
  fail(ctx, "UndefinedError", to_repr(Value::string(u.name)) + " is undefined");
}

std::vector<Value> iterate(Context& ctx, const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList: return *v.list;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, x] : *v.dict) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      ctx.check_items(v.str().size() / 4);  // at least this many code points
      std::vector<Value> chars;
      for (std::string& c : code_points(v.str())) chars.push_back(Value::string(std::move(c)));
      return chars;
    }
    default: fail(ctx, "TypeError", std::string("'") + type_name(v) + "' object is not iterable");
  }
}

bool less(Context& ctx, const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_double() < b.as_double();
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_list() && b.is_list()) {
    const size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; ++k) {
      if (less(ctx, (*a.list)[k], (*b.list)[k])) return true;
      if (less(ctx, (*b.list)[k], (*a.list)[k])) return false;
    }
    return a.list->size() < b.list->size();
  }
  fail(ctx, "TypeError", std::string("'<' not supported between instances of '") + type_name(a) + "' and '" + type_name(b) + "'");
}

bool contains(Context& ctx, const Value& c, const Value& item) {
  switch (c.kind) {
    case Value::Kind::kString:
      if (!item.is_string()) fail(ctx, "TypeError", std::string("'in <string>' requires string as left operand, not ") + type_name(item));
      return c.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList:
      return std::any_of(c.list->begin(), c.list->end(), [&](const Value& x) { return equals(x, item); });
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: return c.find(item) != nullptr;
    case Value::Kind::kUndefined: return false;  // an Undefined iterates as empty
    default: fail(ctx, "TypeError", std::string("argument of type '") + type_name(c) + "' is not iterable");
  }
}

Value binary_op(Context& ctx, const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return Value::boolean(equals(a, b));
  if (op == "!=") return Value::boolean(!equals(a, b));
  if (op == "in") return Value::boolean(contains(ctx, b, a));
  if (op == "not in") return Value::boolean(!contains(ctx, b, a));
  if (op == "~") {
    std::string s = to_str(a) + to_str(b);
    ctx.check_size(s.size());
    return Value::string(std::move(s));
  }
  if (a.is_undefined()) undefined_error(ctx, a);
  if (b.is_undefined()) undefined_error(ctx, b);
  if (op == "<") return Value::boolean(less(ctx, a, b));
  if (op == ">") return Value::boolean(less(ctx, b, a));
  if (op == "<=") return Value::boolean(!less(ctx, b, a));
  if (op == ">=") return Value::boolean(!less(ctx, a, b));
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      ctx.check_size(a.str().size() + b.str().size());
      if (!a.safe && !b.safe) return Value::string(a.str() + b.str());
      // markupsafe: Markup + str escapes the plain operand (either side) and stays Markup.
      Value r = Value::string((a.safe ? a.str() : html_escape(a.str())) + (b.safe ? b.str() : html_escape(b.str())));
      r.safe = true;
      return r;
    }
    if (a.is_string()) fail(ctx, "TypeError", std::string("can only concatenate str (not \"") + type_name(b) + "\") to str");
    if (a.is_list() && b.is_list() && a.b == b.b && a.name.empty() && b.name.empty()) {
      ctx.check_items(a.list->size() + b.list->size());
      List l = *a.list;
      l.insert(l.end(), b.list->begin(), b.list->end());
      return a.b ? Value::make_tuple(std::move(l)) : Value::make_list(std::move(l));
    }
    if (a.is_list() && a.name.empty())
      fail(ctx, "TypeError", std::string("can only concatenate ") + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
  }
  if (op == "*") {
    const Value* seq = a.is_string() || a.is_list() ? &a : b.is_string() || b.is_list() ? &b : nullptr;
    const Value* count = seq == &a ? &b : &a;
    if (seq && count->is_number() && count->kind != Value::Kind::kFloat) {
      const int64_t n = std::max<int64_t>(0, as_int(*count));
      if (seq->is_string()) {
        ctx.check_size(seq->str().empty() ? 0 : static_cast<size_t>(std::min<int64_t>(n, INT64_MAX / 2 / static_cast<int64_t>(seq->str().size())) * static_cast<int64_t>(seq->str().size())));
        std::string s;
        for (int64_t k = 0; k < n; ++k) s += seq->str();
        return Value::string(std::move(s));
      }
      ctx.check_items(seq->list->empty() ? 0 : static_cast<size_t>(std::min<int64_t>(n, INT64_MAX / 2 / static_cast<int64_t>(seq->list->size())) * static_cast<int64_t>(seq->list->size())));
      List l;
      for (int64_t k = 0; k < n; ++k) l.insert(l.end(), seq->list->begin(), seq->list->end());
      return seq->b ? Value::make_tuple(std::move(l)) : Value::make_list(std::move(l));
    }
  }
  if (op == "%" && a.is_string()) {  // printf-style formatting: a tuple gives the arguments
    Args args = b.is_list() && b.b ? *b.list : Args{b};
    std::string s = percent_format(ctx, a.str(), args);
    return Value::string(std::move(s));
  }
  if (!a.is_number() || !b.is_number()) type_error(ctx, op, a, b);
  const bool ints = a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat;
  const double x = a.as_double(), y = b.as_double();
  if (op == "/") {
    if (y == 0) fail(ctx, "ZeroDivisionError", "division by zero");
    return Value::number(x / y);
  }
  if (ints) {
    const int64_t i = as_int(a), j = as_int(b);
    if (op == "+") return Value::integer(i + j);
    if (op == "-") return Value::integer(i - j);
    if (op == "*") return Value::integer(i * j);
    if (op == "//" || op == "%") {
      if (j == 0) fail(ctx, "ZeroDivisionError", op == "%" ? "integer modulo by zero" : "integer division or modulo by zero");
      int64_t q = i / j, r = i % j;
      if (r != 0 && ((r < 0) != (j < 0))) {  // Python floors
        --q;
        r += j;
      }
      return Value::integer(op == "//" ? q : r);
    }
    if (op == "**") {
      if (j >= 0) {
        int64_t r = 1;
        for (int64_t k = 0; k < j && k < 64; ++k) r *= i;
        return Value::integer(r);
      }
      return Value::number(std::pow(x, y));
    }
  }
  if (op == "+") return Value::number(x + y);
  if (op == "-") return Value::number(x - y);
  if (op == "*") return Value::number(x * y);
  if (op == "//" || op == "%") {
    if (y == 0) fail(ctx, "ZeroDivisionError", op == "%" ? "float modulo" : "float floor division by zero");
    const double q = std::floor(x / y);
    return Value::number(op == "//" ? q : x - q * y);
  }
  if (op == "**") return Value::number(std::pow(x, y));
  type_error(ctx, op, a, b);
}

namespace {

// Python's index normalisation: negative counts from the end; out of range -> nullopt.
bool normalise_index(int64_t& i, int64_t n) {
  if (i < 0) i += n;
  return i >= 0 && i < n;
}

}  // namespace

Value get_item(Context& ctx, const Value& obj, const Value& key) {
  switch (obj.kind) {
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: {
      if (const Value* v = obj.find(key)) return *v;
      if (key.is_string()) return get_attribute(ctx, obj, key.str());
      return undefined_element(obj, key);
    }
    case Value::Kind::kList: {
      if (key.kind != Value::Kind::kInt && key.kind != Value::Kind::kBool) {
        if (key.is_string()) return get_attribute(ctx, obj, key.str());
        fail(ctx, "TypeError", std::string("list indices must be integers or slices, not ") + type_name(key));
      }
      int64_t i = as_int(key);
      if (!normalise_index(i, static_cast<int64_t>(obj.list->size())))
        return undefined_element(obj, key);
      return (*obj.list)[static_cast<size_t>(i)];
    }
    case Value::Kind::kString: {
      if (key.kind != Value::Kind::kInt && key.kind != Value::Kind::kBool) {
        if (key.is_string()) return get_attribute(ctx, obj, key.str());
        fail(ctx, "TypeError", std::string("string indices must be integers, not ") + type_name(key));
      }
      const std::vector<std::string> cps = code_points(obj.str());
      int64_t i = as_int(key);
      if (!normalise_index(i, static_cast<int64_t>(cps.size())))
        return undefined_element(obj, key);
      return Value::string(cps[static_cast<size_t>(i)]);
    }
    default:
      if (key.is_string()) return get_attribute(ctx, obj, key.str());
      return undefined_element(obj, key);
  }
}

Value slice(Context& ctx, const Value& obj, const Value& start, const Value& stop, const Value& step) {
  const int64_t st = step.is_none() ? 1 : as_int(step);
  if (st == 0) fail(ctx, "ValueError", "slice step cannot be zero");
  std::vector<Value> items;
  const bool str = obj.is_string();
  if (str) {
    ctx.check_items(obj.str().size() / 4);
    for (std::string& c : code_points(obj.str())) items.push_back(Value::string(std::move(c)));
  } else if (obj.is_list()) {
    items = *obj.list;
  } else {
    fail(ctx, "TypeError", std::string("'") + type_name(obj) + "' object is not subscriptable");
  }
  const int64_t n = static_cast<int64_t>(items.size());
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t i = as_int(v);
    if (i < 0) i += n;
    if (st > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t a = clamp(start, st > 0 ? 0 : n - 1), b = clamp(stop, st > 0 ? n : -1);
  List out;
  for (int64_t i = a; st > 0 ? i < b : i > b; i += st) out.push_back(items[static_cast<size_t>(i)]);
  if (!str) return obj.b ? Value::make_tuple(std::move(out)) : Value::make_list(std::move(out));
  std::string s;
  for (const Value& c : out) s += c.str();
  return Value::string(std::move(s));
}

}  // namespace anelm::jinja
