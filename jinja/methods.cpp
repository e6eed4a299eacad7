// Attribute access as the immutable sandbox allows it: str and dict methods (bound to the object),
// dict keys and namespace attributes; methods that mutate a list or dict raise SecurityError.
#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/unicode.h"

namespace anelm::jinja {

namespace {


bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  auto drop = [&](char c) {
    if (!chars || chars->is_none()) return is_ws(c);
    return chars->str().find(c) != std::string::npos;
  };
  size_t a = 0, b = s.size();
  if (left)
    while (a < b && drop(s[a])) ++a;
  if (right)
    while (b > a && drop(s[b - 1])) --b;
  return s.substr(a, b - a);
}

Value split(Context& ctx, const std::string& s, const Value* sep, const Value* maxsplit) {
  int64_t limit = maxsplit && !maxsplit->is_none() ? maxsplit->i : -1;
  List out;
  if (!sep || sep->is_none()) {  // runs of whitespace, no empty strings
    size_t k = 0;
    while (k < s.size()) {
      while (k < s.size() && is_ws(s[k])) ++k;
      if (k >= s.size()) break;
      if (limit == 0) {
        size_t e = s.size();
        while (e > k && is_ws(s[e - 1])) --e;
        out.push_back(Value::string(s.substr(k, e - k)));
        break;
      }
      size_t e = k;
      while (e < s.size() && !is_ws(s[e])) ++e;
      out.push_back(Value::string(s.substr(k, e - k)));
      k = e;
      if (limit > 0) --limit;
    }
    return Value::make_list(std::move(out));
  }
  const std::string& d = sep->str();
  if (d.empty()) fail(ctx, "ValueError", "empty separator");
  size_t k = 0;
  for (;;) {
    const size_t at = limit == 0 ? std::string::npos : s.find(d, k);
    if (at == std::string::npos) {
      out.push_back(Value::string(s.substr(k)));
      break;
    }
    out.push_back(Value::string(s.substr(k, at - k)));
    k = at + d.size();
    if (limit > 0) --limit;
  }
  return Value::make_list(std::move(out));
}

bool affix(const std::string& s, const Value& what, bool prefix) {
  auto one = [&](const std::string& a) {
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (what.is_list()) return std::any_of(what.list->begin(), what.list->end(), [&](const Value& v) { return v.is_string() && one(v.str()); });
  return what.is_string() && one(what.str());
}

// str.format with {} / {0} / {name} fields (no format specs) and {{ }} escapes.
std::string format(Context& ctx, const std::string& f, const Args& args, const Kwargs& kwargs) {
  std::string out;
  size_t next_auto = 0;
  for (size_t k = 0; k < f.size(); ++k) {
    if (f[k] == '{' && k + 1 < f.size() && f[k + 1] == '{') {
      out += '{';
      ++k;
    } else if (f[k] == '}' && k + 1 < f.size() && f[k + 1] == '}') {
      out += '}';
      ++k;
    } else if (f[k] == '{') {
      const size_t e = f.find('}', k);
      if (e == std::string::npos) fail(ctx, "ValueError", "Single '{' encountered in format string");
      const std::string field = f.substr(k + 1, e - k - 1);
      if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
        fail(ctx, "ValueError", "format specs are not supported in str.format: '{" + field + "}'");
      const Value* v = nullptr;
      if (field.empty()) {
        if (next_auto < args.size()) v = &args[next_auto++];
      } else if (std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        const size_t i = std::stoul(field);
        if (i < args.size()) v = &args[i];
      } else {
        for (const auto& [name, x] : kwargs)
          if (name == field) v = &x;
      }
      if (!v) fail(ctx, "IndexError", "Replacement index " + field + " out of range for positional args tuple");
      out += to_str(*v);
      k = e;
    } else {
      out += f[k];
    }
  }
  return out;
}


Value str_method(Context& ctx, const Value& self, const std::string& name, Args& a, Kwargs& k) {
  const std::string& s = self.str();
  if (name == "strip") return Value::string(strip(s, arg(a, k, 0, "chars"), true, true));
  if (name == "lstrip") return Value::string(strip(s, arg(a, k, 0, "chars"), true, false));
  if (name == "rstrip") return Value::string(strip(s, arg(a, k, 0, "chars"), false, true));
  if (name == "split") return split(ctx, s, arg(a, k, 0, "sep"), arg(a, k, 1, "maxsplit"));
  if (name == "startswith" || name == "endswith") {
    const Value* w = arg(a, k, 0, "prefix");
    if (!w) fail(ctx, "TypeError", name + "() takes at least 1 argument (0 given)");
    return Value::boolean(affix(s, *w, name == "startswith"));
  }
  if (name == "upper") return Value::string(py_upper(s));
  if (name == "lower") return Value::string(py_lower(s));
  if (name == "capitalize") return Value::string(py_capitalize(s));
  if (name == "title") return Value::string(py_title(s));
  if (name == "replace") {
    const Value* from = arg(a, k, 0, "old");
    const Value* to = arg(a, k, 1, "new");
    if (!from || !to || !from->is_string() || !to->is_string()) fail(ctx, "TypeError", "replace() takes two strings");
    const Value* count = arg(a, k, 2, "count");
    int64_t left = count ? count->i : -1;
    std::string out;
    size_t pos = 0;
    if (from->str().empty()) return Value::string(s);
    for (size_t at; left != 0 && (at = s.find(from->str(), pos)) != std::string::npos; --left) {
      out += s.substr(pos, at - pos) + to->str();
      pos = at + from->str().size();
    }
    out += s.substr(pos);
    ctx.check_size(out.size());
    return Value::string(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "count") {
    const Value* sub = arg(a, k, 0, "sub");
    if (!sub || !sub->is_string()) fail(ctx, "TypeError", name + "() needs a string");
    if (name == "count") {
      if (sub->str().empty()) return Value::integer(static_cast<int64_t>(s.size()) + 1);
      int64_t n = 0;
      for (size_t at = s.find(sub->str()); at != std::string::npos; at = s.find(sub->str(), at + sub->str().size())) ++n;
      return Value::integer(n);
    }
    const size_t at = name == "rfind" ? s.rfind(sub->str()) : s.find(sub->str());
    if (at == std::string::npos && name == "index") fail(ctx, "ValueError", "substring not found");
    if (at == std::string::npos) return Value::integer(-1);
    int64_t index = 0;  // Python counts code points, not bytes
    for (size_t i = 0; i < at; ++i) index += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    return Value::integer(index);
  }
  if (name == "join") {
    const Value* items = arg(a, k, 0, "iterable");
    if (!items) fail(ctx, "TypeError", "join() takes exactly one argument");
    std::string out;
    size_t index = 0;
    for (const Value& v : iterate(ctx, *items)) {
      if (!v.is_string())
        fail(ctx, "TypeError", "sequence item " + std::to_string(index) + ": expected str instance, " + type_name(v) + " found");
      out += (index++ ? s : "") + v.str();
      ctx.check_size(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "format") return Value::string(format(ctx, s, a, k));
  if (name == "splitlines") {
    List out;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\n' || s[i] == '\r') {
        out.push_back(Value::string(s.substr(start, i - start)));
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        start = i + 1;
      }
    }
    if (start < s.size()) out.push_back(Value::string(s.substr(start)));
    return Value::make_list(std::move(out));
  }
  auto all = [&](auto pred) {
    return Value::boolean(!s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)); }));
  };
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return all([](unsigned char c) { return std::isdigit(c) != 0; });
  if (name == "isalpha") return all([](unsigned char c) { return std::isalpha(c) != 0; });
  if (name == "isalnum") return all([](unsigned char c) { return std::isalnum(c) != 0; });
  if (name == "isspace") return all([](unsigned char c) { return std::isspace(c) != 0; });
  if (name == "islower") return Value::boolean(py_islower(s));
  if (name == "isupper") return Value::boolean(py_isupper(s));
  fail(ctx, "UndefinedError", "'str object' has no attribute '" + name + "'");
}

Value dict_method(Context& ctx, const Value& self, const std::string& name, Args& a, Kwargs& k) {
  if (name == "items") {
    List out;
    for (const auto& [key, v] : *self.dict) out.push_back(Value::make_tuple({key, v}));
    return Value::make_list(std::move(out));
  }
  if (name == "keys" || name == "values") {
    List out;
    for (const auto& [key, v] : *self.dict) out.push_back(name == "keys" ? key : v);
    return Value::make_list(std::move(out));
  }
  if (name == "get") {
    const Value* key = arg(a, k, 0, "key");
    if (!key) fail(ctx, "TypeError", "get expected at least 1 argument, got 0");
    if (const Value* v = self.find(*key)) return *v;
    const Value* dflt = arg(a, k, 1, "default");
    return dflt ? *dflt : Value::none();
  }
  if (name == "copy") return Value::make_dict(*self.dict);
  fail(ctx, "UndefinedError", "'dict object' has no attribute '" + name + "'");
}

Value list_method(Context& ctx, const Value& self, const std::string& name, Args& a, Kwargs& k) {
  if (name == "copy") return Value::make_list(*self.list);
  const Value* x = arg(a, k, 0, "value");
  if (!x) fail(ctx, "TypeError", name + "() takes exactly one argument (0 given)");
  int64_t n = 0;
  for (size_t i = 0; i < self.list->size(); ++i) {
    if (!equals((*self.list)[i], *x)) continue;
    if (name == "index") return Value::integer(static_cast<int64_t>(i));
    ++n;
  }
  if (name == "index") fail(ctx, "ValueError", to_repr(*x) + " is not in " + type_name(self));
  return Value::integer(n);
}

const char* const kStrMethods[] = {"strip", "lstrip", "rstrip", "split", "startswith", "endswith", "upper", "lower",
                                   "capitalize", "title", "replace", "find", "rfind", "index", "count", "join",
                                   "format", "splitlines", "isdigit", "isnumeric", "isdecimal", "isalpha", "isalnum",
                                   "isspace", "islower", "isupper"};
const char* const kDictMethods[] = {"items", "keys", "values", "get", "copy"};
// What ImmutableSandboxedEnvironment refuses (MutableSequence and MutableMapping methods).
const char* const kListMutators[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
const char* const kDictMutators[] = {"clear", "pop", "popitem", "setdefault", "update"};

template <size_t N>
bool listed(const char* const (&names)[N], const std::string& name) {
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return name == n; });
}

}  // namespace

const Value* arg(const Args& args, const Kwargs& kwargs, size_t index, const char* name) {
  if (index < args.size()) return &args[index];
  for (const auto& [k, v] : kwargs)
    if (k == name) return &v;
  return nullptr;
}

std::string capitalize(const std::string& s) { return py_capitalize(s); }

// jinja2's sandbox: an attribute Python has but the sandbox refuses (a dunder, a mutating method)
// is an Undefined that raises SecurityError when used; printed or tested, it is just undefined.
Value unsafe_attribute(const Value& obj, const std::string& name) {
  Value u = Value::undefined_hint("access to attribute " + to_repr(Value::string(name)) + " of " +
                                  to_repr(Value::string(type_name(obj))) + " object is unsafe.");
  u.i = 1;
  return u;
}

Value get_attribute(Context& ctx, const Value& obj, const std::string& name) {
  (void)ctx;
  if (name.size() > 4 && name.rfind("__", 0) == 0 && name.compare(name.size() - 2, 2, "__") == 0 && !obj.is_undefined())
    return unsafe_attribute(obj, name);
  auto method = [&](Value (*fn)(Context&, const Value&, const std::string&, Args&, Kwargs&)) {
    return Value::callable(name, [obj, name, fn](Context& c, Args& a, Kwargs& k) { return fn(c, obj, name, a, k); });
  };
  switch (obj.kind) {
    case Value::Kind::kString:
      if (listed(kStrMethods, name)) return method(str_method);
      return undefined_attribute(obj, name);
    case Value::Kind::kDict:
      // As Python's getattr: a dict's methods win over its keys (tool.items is the method).
      if (listed(kDictMethods, name)) return method(dict_method);
      if (listed(kDictMutators, name)) return unsafe_attribute(obj, name);
      if (const Value* v = obj.find(name)) return *v;
      return undefined_attribute(obj, name);
    case Value::Kind::kNamespace:
      if (const Value* v = obj.find(name)) return *v;
      return undefined_attribute(obj, name);
    case Value::Kind::kList:
      if (!obj.name.empty()) return undefined_attribute(obj, name);  // an iterator has no methods
      if (obj.b && obj.i == 1 && (name == "grouper" || name == "list")) return (*obj.list)[name == "grouper" ? 0 : 1];
      if (name == "count" || name == "index" || (name == "copy" && !obj.b)) return method(list_method);
      if (!obj.b && listed(kListMutators, name)) return unsafe_attribute(obj, name);
      return undefined_attribute(obj, name);
    default: return undefined_attribute(obj, name);
  }
}

Value call_value(Context& ctx, const Value& callee, Args& args, Kwargs& kwargs) {
  if (callee.kind != Value::Kind::kCallable) fail(ctx, "TypeError", std::string("'") + type_name(callee) + "' object is not callable");
  return (*callee.fn)(ctx, args, kwargs);
}

}  // namespace anelm::jinja
