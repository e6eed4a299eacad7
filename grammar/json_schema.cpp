// JSON Schema -> GBNF. Each keyword either constrains the grammar or is unsupported; an unsupported
// keyword is a SchemaError naming it and its path (strict) or is dropped with a note in
// SchemaConverter::relaxed() (non-strict), so a schema never loses a constraint silently. Work is
// linear in the schema (every subschema is visited once; $ref targets once per reference string).
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "grammar/json_int_range.h"
#include "grammar/json_number_range.h"
#include "grammar/json_object_members.h"
#include "grammar/json_pattern.h"
#include "grammar/json_primitives.h"

namespace anelm::grammar {
namespace {

using json = nlohmann::ordered_json;

const std::unordered_set<std::string>& handled_keywords() {
  static const std::unordered_set<std::string> k = {
      "type",      "properties", "required",         "additionalProperties", "enum",          "const",
      "items",     "prefixItems", "additionalItems", "minItems",             "maxItems",      "minLength",
      "maxLength", "minimum",    "maximum",          "exclusiveMinimum",     "exclusiveMaximum", "anyOf",
      "oneOf",     "allOf",      "$ref",             "format",               "pattern",       "$defs",
      "definitions", "minProperties", "maxProperties", "uniqueItems",        "nullable"};
  return k;
}

// Annotations: they describe, they do not constrain (JSON Schema 2020-12 meta-data and content
// vocabularies, plus OpenAI's `strict` and OpenAPI's `discriminator`/`example`).
const std::unordered_set<std::string>& annotation_keywords() {
  static const std::unordered_set<std::string> k = {
      "description", "title",     "default",          "examples",        "example",     "$schema",
      "$id",         "$anchor",   "strict",           "$comment",        "deprecated",  "readOnly",
      "writeOnly",   "contentEncoding", "contentMediaType", "contentSchema", "$vocabulary", "discriminator",
      "$dynamicAnchor"};
  return k;
}

bool is_annotation(const std::string& key) {
  return annotation_keywords().count(key) != 0 || key.rfind("x-", 0) == 0;
}

const std::set<std::string>& known_formats() {
  static const std::set<std::string> k = {"date", "time", "date-time", "uuid", "email", "uri"};
  return k;
}

std::string pointer_escape(const std::string& key) {
  std::string s;
  for (char c : key) s += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return s;
}

std::string shown(const std::string& path) { return path.empty() ? "/" : path; }

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string s = "(";
  for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : " ") + alts[i];
  return s + " )";
}

// Rule-name hints stay short: the name only helps a human reading the grammar.
std::string child_hint(const std::string& hint, const std::string& part) {
  std::string h = hint + "-" + part;
  return h.size() > 48 ? h.substr(h.size() - 48) : h;
}

const json* member(const json& s, const char* key) {
  if (!s.is_object()) return nullptr;
  auto it = s.find(key);
  return it == s.end() ? nullptr : &*it;
}

// Output type sets, for telling oneOf branches apart.
enum : uint8_t { kNull = 1, kBool = 2, kInt = 4, kFrac = 8, kString = 16, kArray = 32, kObject = 64, kAny = 127 };

uint8_t type_bit(const std::string& t) {
  if (t == "null") return kNull;
  if (t == "boolean") return kBool;
  if (t == "integer") return kInt;
  if (t == "number") return kInt | kFrac;
  if (t == "string") return kString;
  if (t == "array") return kArray;
  if (t == "object") return kObject;
  return 0;
}

uint8_t value_bit(const json& v) {
  if (v.is_null()) return kNull;
  if (v.is_boolean()) return kBool;
  if (v.is_number_integer()) return kInt;
  if (v.is_number()) return std::floor(v.get<double>()) == v.get<double>() ? kInt : kFrac;
  if (v.is_string()) return kString;
  if (v.is_array()) return kArray;
  return kObject;
}

class SchemaWalker {
 public:
  SchemaWalker(SchemaConverter& out, const json& root, const std::string& root_rule, const SchemaOptions& opt)
      : out_(out), root_(root), opt_(opt) {
    refs_["#"] = root_rule;
  }

  // A GBNF expression matching the JSON texts valid under `s`.
  std::string visit(const json& s, const std::string& path, const std::string& hint, int depth) {
    tick();
    if (depth > kMaxSchemaDepth) {
      throw SchemaError(prefixed("schema nested deeper than the limit of " + std::to_string(kMaxSchemaDepth) +
                                 " levels at " + shown(path)));
    }
    if (s.is_boolean()) {
      if (!s.get<bool>()) relax("schema 'false' accepts nothing", path);
      return any_value();
    }
    if (!s.is_object()) {
      relax("a schema must be an object or a boolean", path);
      return any_value();
    }
    for (const auto& [key, value] : s.items()) {
      if (!handled_keywords().count(key) && !is_annotation(key)) relax("unsupported JSON Schema keyword '" + key + "'", path);
    }
    if (member(s, "$ref")) return ref(s, path, hint, depth);
    if (member(s, "allOf")) return all_of(s, path, hint, depth);
    if (member(s, "anyOf") || member(s, "oneOf")) return any_of(s, path, hint, depth);
    if (const json* c = member(s, "const")) return literal(*c);
    if (const json* e = member(s, "enum")) {
      if (!e->is_array() || e->empty()) {
        relax("'enum' must be a non-empty array", path + "/enum");
      } else {
        std::vector<std::string> alts;
        alts.reserve(e->size());
        for (const auto& v : *e) alts.push_back(literal(v)), tick();
        return alternatives(alts);
      }
    }
    return typed(s, path, hint, depth);
  }

 private:
  void tick(size_t n = 1) {
    if (out_.budget()) out_.budget()->tick(n);
  }
  std::string prefixed(const std::string& msg) const { return opt_.where.empty() ? msg : opt_.where + ": " + msg; }

  // Strict: the request is refused. Otherwise the keyword is dropped and the note kept.
  void relax(const std::string& what, const std::string& path) {
    std::string msg = prefixed(what + " at " + shown(path));
    if (opt_.strict) throw SchemaError(msg);
    out_.note_relaxed(std::move(msg));
  }

  std::string any_value() { return need_primitive(out_, "json-value"); }
  std::string literal(const json& v) { return gbnf_literal(v.dump()); }

  std::string define(const std::string& hint, const std::string& body) {
    std::string name = out_.fresh_name(hint);
    out_.add_rule(name, body);
    return name;
  }

  // ---- references ----------------------------------------------------------------------------

  // The target of a local reference, or null (relaxed) when it is not one or does not resolve.
  // "#/$defs/x" and "#/definitions/x" go through an index, so many references cost one lookup each.
  const json* resolve(const std::string& r, const std::string& path) {
    if (r == "#") return &root_;
    if (r.rfind("#/", 0) != 0) {
      relax("unsupported '$ref' '" + r + "' (only local '#/...' references)", path + "/$ref");
      return nullptr;
    }
    for (const char* dir : {"$defs", "definitions"}) {
      const std::string head = std::string("#/") + dir + "/";
      if (r.rfind(head, 0) != 0 || r.find_first_of("/~", head.size()) != std::string::npos) continue;
      auto& index = defs_index_[dir];
      if (!indexed_.count(dir)) {
        indexed_.insert(dir);
        if (const json* d = member(root_, dir); d && d->is_object())
          for (const auto& [k, v] : d->items()) index.emplace(k, &v);
      }
      if (auto it = index.find(r.substr(head.size())); it != index.end()) return it->second;
    }
    try {
      return &root_.at(json::json_pointer(r.substr(1)));
    } catch (const std::exception&) {
      relax("'$ref' '" + r + "' does not resolve", path + "/$ref");
      return nullptr;
    }
  }

  static bool only_annotations_beside(const json& s, std::initializer_list<const char*> keys) {
    for (const auto& [key, value] : s.items()) {
      if (is_annotation(key) || key == "$defs" || key == "definitions") continue;
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; })) return false;
    }
    return true;
  }

  std::string ref(const json& s, const std::string& path, const std::string& hint, int depth) {
    const json& rv = *member(s, "$ref");
    if (!rv.is_string()) {
      relax("'$ref' must be a string", path + "/$ref");
      return any_value();
    }
    const std::string r = rv.get<std::string>();
    if (!only_annotations_beside(s, {"$ref"})) {
      // 2020-12: keywords beside $ref apply too; merged with the target like allOf.
      const json* target = resolve(r, path);
      json rest = s;
      rest.erase("$ref");
      if (!target) return visit(rest, path, hint, depth + 1);
      json merged = rest;
      merge_into(merged, *target, path + "/$ref");
      return visit(merged, path, hint, depth + 1);
    }
    if (auto it = refs_.find(r); it != refs_.end()) return it->second;
    const json* target = resolve(r, path);
    if (!target) return any_value();
    // Named before visiting, so a recursive reference finds the rule and becomes recursion.
    std::string name = out_.fresh_name(r.substr(r.rfind('/') + 1));
    refs_[r] = name;
    out_.add_rule(name, visit(*target, r.substr(1), name, depth + 1));
    return name;
  }

  // ---- allOf / anyOf / oneOf -----------------------------------------------------------------

  // A member of allOf / a branch, with a top-level $ref replaced by its target (once).
  json flatten_ref(const json& m, const std::string& path) {
    const json* r = member(m, "$ref");
    if (!r || !r->is_string()) return m;
    const json* target = resolve(r->get<std::string>(), path);
    json rest = m;
    rest.erase("$ref");
    if (target) merge_into(rest, *target, path + "/$ref");
    return rest;
  }

  // Simple merge of `b` into `a` (both schemas, as allOf would combine them): properties and
  // required are unions, bounds take the tighter side, types intersect; a keyword both give with
  // different values that cannot be combined is unsupported (the first one stays).
  void merge_into(json& a, const json& b, const std::string& path) {
    tick();
    if (b.is_boolean()) {
      if (!b.get<bool>()) relax("'false' inside allOf accepts nothing", path);
      return;
    }
    if (!b.is_object() || !a.is_object()) return;
    for (const auto& [k, v] : b.items()) {
      tick();
      auto it = a.find(k);
      if (it == a.end()) {
        a[k] = v;
        continue;
      }
      json& av = *it;
      if (av == v || is_annotation(k) || k == "$defs" || k == "definitions") continue;
      if (k == "properties" && av.is_object() && v.is_object()) {
        for (const auto& [pk, pv] : v.items()) {
          auto pit = av.find(pk);
          if (pit == av.end()) av[pk] = pv;
          else if (*pit != pv) *pit = json{{"allOf", json::array({*pit, pv})}};
        }
      } else if (k == "required" && av.is_array() && v.is_array()) {
        std::set<std::string> have;
        for (const auto& x : av)
          if (x.is_string()) have.insert(x.get<std::string>());
        for (const auto& x : v)
          if (x.is_string() && have.insert(x.get<std::string>()).second) av.push_back(x);
      } else if (k == "type") {
        uint8_t ta = 0, tb = 0;
        auto bits = [](const json& t) {
          uint8_t m = 0;
          if (t.is_string()) m = type_bit(t.get<std::string>());
          if (t.is_array())
            for (const auto& x : t)
              if (x.is_string()) m |= type_bit(x.get<std::string>());
          return m;
        };
        ta = bits(av), tb = bits(v);
        const uint8_t both = ta & tb;
        json types = json::array();
        for (const char* t : {"null", "boolean", "object", "array", "string", "number", "integer"}) {
          const uint8_t tbit = type_bit(t);
          if ((both & tbit) == tbit && !(std::string(t) == "integer" && (both & kFrac))) types.push_back(t);
        }
        if (types.empty()) relax("'allOf' with types that exclude each other", path + "/type");
        else av = types.size() == 1 ? types[0] : types;
      } else if ((k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems" ||
                  k == "minProperties") && av.is_number() && v.is_number()) {
        if (less(av, v)) av = v;
      } else if ((k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems" ||
                  k == "maxProperties") && av.is_number() && v.is_number()) {
        if (less(v, av)) av = v;
      } else if (k == "additionalProperties" || k == "items") {
        if (av.is_boolean() && !av.get<bool>()) continue;
        if (v.is_boolean() && !v.get<bool>()) av = v;
        else av = json{{"allOf", json::array({av, v})}};
      } else if (k == "enum" && av.is_array() && v.is_array()) {
        json keep = json::array();
        for (const auto& x : av)
          if (std::find(v.begin(), v.end(), x) != v.end()) keep.push_back(x);
        if (keep.empty()) relax("'allOf' with enums that share no value", path + "/enum");
        else av = keep;
      } else if (k == "allOf" && av.is_array() && v.is_array()) {
        for (const auto& x : v) av.push_back(x);
      } else {
        relax("'allOf' members with different '" + k + "' (not merged; the first is kept)", path);
      }
    }
  }

  // Exact comparison of two JSON numbers (64-bit integers are compared as integers).
  static bool less(const json& x, const json& y) {
    if (x.is_number_integer() && y.is_number_integer()) {
      auto as = [](const json& v) -> IntBound {
        return v.is_number_unsigned() ? IntBound(v.get<uint64_t>()) : IntBound(v.get<int64_t>());
      };
      return as(x) < as(y);
    }
    return x.get<double>() < y.get<double>();
  }

  std::string all_of(const json& s, const std::string& path, const std::string& hint, int depth) {
    const json& list = *member(s, "allOf");
    json merged = s;
    merged.erase("allOf");
    if (!list.is_array() || list.empty()) {
      relax("'allOf' must be a non-empty array", path + "/allOf");
      return visit(merged, path, hint, depth + 1);
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string p = path + "/allOf/" + std::to_string(i);
      merge_into(merged, flatten_ref(list[i], p), p);
    }
    return visit(merged, path, hint, depth + 1);
  }

  std::string any_of(const json& s, const std::string& path, const std::string& hint, int depth) {
    const bool is_one = !member(s, "anyOf");
    const char* k = is_one ? "oneOf" : "anyOf";
    if (member(s, "anyOf") && member(s, "oneOf")) relax("'anyOf' and 'oneOf' together ('oneOf' dropped)", path + "/oneOf");
    const json& list = *member(s, k);
    json rest = s;
    rest.erase(k);
    if (!is_one) rest.erase("oneOf");
    if (!list.is_array() || list.empty()) {
      relax(std::string("'") + k + "' must be a non-empty array", path + "/" + k);
      return visit(rest, path, hint, depth + 1);
    }
    // Keywords beside the list apply to every branch.
    const bool siblings = !only_annotations_beside(rest, {});
    std::vector<json> merged;
    if (siblings || is_one) {
      merged.reserve(list.size());
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string p = path + "/" + k + "/" + std::to_string(i);
        json b = is_one ? flatten_ref(list[i], p) : list[i];
        if (siblings) {
          json m = rest;
          merge_into(m, b, p);
          b = std::move(m);
        }
        merged.push_back(std::move(b));
      }
    }
    if (is_one && list.size() > 1) {
      if (auto clash = indistinct(merged)) {
        relax("'oneOf' branches " + std::to_string(clash->first) + " and " + std::to_string(clash->second) +
                  " cannot be told apart by the grammar (distinct types, const/enum values of a required property, or "
                  "required properties are needed; matched as 'anyOf')",
              path + "/oneOf");
      }
    }
    std::vector<std::string> alts;
    alts.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string p = path + "/" + k + "/" + std::to_string(i);
      alts.push_back(visit(merged.empty() ? list[i] : merged[i], p, child_hint(hint, std::to_string(i)), depth + 1));
    }
    return alternatives(alts);
  }

  // ---- oneOf exclusivity ------------------------------------------------------------------------

  struct Shape {
    uint8_t types = kAny;
    std::optional<std::vector<std::string>> literals;     // const / enum values, as JSON text
    std::unordered_set<std::string> required;
    std::optional<std::unordered_set<std::string>> allowed;  // keys an output may hold; none = any
    const json* props = nullptr;
  };

  static uint8_t schema_types(const json& s) {
    if (s.is_boolean()) return s.get<bool>() ? kAny : 0;
    if (!s.is_object()) return kAny;
    if (const json* c = member(s, "const")) return value_bit(*c);
    if (const json* e = member(s, "enum"); e && e->is_array()) {
      uint8_t m = 0;
      for (const auto& v : *e) m |= value_bit(v);
      return m;
    }
    if (const json* t = member(s, "type")) {
      uint8_t m = 0;
      if (t->is_string()) m = type_bit(t->get<std::string>());
      if (t->is_array())
        for (const auto& x : *t)
          if (x.is_string()) m |= type_bit(x.get<std::string>());
      if (m) return m | (member(s, "nullable") && (*member(s, "nullable")).is_boolean() && member(s, "nullable")->get<bool>() ? kNull : 0);
    }
    if (member(s, "anyOf") || member(s, "oneOf") || member(s, "allOf") || member(s, "$ref")) return kAny;
    if (member(s, "properties") || member(s, "required") || member(s, "additionalProperties")) return kObject;
    if (member(s, "items") || member(s, "prefixItems")) return kArray;
    if (member(s, "pattern") || member(s, "minLength") || member(s, "maxLength") || member(s, "format")) return kString;
    return kAny;
  }

  static std::optional<std::vector<std::string>> schema_literals(const json& s) {
    if (!s.is_object()) return std::nullopt;
    if (const json* c = member(s, "const")) return std::vector<std::string>{c->dump()};
    if (const json* e = member(s, "enum"); e && e->is_array()) {
      std::vector<std::string> v;
      for (const auto& x : *e) v.push_back(x.dump());
      return v;
    }
    return std::nullopt;
  }

  static Shape shape_of(const json& s) {
    Shape sh;
    sh.types = schema_types(s);
    sh.literals = schema_literals(s);
    if (!s.is_object() || sh.types != kObject) return sh;
    if (const json* r = member(s, "required"); r && r->is_array())
      for (const auto& x : *r)
        if (x.is_string()) sh.required.insert(x.get<std::string>());
    const json* props = member(s, "properties");
    sh.props = props && props->is_object() ? props : nullptr;
    const json* extra = member(s, "additionalProperties");
    // The grammar's reading: no extra keys when additionalProperties is false, or absent beside
    // `properties`.
    if ((extra && extra->is_boolean() && !extra->get<bool>()) || (!extra && sh.props)) {
      sh.allowed.emplace();
      if (sh.props)
        for (const auto& [k, v] : sh.props->items()) sh.allowed->insert(k);
    }
    return sh;
  }

  static bool disjoint(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::unordered_set<std::string> sa(a.begin(), a.end());
    return std::none_of(b.begin(), b.end(), [&](const std::string& x) { return sa.count(x); });
  }

  // Every output of x fails y.
  static bool fails(const Shape& x, const Shape& y) {
    if (!(x.types & y.types)) return true;
    if (x.literals && y.literals && disjoint(*x.literals, *y.literals)) return true;
    if (x.types != kObject || y.types != kObject) return false;
    if (x.allowed)
      for (const auto& k : y.required)
        if (!x.allowed->count(k)) return true;
    if (!x.props || !y.props) return false;
    for (const auto& k : x.required) {  // a discriminator: required in both, disjoint values or types
      if (!y.required.count(k)) continue;
      auto xi = x.props->find(k);
      auto yi = y.props->find(k);
      if (xi == x.props->end() || yi == y.props->end()) continue;
      if (!(schema_types(*xi) & schema_types(*yi))) return true;
      auto xl = schema_literals(*xi), yl = schema_literals(*yi);
      if (xl && yl && disjoint(*xl, *yl)) return true;
    }
    return false;
  }

  // The first pair of branches an output could satisfy both of, if any.
  std::optional<std::pair<size_t, size_t>> indistinct(const std::vector<json>& branches) {
    std::vector<Shape> shapes;
    shapes.reserve(branches.size());
    for (const auto& b : branches) shapes.push_back(shape_of(b)), tick();
    if (branches.size() > 64) {
      // Large lists, in linear time: all-literal branches with distinct values, or objects with one
      // discriminator property (required everywhere, const/enum values distinct across branches).
      auto distinct_values = [&](auto&& values_of) -> std::optional<std::pair<size_t, size_t>> {
        std::unordered_map<std::string, size_t> seen;
        for (size_t i = 0; i < shapes.size(); ++i) {
          auto vals = values_of(i);
          if (!vals) return std::make_pair(i, i == 0 ? size_t{1} : size_t{0});
          for (const auto& v : *vals) {
            tick();
            auto [it, added] = seen.emplace(v, i);
            if (!added && it->second != i) return std::make_pair(it->second, i);
          }
        }
        return std::nullopt;
      };
      if (std::all_of(shapes.begin(), shapes.end(), [](const Shape& sh) { return sh.literals.has_value(); }))
        return distinct_values([&](size_t i) { return shapes[i].literals; });
      std::optional<std::pair<size_t, size_t>> clash = std::make_pair(size_t{0}, size_t{1});
      if (shapes[0].types != kObject) return clash;
      for (const auto& key : shapes[0].required) {
        auto values_of = [&](size_t i) -> std::optional<std::vector<std::string>> {
          const Shape& sh = shapes[i];
          if (sh.types != kObject || !sh.required.count(key) || !sh.props) return std::nullopt;
          auto it = sh.props->find(key);
          return it == sh.props->end() ? std::nullopt : schema_literals(*it);
        };
        clash = distinct_values(values_of);
        if (!clash) return std::nullopt;
      }
      return clash;
    }
    for (size_t i = 0; i < shapes.size(); ++i)
      for (size_t j = i + 1; j < shapes.size(); ++j) {
        tick();
        if (!fails(shapes[i], shapes[j]) || !fails(shapes[j], shapes[i])) return std::make_pair(i, j);
      }
    return std::nullopt;
  }

  // ---- typed schemas ----------------------------------------------------------------------------

  std::string typed(const json& s, const std::string& path, const std::string& hint, int depth) {
    const json* type = member(s, "type");
    std::vector<std::string> alts;
    if (type && type->is_array()) {
      if (type->empty()) relax("'type' must not be an empty list", path + "/type");
      for (const auto& t : *type) {
        if (!t.is_string()) {
          relax("'type' must be a string or a list of strings", path + "/type");
          continue;
        }
        alts.push_back(typed_one(s, t.get<std::string>(), path, hint, depth));
      }
      if (alts.empty()) return any_value();
    } else {
      std::string t;
      if (type && type->is_string()) {
        t = type->get<std::string>();
      } else if (type) {
        relax("'type' must be a string or a list of strings", path + "/type");
      }
      if (t.empty()) t = inferred_type(s);
      if (t.empty()) return any_value();
      alts.push_back(typed_one(s, t, path, hint, depth));
    }
    if (const json* n = member(s, "nullable"); n && n->is_boolean() && n->get<bool>()) alts.push_back(need_primitive(out_, "json-null"));
    return alternatives(alts);
  }

  static std::string inferred_type(const json& s) {
    if (member(s, "properties") || member(s, "additionalProperties") || member(s, "required") ||
        member(s, "minProperties") || member(s, "maxProperties"))
      return "object";
    if (member(s, "items") || member(s, "prefixItems") || member(s, "minItems") || member(s, "maxItems") ||
        member(s, "uniqueItems"))
      return "array";
    if (member(s, "minLength") || member(s, "maxLength") || member(s, "format") || member(s, "pattern")) return "string";
    if (member(s, "minimum") || member(s, "maximum") || member(s, "exclusiveMinimum") || member(s, "exclusiveMaximum"))
      return "number";
    return "";
  }

  std::string typed_one(const json& s, const std::string& t, const std::string& path, const std::string& hint, int depth) {
    if (t == "object") return object(s, path, hint, depth);
    if (t == "array") return array(s, path, hint, depth);
    if (t == "string") return string(s, path);
    if (t == "integer") return integer(s, path);
    if (t == "number") return number(s, path);
    if (t == "boolean") return need_primitive(out_, "json-boolean");
    if (t == "null") return need_primitive(out_, "json-null");
    relax("unknown type '" + t + "'", path + "/type");
    return any_value();
  }

  // A count keyword (minLength, maxItems...): a non-negative integer up to kMaxRepetition.
  std::optional<size_t> count(const json& s, const char* key, const std::string& path) {
    const json* v = member(s, key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<int64_t>() < 0)) {
      relax(std::string("'") + key + "' must be a non-negative integer", path + "/" + key);
      return std::nullopt;
    }
    const uint64_t n = v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
    if (n > static_cast<uint64_t>(kMaxRepetition)) {
      relax(std::string("'") + key + "' above the limit of " + std::to_string(kMaxRepetition), path + "/" + key);
      return std::nullopt;
    }
    return static_cast<size_t>(n);
  }

  std::string string(const json& s, const std::string& path) {
    need_primitive(out_, "json-string");
    const bool lengths = member(s, "minLength") || member(s, "maxLength");
    if (const json* p = member(s, "pattern")) {
      if (!p->is_string()) {
        relax("'pattern' must be a string", path + "/pattern");
      } else {
        try {
          std::string g = pattern_gbnf(out_, p->get<std::string>());
          if (member(s, "format")) relax("'format' beside 'pattern' (only the pattern is enforced)", path + "/format");
          if (lengths) relax("'minLength'/'maxLength' beside 'pattern' (only the pattern is enforced)", path);
          return g;
        } catch (const PatternError& e) {
          relax(std::string("unsupported 'pattern': ") + e.what(), path + "/pattern");
        }
      }
    }
    if (const json* f = member(s, "format")) {
      const std::string name = f->is_string() ? f->get<std::string>() : f->dump();
      if (known_formats().count(name)) {
        if (lengths) relax("'minLength'/'maxLength' beside 'format' (only the format is enforced)", path);
        return "\"\\\"\" " + need_primitive(out_, "json-" + name) + " \"\\\"\"";
      }
      relax("unsupported string format '" + name + "'", path + "/format");
    }
    auto lo = count(s, "minLength", path), hi = count(s, "maxLength", path);
    if (!lo && !hi) return "json-string";
    if (lo && hi && *lo > *hi) {
      relax("'minLength' above 'maxLength'", path);
      return "json-string";
    }
    std::string rep = "{" + std::to_string(lo.value_or(0)) + "," + (hi ? std::to_string(*hi) : "") + "}";
    return "\"\\\"\" json-char" + rep + " \"\\\"\"";
  }

  // An exact integer bound (inclusive) from minimum / maximum / exclusive*; never via double for
  // integers, so 9007199254740993 stays itself.
  std::optional<IntBound> int_bound(const json& s, const char* key, bool lower, const std::string& path) {
    const json* v = member(s, key);
    if (!v || v->is_boolean()) return std::nullopt;  // draft-4 exclusive flags are read with minimum/maximum
    if (!v->is_number()) {
      relax(std::string("'") + key + "' must be a number", path + "/" + key);
      return std::nullopt;
    }
    const std::string ex = std::string("exclusive") + (lower ? "Minimum" : "Maximum");
    const json* flag = member(s, ex.c_str());
    const bool exclusive = std::string(key).rfind("exclusive", 0) == 0 || (flag && flag->is_boolean() && flag->get<bool>());
    IntBound b;
    if (v->is_number_unsigned()) {
      b = static_cast<IntBound>(v->get<uint64_t>());
    } else if (v->is_number_integer()) {
      b = static_cast<IntBound>(v->get<int64_t>());
    } else {
      const double d = v->get<double>();
      if (!(std::fabs(d) < 1e28)) {
        relax(std::string("'") + key + "' out of the supported integer range", path + "/" + key);
        return std::nullopt;
      }
      const double r = lower ? (exclusive ? std::floor(d) + 1 : std::ceil(d)) : (exclusive ? std::ceil(d) - 1 : std::floor(d));
      return static_cast<IntBound>(r);
    }
    if (exclusive) b += lower ? 1 : -1;
    return b;
  }

  std::string integer(const json& s, const std::string& path) {
    std::optional<IntBound> lo, hi;
    for (const char* k : {"minimum", "exclusiveMinimum"}) {
      if (auto b = int_bound(s, k, true, path)) lo = lo ? std::max(*lo, *b) : *b;
    }
    for (const char* k : {"maximum", "exclusiveMaximum"}) {
      if (auto b = int_bound(s, k, false, path)) hi = hi ? std::min(*hi, *b) : *b;
    }
    if (!lo && !hi) return need_primitive(out_, "json-integer");
    if (lo && hi && *lo > *hi) {
      relax("integer range is empty (" + int_bound_text(*lo) + " > " + int_bound_text(*hi) + ")", path);
      return need_primitive(out_, "json-integer");
    }
    return int_range_gbnf(lo, hi);
  }

  // A decimal bound from minimum / maximum / exclusive* (draft-4 boolean flags too), exact: the
  // number's own text is read, never a double.
  std::optional<DecimalBound> decimal_bound(const json& s, const char* key, bool lower, const std::string& path) {
    const json* v = member(s, key);
    if (!v || v->is_boolean()) return std::nullopt;
    if (!v->is_number()) {
      relax(std::string("'") + key + "' must be a number", path + "/" + key);
      return std::nullopt;
    }
    auto d = parse_decimal(v->dump());
    if (!d) {
      relax(std::string("'") + key + "' has more digits than a range grammar supports", path + "/" + key);
      return std::nullopt;
    }
    const json* flag = member(s, lower ? "exclusiveMinimum" : "exclusiveMaximum");
    const bool exclusive = std::string(key).rfind("exclusive", 0) == 0 || (flag && flag->is_boolean() && flag->get<bool>());
    return DecimalBound{*d, exclusive};
  }

  // Signed order of two bounds' values; an exclusive bound is the tighter of two equal ones.
  static int compare(const DecimalBound& a, const DecimalBound& b) {
    if (a.value.negative != b.value.negative) return a.value.negative ? -1 : 1;
    int c = a.value.integer != b.value.integer ? (a.value.integer < b.value.integer ? -1 : 1)
            : a.value.fraction == b.value.fraction ? 0 : (a.value.fraction < b.value.fraction ? -1 : 1);
    return a.value.negative ? -c : c;
  }

  std::string number(const json& s, const std::string& path) {
    std::optional<DecimalBound> lo, hi;
    for (const char* k : {"minimum", "exclusiveMinimum"}) {
      if (auto b = decimal_bound(s, k, true, path)) {
        const int c = lo ? compare(*b, *lo) : 1;
        if (c > 0 || (c == 0 && b->exclusive)) lo = b;
      }
    }
    for (const char* k : {"maximum", "exclusiveMaximum"}) {
      if (auto b = decimal_bound(s, k, false, path)) {
        const int c = hi ? compare(*b, *hi) : -1;
        if (c < 0 || (c == 0 && b->exclusive)) hi = b;
      }
    }
    if (!lo && !hi) return need_primitive(out_, "json-number");
    // Bounded numbers are written without an exponent (1e3 as 1000).
    if (auto g = number_range_gbnf(lo, hi)) return *g;
    relax("number range is empty", path);
    return need_primitive(out_, "json-number");
  }

  std::string array(const json& s, const std::string& path, const std::string& hint, int depth) {
    need_primitive(out_, "ws");
    const json* prefix = member(s, "prefixItems");
    const json* items = member(s, "items");
    const json* extra_items = member(s, "additionalItems");
    if (items && items->is_array()) prefix = items, items = extra_items;  // draft-4 tuple form
    if (const json* u = member(s, "uniqueItems"); u && u->is_boolean() && u->get<bool>()) {
      const json* mx = member(s, "maxItems");
      if (!(mx && mx->is_number_integer() && mx->get<int64_t>() <= 1)) relax("'uniqueItems' is unsupported", path + "/uniqueItems");
    }
    std::optional<std::string> item;  // the schema of items beyond the prefix; none = no more
    if (items) {
      if (!(items->is_boolean() && !items->get<bool>())) item = visit(*items, path + "/items", child_hint(hint, "item"), depth + 1);
    } else if (!prefix) {
      item = any_value();
    }
    size_t lo = count(s, "minItems", path).value_or(0);
    std::optional<size_t> hi = count(s, "maxItems", path);
    if (hi && lo > *hi) {
      relax("'minItems' above 'maxItems'", path);
      hi.reset();
    }
    const size_t hi_n = hi.value_or(0);  // with `hi`: a count above 0 here whenever items follow the prefix
    if (prefix && !prefix->is_array()) {
      relax("'prefixItems' must be an array", path + "/prefixItems");
      prefix = nullptr;
    }
    if (prefix && !prefix->empty()) {
      // Tuples: the prefix items come first; items past the prefix only when `items` allows them
      // (absent `items` beside prefixItems means none, the strict reading). minItems/maxItems cut
      // the prefix or bound the rest.
      // Every prefix item is written (the strict reading, as OpenAI's structured outputs do; a
      // shorter tuple would be valid too) unless maxItems cuts the tuple.
      const size_t n = prefix->size();
      size_t take = hi ? std::min(n, *hi) : n;
      lo = std::max(lo, take);
      if (lo > n && !item) {
        relax("'minItems' cannot be met when no items past 'prefixItems' are allowed", path + "/minItems");
        lo = n;
      }
      std::vector<std::string> pre;
      for (size_t i = 0; i < take; ++i)
        pre.push_back(visit((*prefix)[i], path + "/prefixItems/" + std::to_string(i), child_hint(hint, std::to_string(i)), depth + 1));
      // Items i.. optional from the first index >= lo: nested so that a later one needs the earlier.
      std::string tail;
      if (item && take == n && (!hi || hi_n > n)) {
        const size_t more_lo = lo > n ? lo - n : 0;
        const std::string upper = hi_n ? std::to_string(hi_n - n) : "";
        tail = " ( ws \",\" ws " + *item + " ){" + std::to_string(more_lo) + "," + upper + "}";
      }
      std::string body = tail;
      for (size_t i = take; i-- > 0;) {
        const std::string piece = (i ? "ws \",\" ws " : "") + pre[i] + body;
        body = i >= lo ? " ( " + piece + " )?" : " " + piece;
      }
      return define(hint, "\"[\" ws" + body + " ws \"]\"");
    }
    if (!item || (hi && *hi == 0)) {
      if (lo > 0) relax("'minItems' cannot be met when no items are allowed", path);
      return define(hint, "\"[\" ws \"]\"");
    }
    std::string more = "( ws \",\" ws " + *item + " )";
    size_t more_lo = lo ? lo - 1 : 0;
    more += hi ? "{" + std::to_string(more_lo) + "," + std::to_string(*hi - 1) + "}" : "{" + std::to_string(more_lo) + ",}";
    std::string list = *item + " " + more;
    return define(hint, "\"[\" ws " + (lo == 0 ? "( " + list + " ws )?" : list + " ws") + " \"]\"");
  }

  std::string object(const json& s, const std::string& path, const std::string& hint, int depth) {
    need_primitive(out_, "ws");
    std::unordered_set<std::string> required;
    std::vector<std::string> required_order;
    if (const json* r = member(s, "required")) {
      if (!r->is_array()) relax("'required' must be an array", path + "/required");
      else
        for (const auto& x : *r) {
          if (!x.is_string()) relax("'required' must hold strings", path + "/required");
          else if (required.insert(x.get<std::string>()).second) required_order.push_back(x.get<std::string>());
        }
    }
    std::vector<ObjectMember> props;
    std::unordered_set<std::string> declared;
    const json* properties = member(s, "properties");
    if (properties && !properties->is_object()) {
      relax("'properties' must be an object", path + "/properties");
      properties = nullptr;
    }
    if (properties) {
      props.reserve(properties->size());
      for (const auto& [key, sub] : properties->items()) {
        const std::string p = path + "/properties/" + pointer_escape(key);
        declared.insert(key);
        if (sub.is_boolean() && !sub.get<bool>()) {  // may not appear
          if (required.count(key)) relax("required property '" + key + "' has the schema 'false'", p);
          continue;
        }
        const std::string h = child_hint(hint, key);
        std::string value = visit(sub, p, h, depth + 1);
        std::string body = literal(json(key)) + " ws \":\" ws " + value;
        std::string kv = define(h + "-kv", body);
        props.push_back({key, kv, required.count(key) != 0, std::move(body)});
      }
    }
    // Extra properties. JSON Schema's default would allow any; we follow OpenAI's strict mode and
    // allow none when `properties` is given and `additionalProperties` is absent. A bare
    // {"type":"object"} (no properties) stays any object, the only useful reading of it.
    std::optional<std::string> extra;
    if (const json* a = member(s, "additionalProperties")) {
      if (!(a->is_boolean() && !a->get<bool>())) extra = visit(*a, path + "/additionalProperties", child_hint(hint, "additional"), depth + 1);
    } else if (!properties && required.empty()) {
      extra = any_value();
    }
    for (const auto& r : required_order) {
      if (declared.count(r)) continue;
      if (!extra) {
        relax("required property '" + r + "' is neither declared nor allowed as additional", path + "/required");
        continue;
      }
      // Required but undeclared: a required member of the additional properties' schema.
      std::string body = literal(json(r)) + " ws \":\" ws " + *extra;
      std::string kv = define(child_hint(hint, r) + "-kv", body);
      props.push_back({r, kv, true, std::move(body)});
    }
    const size_t n_required = static_cast<size_t>(std::count_if(props.begin(), props.end(), [](const ObjectMember& p) { return p.required; }));
    if (const json* mp = member(s, "minProperties"); mp && !(mp->is_number_integer() && mp->get<int64_t>() <= static_cast<int64_t>(n_required)))
      relax("'minProperties' above the number of required properties is unsupported", path + "/minProperties");
    if (const json* mp = member(s, "maxProperties"); mp && !(mp->is_number_integer() && !extra && mp->get<int64_t>() >= static_cast<int64_t>(props.size())))
      relax("'maxProperties' below the number of allowed properties is unsupported", path + "/maxProperties");
    std::string extra_kv;
    if (extra) extra_kv = define(hint + "-extra-kv", need_primitive(out_, "json-string") + " ws \":\" ws " + *extra);
    return object_members_gbnf(props, extra_kv, hint, [this](const std::string& h, const std::string& body) { return define(h, body); },
                               [this] { tick(); });
  }

  SchemaConverter& out_;
  const json& root_;
  const SchemaOptions& opt_;
  std::unordered_map<std::string, std::string> refs_;
  std::unordered_map<std::string, std::unordered_map<std::string, const json*>> defs_index_;
  std::unordered_set<std::string> indexed_;
};

}  // namespace

std::string SchemaConverter::add_schema(const std::string& name, const nlohmann::ordered_json& schema,
                                        const SchemaOptions& options) {
  std::string rule = fresh_name(name);
  SchemaWalker walker(*this, schema, rule, options);
  add_rule(rule, walker.visit(schema, "", rule, 0));
  return rule;
}

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const SchemaOptions& options) {
  SchemaConverter c;
  std::string root = c.add_schema("root", schema, options);
  if (root != "root") c.add_rule("root", root);
  return c.gbnf();
}

}  // namespace anelm::grammar
