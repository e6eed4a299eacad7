// The values a template computes with, with Python's semantics where jinja2 inherits them:
// truthiness, str() and repr() of every type, int/float arithmetic, equality across types.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace anelm::jinja {

struct Value;
using List = std::vector<Value>;
// Insertion-ordered, as Python dicts. Keys are strings (JSON objects, kwargs) or other scalars.
using Dict = std::vector<std::pair<Value, Value>>;

class Context;
// A callable: a builtin (range, namespace, raise_exception...) or a macro. Positional arguments
// first, then keyword arguments.
using Args = std::vector<Value>;
using Kwargs = std::vector<std::pair<std::string, Value>>;
using Function = std::function<Value(Context&, Args&, Kwargs&)>;

// Containers nest at most this deep (construction throws Error beyond): printing, comparing and
// freeing them recurse.
constexpr int kMaxValueDepth = 512;

struct Value {
  enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };
  Kind kind = Kind::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::shared_ptr<const std::string> s;  // kString (shared: templates copy strings a lot)
  std::shared_ptr<List> list;           // kList (tuples too)
  std::shared_ptr<Dict> dict;           // kDict and kNamespace (a namespace is mutable by `set ns.x`)
  std::shared_ptr<const Function> fn;   // kCallable
  // kList: b is set for a tuple (and i is 1 for groupby's (grouper, list) tuples). kCallable: b is set for a macro. kUndefined: i is 1 when using
  // it raises SecurityError (an attribute the sandbox refuses) rather than UndefinedError. kUndefined: the undefined variable's name, or (b true) the whole UndefinedError message, as
  // jinja2's hint or "'dict object' has no attribute 'x'"; kCallable: its name; kList: empty for a
  // list, else the Python iterator type it stands for ("generator" from map/select/items...),
  // which tojson and length refuse as Python does; kNamespace: empty for namespace(), else the
  // class it stands for (the loop object).
  std::string name;
  uint16_t depth = 0;                   // kList/kDict: how deeply containers nest inside (bounded)
  bool holds_namespace = false;         // kList/kDict: a namespace is inside (cycles are refused)
  bool safe = false;                    // kString marked safe (no effect: autoescape is off, as transformers)

  Value() = default;
  static Value undefined(std::string what = {});
  static Value undefined_hint(std::string message);  // using it raises UndefinedError(message)
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  static Value make_list(List v = {});
  static Value make_tuple(List v = {});  // a kList with b set: prints as (a, b), never == a list
  static Value make_dict(Dict v = {});
  static Value make_namespace(Dict v = {});
  static Value callable(std::string name, Function fn);
  static Value from_json(const nlohmann::ordered_json& j);  // throws Error past kMaxValueDepth
  static Value from_json(const nlohmann::ordered_json& j, int level);

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool; }
  bool is_list() const { return kind == Kind::kList; }
  bool is_dict() const { return kind == Kind::kDict; }
  bool is_mapping() const { return kind == Kind::kDict || kind == Kind::kNamespace; }
  const std::string& str() const { return *s; }

  bool truthy() const;
  double as_double() const;
  // The entry for `key` in a dict or namespace, or nullptr.
  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
};

// Python's str() and repr() (jinja2 prints str(); containers print the repr of their items).
std::string to_str(const Value& v);
std::string to_repr(const Value& v);
// Python's float repr: the shortest text that reads back to the same double ("1.0", "1e-05").
std::string float_repr(double d);
// Python ==.
bool equals(const Value& a, const Value& b);
// The Python type name, for error messages ("dict", "str", "NoneType", ...).
const char* type_name(const Value& v);

// json.dumps(v, ensure_ascii=False, indent=indent, separators=..., sort_keys=...) as transformers' tojson.
struct JsonStyle {
  int indent = -1;  // < 0: one line
  std::string item_sep = ", ", key_sep = ": ";  // Python's defaults: "," with an indent
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonStyle& style, int depth_limit);

}  // namespace anelm::jinja
