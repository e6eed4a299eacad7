// JSON Schema -> GBNF. Each keyword either constrains the grammar or is refused with SchemaError;
// nothing is silently dropped, so a schema never yields an unconstrained answer by accident.
#include <cmath>
#include <optional>
#include <set>

#include "grammar/json_int_range.h"
#include "grammar/json_primitives.h"

namespace anelm::grammar {
namespace {

using json = nlohmann::ordered_json;

const std::set<std::string>& handled_keywords() {
  static const std::set<std::string> k = {
      "type",     "properties", "required", "additionalProperties", "enum",     "const",
      "items",    "prefixItems", "minItems", "maxItems",            "minLength", "maxLength",
      "minimum",  "maximum",    "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf",
      "allOf",    "$ref",       "format",   "$defs",                "definitions"};
  return k;
}

// Annotations: they describe, they do not constrain.
const std::set<std::string>& ignored_keywords() {
  static const std::set<std::string> k = {"description", "title",    "default",  "examples",
                                          "$schema",     "$id",      "strict",   "$comment",
                                          "deprecated",  "readOnly", "writeOnly", "contentEncoding",
                                          "contentMediaType"};
  return k;
}

std::string pointer_escape(const std::string& key) {
  std::string s;
  for (char c : key) s += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return s;
}

std::string shown(const std::string& path) { return path.empty() ? "/" : path; }

[[noreturn]] void refuse(const std::string& what, const std::string& path) {
  throw SchemaError(what + " at " + shown(path));
}

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string s = "(";
  for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : " ") + alts[i];
  return s + " )";
}

class SchemaWalker {
 public:
  SchemaWalker(SchemaConverter& out, const json& root, const std::string& root_rule) : out_(out), root_(root) {
    refs_["#"] = root_rule;
  }

  // A GBNF expression matching the JSON texts valid under `s`.
  std::string visit(const json& s, const std::string& path, const std::string& hint) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) refuse("schema 'false' accepts nothing", path);
      return need_primitive(out_, "json-value");
    }
    if (!s.is_object()) refuse("a schema must be an object or a boolean", path);
    for (const auto& [key, value] : s.items()) {
      if (!handled_keywords().count(key) && !ignored_keywords().count(key)) {
        refuse("unsupported JSON Schema keyword '" + key + "'", path.empty() ? "/" : path);
      }
    }
    if (s.contains("$ref")) return ref(s, path);
    if (s.contains("const")) return literal(s["const"]);
    if (s.contains("enum")) {
      const json& e = s["enum"];
      if (!e.is_array() || e.empty()) refuse("'enum' must be a non-empty array", path + "/enum");
      std::vector<std::string> alts;
      for (const auto& v : e) alts.push_back(literal(v));
      return alternatives(alts);
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      if (!s.contains(k)) continue;
      only_annotations_beside(s, k, path);
      const json& list = s[k];
      if (!list.is_array() || list.empty()) refuse(std::string("'") + k + "' must be a non-empty array", path + "/" + k);
      // oneOf is matched as anyOf: exclusivity between alternatives is not enforced.
      std::vector<std::string> alts;
      for (size_t i = 0; i < list.size(); ++i) {
        alts.push_back(visit(list[i], path + "/" + k + "/" + std::to_string(i), hint + "-" + std::to_string(i)));
      }
      return alternatives(alts);
    }
    if (s.contains("allOf")) {
      only_annotations_beside(s, "allOf", path);
      const json& list = s["allOf"];
      if (!list.is_array() || list.size() != 1) refuse("'allOf' with other than exactly one schema is unsupported", path + "/allOf");
      return visit(list[0], path + "/allOf/0", hint);
    }
    return typed(s, path, hint);
  }

 private:
  void only_annotations_beside(const json& s, const std::string& keyword, const std::string& path) {
    for (const auto& [key, value] : s.items()) {
      if (key == keyword || key == "$defs" || key == "definitions" || ignored_keywords().count(key)) continue;
      refuse("unsupported JSON Schema keyword '" + key + "' beside '" + keyword + "'", path.empty() ? "/" : path);
    }
  }

  std::string literal(const json& v) { return gbnf_literal(v.dump()); }

  std::string define(const std::string& hint, const std::string& body) {
    std::string name = out_.fresh_name(hint);
    out_.add_rule(name, body);
    return name;
  }

  std::string ref(const json& s, const std::string& path) {
    only_annotations_beside(s, "$ref", path);
    if (!s["$ref"].is_string()) refuse("'$ref' must be a string", path + "/$ref");
    std::string r = s["$ref"].get<std::string>();
    if (auto it = refs_.find(r); it != refs_.end()) return it->second;
    if (r.rfind("#/", 0) != 0) refuse("unsupported '$ref' '" + r + "' (only local '#/...' references)", path + "/$ref");
    std::string pointer = r.substr(1);
    const json* target = nullptr;
    try {
      target = &root_.at(json::json_pointer(pointer));
    } catch (const std::exception&) {
      refuse("'$ref' '" + r + "' does not resolve", path + "/$ref");
    }
    // Named before visiting, so a recursive reference finds the rule and becomes recursion.
    std::string name = out_.fresh_name(pointer.substr(pointer.rfind('/') + 1));
    refs_[r] = name;
    out_.add_rule(name, visit(*target, pointer, name));
    return name;
  }

  std::string typed(const json& s, const std::string& path, const std::string& hint) {
    json type = s.contains("type") ? s["type"] : json();
    if (type.is_array()) {
      if (type.empty()) refuse("'type' must not be an empty list", path + "/type");
      std::vector<std::string> alts;
      for (const auto& t : type) {
        json one = s;
        one["type"] = t;
        alts.push_back(typed(one, path, hint));
      }
      return alternatives(alts);
    }
    std::string t;
    if (type.is_string()) {
      t = type.get<std::string>();
    } else if (!type.is_null()) {
      refuse("'type' must be a string or a list of strings", path + "/type");
    } else if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) {
      t = "object";
    } else if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") || s.contains("maxItems")) {
      t = "array";
    } else if (s.contains("minLength") || s.contains("maxLength") || s.contains("format")) {
      t = "string";
    } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum")) {
      t = "number";
    } else {
      return need_primitive(out_, "json-value");
    }
    if (t == "object") return object(s, path, hint);
    if (t == "array") return array(s, path, hint);
    if (t == "string") return string(s, path);
    if (t == "integer") return integer(s, path);
    if (t == "number") {
      for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (s.contains(k)) refuse(std::string("unsupported JSON Schema keyword '") + k + "' on type 'number'", path);
      }
      return need_primitive(out_, "json-number");
    }
    if (t == "boolean") return need_primitive(out_, "json-boolean");
    if (t == "null") return need_primitive(out_, "json-null");
    refuse("unknown type '" + t + "'", path + "/type");
  }

  static std::optional<size_t> count(const json& s, const char* key, const std::string& path) {
    if (!s.contains(key)) return std::nullopt;
    const json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) refuse(std::string("'") + key + "' must be a non-negative integer", path + "/" + key);
    if (v.get<int64_t>() > 10000) refuse(std::string("'") + key + "' above 10000 is unsupported", path + "/" + key);
    return static_cast<size_t>(v.get<int64_t>());
  }

  std::string string(const json& s, const std::string& path) {
    need_primitive(out_, "json-string");
    if (s.contains("format")) {
      const json& f = s["format"];
      std::string name = f.is_string() ? f.get<std::string>() : "";
      if (name != "date" && name != "time" && name != "date-time" && name != "uuid") {
        refuse("unsupported string format '" + (f.is_string() ? name : f.dump()) + "'", path + "/format");
      }
      return "\"\\\"\" " + need_primitive(out_, "json-" + name) + " \"\\\"\"";
    }
    auto lo = count(s, "minLength", path), hi = count(s, "maxLength", path);
    if (!lo && !hi) return "json-string";
    if (lo && hi && *lo > *hi) refuse("'minLength' above 'maxLength'", path);
    std::string rep = "{" + std::to_string(lo.value_or(0)) + "," + (hi ? std::to_string(*hi) : "") + "}";
    return "\"\\\"\" json-char" + rep + " \"\\\"\"";
  }

  static std::optional<int64_t> bound(const json& s, const char* key, bool lower, const std::string& path) {
    if (!s.contains(key)) return std::nullopt;
    const json& v = s[key];
    if (v.is_boolean()) return std::nullopt;  // draft-4 exclusive flags, read with minimum/maximum
    if (!v.is_number()) refuse(std::string("'") + key + "' must be a number", path + "/" + key);
    double d = v.get<double>();
    bool exclusive = std::string(key).rfind("exclusive", 0) == 0 ||
                     (s.contains(std::string("exclusive") + (lower ? "Minimum" : "Maximum")) &&
                      s[std::string("exclusive") + (lower ? "Minimum" : "Maximum")].is_boolean() &&
                      s[std::string("exclusive") + (lower ? "Minimum" : "Maximum")].get<bool>());
    double r = lower ? (exclusive ? std::floor(d) + 1 : std::ceil(d)) : (exclusive ? std::ceil(d) - 1 : std::floor(d));
    if (!(r >= -9.2e18 && r <= 9.2e18)) refuse(std::string("'") + key + "' out of the supported integer range", path + "/" + key);
    return static_cast<int64_t>(r);
  }

  std::string integer(const json& s, const std::string& path) {
    std::optional<int64_t> lo, hi;
    for (const char* k : {"minimum", "exclusiveMinimum"}) {
      if (auto b = bound(s, k, true, path)) lo = lo ? std::max(*lo, *b) : *b;
    }
    for (const char* k : {"maximum", "exclusiveMaximum"}) {
      if (auto b = bound(s, k, false, path)) hi = hi ? std::min(*hi, *b) : *b;
    }
    if (!lo && !hi) return need_primitive(out_, "json-integer");
    if (lo && hi && *lo > *hi) refuse("integer range is empty", path);
    return int_range_gbnf(lo, hi);
  }

  std::string array(const json& s, const std::string& path, const std::string& hint) {
    need_primitive(out_, "ws");
    const json* prefix = s.contains("prefixItems") ? &s["prefixItems"] : nullptr;
    const json* items = s.contains("items") ? &s["items"] : nullptr;
    if (items && items->is_array()) prefix = items, items = nullptr;  // draft-4 tuple form
    std::optional<std::string> item;  // the schema of items beyond the prefix; none = no more
    if (items) {
      if (!(items->is_boolean() && !items->get<bool>())) item = visit(*items, path + "/items", hint + "-item");
    } else if (!prefix) {
      item = need_primitive(out_, "json-value");
    }
    if (prefix) {
      // Tuples: every prefix item is required; more items only when `items` allows them (absent
      // `items` beside prefixItems means none, the strict reading).
      if (!prefix->is_array()) refuse("'prefixItems' must be an array", path + "/prefixItems");
      if (s.contains("minItems") || s.contains("maxItems")) refuse("'minItems'/'maxItems' beside 'prefixItems' are unsupported", path);
      std::string body = "\"[\" ws";
      for (size_t i = 0; i < prefix->size(); ++i) {
        if (i) body += " ws \",\" ws";
        body += " " + visit((*prefix)[i], path + "/prefixItems/" + std::to_string(i), hint + "-" + std::to_string(i));
      }
      if (item) body += prefix->empty() ? " ( " + *item + " ( ws \",\" ws " + *item + " )* )?" : " ( ws \",\" ws " + *item + " )*";
      return define(hint, body + (prefix->empty() ? "" : " ws") + " \"]\"");
    }
    size_t lo = count(s, "minItems", path).value_or(0);
    std::optional<size_t> hi = count(s, "maxItems", path);
    if (hi && lo > *hi) refuse("'minItems' above 'maxItems'", path);
    if (!item || (hi && *hi == 0)) {
      if (lo > 0) refuse("'minItems' cannot be met when no items are allowed", path);
      return define(hint, "\"[\" ws \"]\"");
    }
    std::string more = "( ws \",\" ws " + *item + " )";
    size_t more_lo = lo ? lo - 1 : 0;
    more += hi ? "{" + std::to_string(more_lo) + "," + std::to_string(*hi - 1) + "}" : "{" + std::to_string(more_lo) + ",}";
    std::string list = *item + " " + more;
    return define(hint, "\"[\" ws " + (lo == 0 ? "( " + list + " ws )?" : list + " ws") + " \"]\"");
  }

  std::string object(const json& s, const std::string& path, const std::string& hint) {
    need_primitive(out_, "ws");
    struct Prop {
      std::string key;
      std::string rule;
      bool required;
    };
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) refuse("'required' must be an array", path + "/required");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) refuse("'required' must hold strings", path + "/required");
        required.insert(r.get<std::string>());
      }
    }
    std::vector<Prop> props;
    std::set<std::string> declared;
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) refuse("'properties' must be an object", path + "/properties");
      for (const auto& [key, sub] : s["properties"].items()) {
        std::string value = visit(sub, path + "/properties/" + pointer_escape(key), hint + "-" + key);
        std::string kv = define(hint + "-" + key + "-kv", literal(json(key)) + " ws \":\" ws " + value);
        props.push_back({key, kv, required.count(key) != 0});
        declared.insert(key);
      }
    }
    // Extra properties. JSON Schema's default would allow any; we follow OpenAI's strict mode and
    // allow none when `properties` is given and `additionalProperties` is absent. A bare
    // {"type":"object"} (no properties) stays any object, the only useful reading of it.
    std::optional<std::string> extra;
    if (s.contains("additionalProperties")) {
      const json& a = s["additionalProperties"];
      if (!(a.is_boolean() && !a.get<bool>())) extra = visit(a, path + "/additionalProperties", hint + "-additional");
    } else if (!s.contains("properties") && required.empty()) {
      extra = need_primitive(out_, "json-value");
    }
    for (const auto& r : required) {
      if (declared.count(r)) continue;
      if (!extra) refuse("required property '" + r + "' is neither declared nor allowed as additional", path + "/required");
      // Required but undeclared: a required member of the additional properties' schema.
      std::string kv = define(hint + "-" + r + "-kv", literal(json(r)) + " ws \":\" ws " + *extra);
      props.push_back({r, kv, true});
    }
    std::string extra_kv;
    if (extra) extra_kv = define(hint + "-extra-kv", need_primitive(out_, "json-string") + " ws \":\" ws " + *extra);
    // Members in declaration order, required ones present, optional ones skippable, extras last.
    // rest[i]: members i.. after at least one member was written (each starts with a comma);
    // first[i]: a non-empty run of members i.. with nothing written before.
    size_t n = props.size();
    std::vector<std::string> rest(n + 1), first(n + 1);
    rest[n] = extra ? define(hint + "-rest", "( ws \",\" ws " + extra_kv + " )*") : "";
    if (extra) first[n] = define(hint + "-first", extra_kv + " " + rest[n]);
    for (size_t i = n; i-- > 0;) {
      const Prop& p = props[i];
      std::string after = rest[i + 1].empty() ? "" : " " + rest[i + 1];
      std::string sep = "ws \",\" ws " + p.rule;
      rest[i] = define(hint + "-rest", (p.required ? sep : "( " + sep + " )?") + after);
      std::string with = p.rule + after;
      first[i] = define(hint + "-first", p.required || first[i + 1].empty() ? with : with + " | " + first[i + 1]);
    }
    bool any_required = std::any_of(props.begin(), props.end(), [](const Prop& p) { return p.required; });
    if (first[0].empty()) return define(hint, "\"{\" ws \"}\"");
    return define(hint, "\"{\" ws " + (any_required ? first[0] + " ws" : "( " + first[0] + " ws )?") + " \"}\"");
  }

  SchemaConverter& out_;
  const json& root_;
  std::map<std::string, std::string> refs_;
};

}  // namespace

std::string SchemaConverter::add_schema(const std::string& name, const nlohmann::ordered_json& schema) {
  std::string rule = fresh_name(name);
  SchemaWalker walker(*this, schema, rule);
  add_rule(rule, walker.visit(schema, "", rule));
  return rule;
}

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  SchemaConverter c;
  std::string root = c.add_schema("root", schema);
  if (root != "root") c.add_rule("root", root);
  return c.gbnf();
}

}  // namespace anelm::grammar
