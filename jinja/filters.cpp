// The jinja2 filters chat templates use, with jinja2 3.1's semantics (including which ones return
// generators), and transformers' tojson.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "jinja/builtins.h"
#include "jinja/filter_table.h"
#include "jinja/unicode.h"

namespace anelm::jinja {

int64_t int_arg(Context& ctx, const Value* v, int64_t dflt, const char* what) {
  if (!v || v->is_none()) return dflt;
  if (v->kind == Value::Kind::kBool) return v->b;
  if (v->kind != Value::Kind::kInt) fail(ctx, "TypeError", std::string(what) + " must be an integer, not " + type_name(*v));
  return v->i;
}

bool bool_arg(const Value* v, bool dflt) { return v ? v->truthy() : dflt; }

namespace {


Value generator(List items, const char* type = "generator") {
  Value v = Value::make_list(std::move(items));
  v.name = type;
  return v;
}

std::string lower_ascii(const std::string& s) { return py_lower(s); }
std::string upper_ascii(const std::string& s) { return py_upper(s); }

// jinja2's make_attrgetter: "a.b.0" looks up item a, then b, then index 0 (items before attributes).
Value attr_path(Context& ctx, const Value& obj, const Value& path) {
  if (!path.is_string()) return get_item(ctx, obj, path);
  Value cur = obj;
  const std::string& p = path.str();
  size_t k = 0;
  for (;;) {
    const size_t dot = p.find('.', k);
    const std::string part = p.substr(k, dot == std::string::npos ? std::string::npos : dot - k);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = get_item(ctx, cur, digits ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) return cur;
    k = dot + 1;
  }
}

// The sort key jinja2 uses: case-insensitive compares strings lowercased.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(lower_ascii(v.str()));
  return v;
}

std::vector<Value> seq(Context& ctx, const Value& v) { return iterate(ctx, v); }

Value f_length(Context& ctx, const Value& v, Args&, Kwargs&) {
  switch (v.kind) {
    case Value::Kind::kUndefined: return Value::integer(0);
    case Value::Kind::kString: return Value::integer(static_cast<int64_t>(code_points(v.str()).size()));
    case Value::Kind::kList:
      if (!v.name.empty()) fail(ctx, "TypeError", "object of type '" + v.name + "' has no len()");
      return Value::integer(static_cast<int64_t>(v.list->size()));
    case Value::Kind::kDict: return Value::integer(static_cast<int64_t>(v.dict->size()));
    default: fail(ctx, "TypeError", std::string("object of type '") + type_name(v) + "' has no len()");
  }
}

Value f_first(Context& ctx, const Value& v, Args&, Kwargs&) {
  std::vector<Value> items = seq(ctx, v);
  if (items.empty()) return Value::undefined_hint("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Context& ctx, const Value& v, Args&, Kwargs&) {
  if (v.is_list() && !v.name.empty()) fail(ctx, "TypeError", "'" + v.name + "' object is not reversible");
  std::vector<Value> items = seq(ctx, v);
  if (items.empty()) return Value::undefined_hint("No last item, sequence was empty.");
  return items.back();
}

Value f_join(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const Value* sep = arg(a, k, 0, "d");
  const Value* attribute = arg(a, k, 1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : seq(ctx, v)) {
    if (!first) out += sep ? to_str(*sep) : "";
    first = false;
    out += to_str(attribute && !attribute->is_none() ? attr_path(ctx, item, *attribute) : item);
    ctx.check_size(out.size());
  }
  return Value::string(std::move(out));
}

Value f_upper(Context&, const Value& v, Args&, Kwargs&) { return Value::string(upper_ascii(to_str(v))); }
Value f_lower(Context&, const Value& v, Args&, Kwargs&) { return Value::string(lower_ascii(to_str(v))); }
Value f_capitalize(Context&, const Value& v, Args&, Kwargs&) { return Value::string(capitalize(to_str(v))); }

// Words begin after runs of '-', whitespace and opening brackets; each piece is capitalised.
Value f_title(Context&, const Value& v, Args&, Kwargs&) {
  const std::string s = to_str(v);
  auto boundary = [](char c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || std::isspace(static_cast<unsigned char>(c)); };
  std::string out;
  size_t k = 0;
  while (k < s.size()) {
    size_t e = k;
    const bool sep = boundary(s[k]);
    while (e < s.size() && boundary(s[e]) == sep) ++e;
    out += sep ? s.substr(k, e - k) : capitalize(s.substr(k, e - k));
    k = e;
  }
  return Value::string(std::move(out));
}

Value f_trim(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  Args args;
  if (const Value* chars = arg(a, k, 0, "chars")) args.push_back(*chars);
  Kwargs none;
  return call_value(ctx, get_attribute(ctx, Value::string(to_str(v)), "strip"), args, none);
}

Value f_replace(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  Args args;
  for (size_t i = 0; i < 3; ++i)
    if (const Value* x = arg(a, k, i, i == 0 ? "old" : i == 1 ? "new" : "count")) args.push_back(*x);
  Kwargs none;
  return call_value(ctx, get_attribute(ctx, Value::string(to_str(v)), "replace"), args, none);
}

Value f_default(Context&, const Value& v, Args& a, Kwargs& k) {
  const Value* dflt = arg(a, k, 0, "default_value");
  const bool boolean = bool_arg(arg(a, k, 1, "boolean"), false);
  if (v.is_undefined() || (boolean && !v.truthy())) return dflt ? *dflt : Value::string("");
  return v;
}

// \uXXXX for every non-ASCII code point (with surrogate pairs), as json.dumps(ensure_ascii=True).
std::string ascii_only(const std::string& s) {
  std::string out;
  for (const std::string& cp : code_points(s)) {
    const unsigned char c = static_cast<unsigned char>(cp[0]);
    if (c < 0x80 || cp.size() < 2) {
      out += cp;
      continue;
    }
    uint32_t u = cp.size() == 2 ? c & 0x1f : cp.size() == 3 ? c & 0x0f : c & 0x07;
    for (size_t i = 1; i < cp.size(); ++i) u = (u << 6) | (static_cast<unsigned char>(cp[i]) & 0x3f);
    char buf[16];
    if (u >= 0x10000) {
      u -= 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xd800 + (u >> 10), 0xdc00 + (u & 0x3ff));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
    }
    out += buf;
  }
  return out;
}

// transformers: json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys).
Value f_tojson(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  JsonStyle style;
  const Value* indent = arg(a, k, 1, "indent");
  if (indent && !indent->is_none()) {
    style.indent = static_cast<int>(std::clamp<int64_t>(int_arg(ctx, indent, 0, "indent"), 0, 64));
    style.item_sep.resize(1);  // Python's default separators with an indent: ","
    style.item_sep[0] = ',';
  }
  if (const Value* sep = arg(a, k, 2, "separators"); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->list->size() != 2 || !(*sep->list)[0].is_string() || !(*sep->list)[1].is_string())
      fail(ctx, "ValueError", "tojson separators must be a pair of strings");
    style.item_sep = (*sep->list)[0].str();
    style.key_sep = (*sep->list)[1].str();
  }
  style.sort_keys = bool_arg(arg(a, k, 3, "sort_keys"), false);
  std::string out;
  try {
    out = to_json(v, style, ctx.limits.max_depth);
  } catch (const Error& e) {
    fail(ctx, "", e.what());
  }
  if (bool_arg(arg(a, k, 0, "ensure_ascii"), false)) out = ascii_only(out);
  ctx.check_size(out.size());
  return Value::string(std::move(out));
}

Value f_string(Context&, const Value& v, Args&, Kwargs&) {
  if (v.is_string()) return v;
  return Value::string(to_str(v));
}

// Python's int() of a str: optional sign, digits, underscores between digits, blanks around.
bool parse_int(const std::string& text, int64_t& out) {
  size_t a = 0, b = text.size();
  while (a < b && std::isspace(static_cast<unsigned char>(text[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(text[b - 1]))) --b;
  std::string digits;
  for (size_t i = a; i < b; ++i) {
    const char c = text[i];
    if (c == '_' && i > a && i + 1 < b && std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(text[i + 1])))
      continue;
    digits += c;
  }
  if (digits.empty()) return false;
  size_t used = 0;
  try {
    out = std::stoll(digits, &used, 10);
  } catch (...) {
    return false;
  }
  return used == digits.size() && (std::isdigit(static_cast<unsigned char>(digits[0])) || digits.size() > 1);
}

bool parse_float(const std::string& text, double& out) {
  size_t used = 0;
  try {
    out = std::stod(text, &used);
  } catch (...) {
    return false;
  }
  while (used < text.size() && std::isspace(static_cast<unsigned char>(text[used]))) ++used;
  return used == text.size();
}

Value f_int(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const Value* dflt = arg(a, k, 0, "default");
  const Value fallback = dflt ? *dflt : Value::integer(0);
  switch (v.kind) {
    case Value::Kind::kBool: return Value::integer(v.b);
    case Value::Kind::kInt: return v;
    case Value::Kind::kFloat:
      if (!std::isfinite(v.f) || std::fabs(v.f) > 9.2e18) return fallback;
      return Value::integer(static_cast<int64_t>(v.f));
    case Value::Kind::kString: {
      int64_t i = 0;
      if (parse_int(v.str(), i)) return Value::integer(i);
      double d = 0;
      if (parse_float(v.str(), d) && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value::integer(static_cast<int64_t>(d));
      return fallback;
    }
    default: (void)ctx; return fallback;
  }
}

Value f_float(Context&, const Value& v, Args& a, Kwargs& k) {
  const Value* dflt = arg(a, k, 0, "default");
  const Value fallback = dflt ? *dflt : Value::number(0.0);
  if (v.is_number()) return Value::number(v.as_double());
  double d = 0;
  if (v.is_string() && parse_float(v.str(), d)) return Value::number(d);
  return fallback;
}

Value f_list(Context& ctx, const Value& v, Args&, Kwargs&) { return Value::make_list(seq(ctx, v)); }

Value f_items(Context& ctx, const Value& v, Args&, Kwargs&) {
  if (v.is_undefined()) return generator({});
  if (!v.is_dict()) fail(ctx, "TypeError", "Can only get item pairs from a mapping.");
  List out;
  for (const auto& [key, x] : *v.dict) out.push_back(Value::make_tuple({key, x}));
  return generator(std::move(out));
}

void stable_sort_by(Context& ctx, std::vector<Value>& items, const std::function<Value(const Value&)>& key, bool reverse) {
  std::vector<std::pair<Value, Value>> keyed;
  keyed.reserve(items.size());
  for (Value& item : items) keyed.emplace_back(key(item), std::move(item));
  // Python's sorted(reverse=True) keeps equal items in their original order too.
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? less(ctx, y.first, x.first) : less(ctx, x.first, y.first);
  });
  items.clear();
  for (auto& kv : keyed) items.push_back(std::move(kv.second));
}

Value f_dictsort(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  if (!v.is_dict()) fail(ctx, "FilterArgumentError", "dictsort only works on mappings");
  const bool cs = bool_arg(arg(a, k, 0, "case_sensitive"), false);
  const Value* by = arg(a, k, 1, "by");
  const bool reverse = bool_arg(arg(a, k, 2, "reverse"), false);
  int pos = 0;
  if (by && by->is_string()) {
    if (by->str() == "value") pos = 1;
    else if (by->str() != "key") fail(ctx, "FilterArgumentError", "You can only sort by either \"key\" or \"value\"");
  }
  std::vector<Value> items;
  for (const auto& [key, x] : *v.dict) items.push_back(Value::make_tuple({key, x}));
  stable_sort_by(ctx, items, [&](const Value& kv) { return sort_key((*kv.list)[pos], cs); }, reverse);
  return Value::make_list(std::move(items));
}

Value f_sort(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const bool reverse = bool_arg(arg(a, k, 0, "reverse"), false);
  const bool cs = bool_arg(arg(a, k, 1, "case_sensitive"), false);
  const Value* attribute = arg(a, k, 2, "attribute");
  std::vector<Value> items = seq(ctx, v);
  std::vector<Value> parts;  // sort(attribute="age,name"): a key of several attributes
  if (attribute && attribute->is_string() && attribute->str().find(',') != std::string::npos) {
    const std::string& p = attribute->str();
    for (size_t k0 = 0;;) {
      const size_t comma = p.find(',', k0);
      parts.push_back(Value::string(p.substr(k0, comma == std::string::npos ? std::string::npos : comma - k0)));
      if (comma == std::string::npos) break;
      k0 = comma + 1;
    }
  }
  stable_sort_by(ctx, items, [&](const Value& x) {
    if (!parts.empty()) {
      List key;
      for (const Value& part : parts) key.push_back(sort_key(attr_path(ctx, x, part), cs));
      return Value::make_list(std::move(key));
    }
    return sort_key(attribute && !attribute->is_none() ? attr_path(ctx, x, *attribute) : x, cs);
  }, reverse);
  return Value::make_list(std::move(items));
}

Value f_unique(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const bool cs = bool_arg(arg(a, k, 0, "case_sensitive"), false);
  const Value* attribute = arg(a, k, 1, "attribute");
  List out, seen;
  for (const Value& x : seq(ctx, v)) {
    const Value key = sort_key(attribute && !attribute->is_none() ? attr_path(ctx, x, *attribute) : x, cs);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
    seen.push_back(key);
    out.push_back(x);
  }
  return generator(std::move(out));
}

// map(attribute=..., default=...) or map('filter', args...).
Value f_map(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  List out;
  if (!v.truthy()) return generator({});  // as jinja2: a falsy input maps to nothing
  const Value* attribute = nullptr;
  const Value* dflt = nullptr;
  for (const auto& [key, x] : k) {
    if (key == "attribute") attribute = &x;
    else if (key == "default") dflt = &x;
  }
  if (attribute) {
    for (const Value& x : seq(ctx, v)) {
      Value r = attr_path(ctx, x, *attribute);
      out.push_back(r.is_undefined() && dflt ? *dflt : r);
    }
    return generator(std::move(out));
  }
  if (a.empty() || !a[0].is_string()) fail(ctx, "FilterArgumentError", "map requires a filter argument");
  const std::string filter = a[0].str();
  for (const Value& x : seq(ctx, v)) {
    Args rest(a.begin() + 1, a.end());
    Kwargs kw = k;
    out.push_back(apply_filter(ctx, filter, x, rest, kw));
  }
  return generator(std::move(out));
}

// select/reject('test', args...) and selectattr/rejectattr('attr', 'test', args...).
Value select_items(Context& ctx, const Value& v, Args& a, bool by_attr, bool keep) {
  size_t at = 0;
  const Value* attribute = nullptr;
  if (by_attr) {
    if (a.empty()) fail(ctx, "TypeError", "selectattr/rejectattr need an attribute name");
    attribute = &a[at++];
  }
  std::string test;
  if (at < a.size()) test = to_str(a[at++]);
  List out;
  if (!v.truthy()) return generator({});  // jinja2 skips a falsy input (None, empty) without iterating it
  for (const Value& x : seq(ctx, v)) {
    const Value subject = attribute ? attr_path(ctx, x, *attribute) : x;
    Args rest(a.begin() + static_cast<std::ptrdiff_t>(at), a.end());
    const bool pass = test.empty() ? subject.truthy() : apply_test(ctx, test, subject, rest);
    if (pass == keep) out.push_back(x);
  }
  return generator(std::move(out));
}
Value f_select(Context& c, const Value& v, Args& a, Kwargs&) { return select_items(c, v, a, false, true); }
Value f_reject(Context& c, const Value& v, Args& a, Kwargs&) { return select_items(c, v, a, false, false); }
Value f_selectattr(Context& c, const Value& v, Args& a, Kwargs&) { return select_items(c, v, a, true, true); }
Value f_rejectattr(Context& c, const Value& v, Args& a, Kwargs&) { return select_items(c, v, a, true, false); }

Value f_safe(Context&, const Value& v, Args&, Kwargs&) {
  Value s = Value::string(to_str(v));
  s.safe = true;
  return s;
}

}  // namespace

namespace {

Value f_abs(Context& ctx, const Value& v, Args&, Kwargs&) {
  if (v.kind == Value::Kind::kInt) return Value::integer(v.i < 0 ? -v.i : v.i);
  if (v.kind == Value::Kind::kBool) return Value::integer(v.b);
  if (v.kind == Value::Kind::kFloat) return Value::number(std::fabs(v.f));
  fail(ctx, "TypeError", std::string("bad operand type for abs(): '") + type_name(v) + "'");
}

// round(value, precision=0, method='common'): Python's round (ties to even), or ceil / floor.
Value f_round(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  if (!v.is_number()) fail(ctx, "TypeError", std::string("type ") + type_name(v) + " doesn't define __round__ method");
  const int64_t precision = std::clamp<int64_t>(int_arg(ctx, arg(a, k, 0, "precision"), 0, "precision"), -20, 20);
  const Value* method = arg(a, k, 1, "method");
  const std::string m = method ? to_str(*method) : "common";
  if (m == "common" && v.kind != Value::Kind::kFloat && precision >= 0) return Value::integer(v.kind == Value::Kind::kBool ? v.b : v.i);
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * scale;
  double r;
  if (m == "common") r = std::nearbyint(x);  // the default rounding mode is ties-to-even, as Python
  else if (m == "ceil") r = std::ceil(x);
  else if (m == "floor") r = std::floor(x);
  else fail(ctx, "FilterArgumentError", "method must be common, ceil or floor");
  return Value::number(r / scale);
}

Value f_sum(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const Value* attribute = arg(a, k, 0, "attribute");
  const Value* start = arg(a, k, 1, "start");
  Value total = start ? *start : Value::integer(0);
  for (const Value& x : seq(ctx, v))
    total = binary_op(ctx, "+", total, attribute && !attribute->is_none() ? attr_path(ctx, x, *attribute) : x);
  return total;
}

Value min_max(Context& ctx, const Value& v, Args& a, Kwargs& k, bool want_max) {
  const bool cs = bool_arg(arg(a, k, 0, "case_sensitive"), false);
  const Value* attribute = arg(a, k, 1, "attribute");
  std::vector<Value> items = seq(ctx, v);
  if (items.empty()) return Value::undefined_hint("No aggregated item, sequence was empty.");
  size_t best = 0;
  auto key = [&](const Value& x) { return sort_key(attribute && !attribute->is_none() ? attr_path(ctx, x, *attribute) : x, cs); };
  for (size_t i = 1; i < items.size(); ++i) {
    const bool better = want_max ? less(ctx, key(items[best]), key(items[i])) : less(ctx, key(items[i]), key(items[best]));
    if (better) best = i;
  }
  return items[best];
}
Value f_min(Context& c, const Value& v, Args& a, Kwargs& k) { return min_max(c, v, a, k, false); }
Value f_max(Context& c, const Value& v, Args& a, Kwargs& k) { return min_max(c, v, a, k, true); }

Value f_batch(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const int64_t n = int_arg(ctx, arg(a, k, 0, "linecount"), 1, "linecount");
  if (n <= 0) fail(ctx, "ValueError", "batch size must be positive");
  const Value* fill = arg(a, k, 1, "fill_with");
  List out, cur;
  for (const Value& x : seq(ctx, v)) {
    cur.push_back(x);
    if (static_cast<int64_t>(cur.size()) == n) out.push_back(Value::make_list(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none())
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
    out.push_back(Value::make_list(std::move(cur)));
  }
  return generator(std::move(out));
}

Value f_reverse(Context& ctx, const Value& v, Args&, Kwargs&) {
  if (v.is_string()) {
    std::vector<std::string> cps = code_points(v.str());
    std::string out;
    for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
    return Value::string(std::move(out));
  }
  std::vector<Value> items = seq(ctx, v);
  std::reverse(items.begin(), items.end());
  if (v.is_dict()) return generator(std::move(items), "dict_reversekeyiterator");
  return generator(std::move(items), v.is_list() && v.name.empty() ? "list_reverseiterator" : "list");
}

// groupby(attribute, default=None, case_sensitive=False): (grouper, items) tuples sorted by the
// key; the grouper is the first item's own value when case is ignored.
Value f_groupby(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const Value* attribute = arg(a, k, 0, "attribute");
  if (!attribute) fail(ctx, "TypeError", "do_groupby() missing 1 required positional argument: 'attribute'");
  const Value* dflt = arg(a, k, 1, "default");
  const bool cs = bool_arg(arg(a, k, 2, "case_sensitive"), false);
  auto raw = [&](const Value& x) {
    Value r = attr_path(ctx, x, *attribute);
    return r.is_undefined() && dflt && !dflt->is_none() ? *dflt : r;
  };
  std::vector<Value> items = seq(ctx, v);
  stable_sort_by(ctx, items, [&](const Value& x) { return sort_key(raw(x), cs); }, false);
  List out;
  Value current_key;
  for (const Value& x : items) {
    const Value key = sort_key(raw(x), cs);
    if (out.empty() || !equals(key, current_key)) {
      Value group = Value::make_tuple({raw(x), Value::make_list()});
      group.i = 1;  // a _GroupTuple: .grouper and .list
      out.push_back(std::move(group));
      current_key = key;
    }
    (*out.back().list)[1].list->push_back(x);
  }
  return Value::make_list(std::move(out));
}

Value f_attr(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const Value* name = arg(a, k, 0, "name");
  if (!name) fail(ctx, "TypeError", "attr needs a name");
  // Python's getattr only: a dict's keys are not its attributes.
  const std::string n = to_str(*name);
  if (v.is_dict() && n != "items" && n != "keys" && n != "values" && n != "get" && n != "copy") {
    const Value attribute = get_attribute(ctx, Value::make_dict(), n);
    return attribute.is_undefined() ? undefined_attribute(v, n) : attribute;
  }
  return get_attribute(ctx, v, n);
}

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> table = [] {
    std::map<std::string, FilterFn> t = {
        {"abs", f_abs},           {"attr", f_attr},       {"batch", f_batch},     {"capitalize", f_capitalize},
        {"count", f_length},      {"d", f_default},       {"default", f_default}, {"dictsort", f_dictsort},
        {"first", f_first},       {"float", f_float},     {"groupby", f_groupby}, {"int", f_int},
        {"items", f_items},       {"join", f_join},       {"last", f_last},       {"length", f_length},
        {"list", f_list},         {"lower", f_lower},     {"map", f_map},         {"max", f_max},
        {"min", f_min},           {"reject", f_reject},   {"rejectattr", f_rejectattr},
        {"replace", f_replace},   {"reverse", f_reverse}, {"round", f_round},     {"safe", f_safe},
        {"select", f_select},     {"selectattr", f_selectattr}, {"sort", f_sort}, {"string", f_string},
        {"sum", f_sum},           {"title", f_title},     {"tojson", f_tojson},   {"trim", f_trim},
        {"unique", f_unique},     {"upper", f_upper},
    };
    add_text_filters(t);
    return t;
  }();
  return table;
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) > 0; }

Value apply_filter(Context& ctx, const std::string& name, const Value& input, Args& args, Kwargs& kwargs) {
  ctx.step();
  const auto it = filters().find(name);
  if (it == filters().end()) fail(ctx, "TemplateRuntimeError", "No filter named '" + name + "'.");
  return it->second(ctx, input, args, kwargs);
}

}  // namespace anelm::jinja
