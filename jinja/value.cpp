// Value: construction, Python truthiness / str / repr / ==, and json.dumps.
#include "jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "jinja/jinja.h"

namespace anelm::jinja {

Value Value::undefined(std::string what) {
  Value v;
  v.name = std::move(what);
  return v;
}
Value Value::undefined_hint(std::string message) {
  Value v = undefined(std::move(message));
  v.b = true;
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::kNone;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.kind = Kind::kBool;
  v.b = x;
  return v;
}
Value Value::integer(int64_t x) {
  Value v;
  v.kind = Kind::kInt;
  v.i = x;
  return v;
}
Value Value::number(double x) {
  Value v;
  v.kind = Kind::kFloat;
  v.f = x;
  return v;
}
Value Value::string(std::string x) {
  Value v;
  v.kind = Kind::kString;
  v.s = std::make_shared<const std::string>(std::move(x));
  return v;
}
namespace {

uint16_t nested_depth(const Value& item) {
  return item.kind == Value::Kind::kList || item.kind == Value::Kind::kDict || item.kind == Value::Kind::kNamespace
             ? static_cast<uint16_t>(item.depth + 1) : 0;
}

void check_depth(int depth) {
  if (depth > kMaxValueDepth)
    throw Error("LimitError: a value nests containers deeper than " + std::to_string(kMaxValueDepth) + " levels");
}

}  // namespace

Value Value::make_list(List x) {
  Value v;
  int d = 0;
  for (const Value& item : x) {
    d = std::max<int>(d, nested_depth(item));
    v.holds_namespace = v.holds_namespace || item.kind == Kind::kNamespace || item.holds_namespace;
  }
  check_depth(d);
  v.depth = static_cast<uint16_t>(d);
  v.kind = Kind::kList;
  v.list = std::make_shared<List>(std::move(x));
  return v;
}
Value Value::make_tuple(List x) {
  Value v = make_list(std::move(x));
  v.b = true;
  return v;
}
Value Value::make_dict(Dict x) {
  Value v;
  int d = 0;
  for (const auto& kv : x) {
    d = std::max<int>(d, nested_depth(kv.second));
    v.holds_namespace = v.holds_namespace || kv.second.kind == Kind::kNamespace || kv.second.holds_namespace;
  }
  check_depth(d);
  v.depth = static_cast<uint16_t>(d);
  v.kind = Kind::kDict;
  v.dict = std::make_shared<Dict>(std::move(x));
  return v;
}
Value Value::make_namespace(Dict x) {
  Value v = make_dict(std::move(x));
  v.kind = Kind::kNamespace;
  return v;
}
Value Value::callable(std::string name, Function fn) {
  Value v;
  v.kind = Kind::kCallable;
  v.name = std::move(name);
  v.fn = std::make_shared<const Function>(std::move(fn));
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) { return from_json(j, 0); }

Value Value::from_json(const nlohmann::ordered_json& j, int level) {
  check_depth(level);
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      return u > static_cast<uint64_t>(INT64_MAX) ? number(static_cast<double>(u)) : integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& x : j) l.push_back(from_json(x, level + 1));
      return make_list(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      d.reserve(j.size());
      for (const auto& [k, x] : j.items()) d.emplace_back(string(k), from_json(x, level + 1));
      return make_dict(std::move(d));
    }
    default: return undefined();
  }
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b;
    case Kind::kInt: return i != 0;
    case Kind::kFloat: return f != 0;
    case Kind::kString: return !s->empty();
    case Kind::kList: return !list->empty();
    case Kind::kDict: return !dict->empty();
    case Kind::kNamespace:
    case Kind::kCallable: return true;
  }
  return false;
}

double Value::as_double() const {
  if (kind == Kind::kFloat) return f;
  if (kind == Kind::kInt) return static_cast<double>(i);
  if (kind == Kind::kBool) return b ? 1 : 0;
  return 0;
}

const Value* Value::find(const Value& key) const {
  if (!is_mapping()) return nullptr;
  for (const auto& [k, v] : *dict)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* Value::find(const std::string& key) const {
  if (!is_mapping()) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k.kind == Kind::kString && *k.s == key) return &v;
  return nullptr;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[40];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf: d.ddde[+-]XX with `prec` significant digits. Python prints positional for exponents in
  // [-4, 16), scientific otherwise, always with a ".0" or a fraction in positional form.
  std::string mant(buf, std::strchr(buf, 'e'));
  const int exp = std::atoi(std::strchr(buf, 'e') + 1);
  const bool neg = mant[0] == '-';
  std::string digits;
  for (char c : mant)
    if (c >= '0' && c <= '9') digits += c;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exp + 1) {
      out += digits + std::string(static_cast<size_t>(exp + 1 - static_cast<int>(digits.size())), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exp + 1)) + "." + digits.substr(static_cast<size_t>(exp + 1));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char e[16];  // exponents of a double have at most 3 digits; room for any int
  std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return out + e;
}

namespace {

std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + q;
}

}  // namespace

namespace {

// A namespace's attributes as the dict they print as.
Value make_dict_view(const Value& ns) {
  Value d = ns;
  d.kind = Value::Kind::kDict;
  return d;
}

}  // namespace

std::string to_repr(const Value& v) {
  // A namespace can be made to contain itself (set ns.x = [ns]): printing is bounded.
  thread_local int depth = 0;
  struct Guard {
    Guard() {
      if (++depth > 2 * kMaxValueDepth) {
        depth = 0;
        throw Error("LimitError: a value nests containers deeper than " + std::to_string(kMaxValueDepth) + " levels");
      }
    }
    ~Guard() { depth = depth > 0 ? depth - 1 : 0; }
  } guard;
  switch (v.kind) {
    case Value::Kind::kString: return string_repr(*v.s);
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kList: {
      std::string out = v.b ? "(" : "[";
      for (size_t k = 0; k < v.list->size(); ++k) out += (k ? ", " : "") + to_repr((*v.list)[k]);
      if (v.b) return out + (v.list->size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Value::Kind::kDict: {
      std::string out = "{";
      for (size_t k = 0; k < v.dict->size(); ++k)
        out += (k ? ", " : "") + to_repr((*v.dict)[k].first) + ": " + to_repr((*v.dict)[k].second);
      return out + "}";
    }
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.b ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.i);
    case Value::Kind::kFloat: return float_repr(v.f);
    case Value::Kind::kString: return *v.s;
    case Value::Kind::kNamespace: {
      if (v.name.empty()) return "<Namespace " + to_repr(make_dict_view(v)) + ">";
      const Value* index = v.find("index");
      const Value* length = v.find("length");
      return "<LoopContext " + (index ? to_str(*index) : "") + "/" + (length ? to_str(*length) : "") + ">";
    }
    case Value::Kind::kCallable: return v.b ? "<Macro " + to_repr(Value::string(v.name)) + ">" : "<function " + v.name + ">";
    case Value::Kind::kList:
      if (!v.name.empty()) return "<" + v.name + " object>";
      return to_repr(v);
    default: return to_repr(v);
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat) {
      const int64_t x = a.kind == Value::Kind::kBool ? a.b : a.i, y = b.kind == Value::Kind::kBool ? b.b : b.i;
      return x == y;
    }
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return *a.s == *b.s;
    case Value::Kind::kList:
      if (a.list->size() != b.list->size() || a.b != b.b) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equals((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Value::Kind::kDict:
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [k, x] : *a.dict) {
        const Value* y = b.find(k);
        if (!y || !equals(x, *y)) return false;
      }
      return true;
    default: return a.dict == b.dict && a.fn == b.fn;
  }
}

const char* type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kNone: return "NoneType";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "str";
    case Value::Kind::kList: return !v.name.empty() ? v.name.c_str() : v.b ? "tuple" : "list";
    case Value::Kind::kDict: return "dict";
    case Value::Kind::kNamespace: return "Namespace";
    case Value::Kind::kCallable: return "function";
  }
  return "object";
}

namespace {

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_value(const Value& v, const JsonStyle& st, int level, int depth_limit, std::string& out) {
  if (level > depth_limit) throw Error("ValueError: tojson: value nested deeper than " + std::to_string(depth_limit));
  auto newline = [&](int lvl) {
    if (st.indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(st.indent * lvl), ' ');
  };
  switch (v.kind) {
    case Value::Kind::kNone: out += "null"; return;
    case Value::Kind::kBool: out += v.b ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.i); return;
    case Value::Kind::kFloat:
      out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f > 0 ? "Infinity" : "-Infinity") : float_repr(v.f);
      return;
    case Value::Kind::kString: json_string(*v.s, out); return;
    case Value::Kind::kList: {
      if (!v.name.empty()) throw Error("TypeError: Object of type " + v.name + " is not JSON serializable");
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += st.item_sep;
        newline(level + 1);
        json_value((*v.list)[k], st, level + 1, depth_limit, out);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: {
      if (v.dict->empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : *v.dict) items.push_back(&kv);
      if (st.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return to_str(a->first) < to_str(b->first); });
      out += '{';
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += st.item_sep;
        newline(level + 1);
        const Value& key = items[k]->first;
        if (key.is_string()) json_string(*key.s, out);
        else if (key.kind == Value::Kind::kInt || key.kind == Value::Kind::kFloat) json_string(to_str(key), out);
        else if (key.kind == Value::Kind::kBool) json_string(key.b ? "true" : "false", out);
        else if (key.is_none()) json_string("null", out);
        else throw Error("TypeError: keys must be str, int, float, bool or None, not " + std::string(type_name(key)));
        out += st.key_sep;
        json_value(items[k]->second, st, level + 1, depth_limit, out);
      }
      newline(level);
      out += '}';
      return;
    }
    case Value::Kind::kUndefined:
      throw Error("TypeError: Object of type Undefined is not JSON serializable");
    default:
      throw Error(std::string("TypeError: Object of type ") + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style, int depth_limit) {
  std::string out;
  json_value(v, style, 0, depth_limit, out);
  return out;
}

}  // namespace anelm::jinja
