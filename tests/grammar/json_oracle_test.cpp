// Independent oracle: random JSON documents, shaped after a schema and then often broken, must be
// accepted by the schema's grammar exactly when a small hand-written validator says they are valid.
// The validator covers the supported subset with the converter's documented choices: members in
// schema order, no extra members when `properties` is given without `additionalProperties`.
#include <gtest/gtest.h>

#include <random>

#include "grammar/grammar.h"
#include "tests/grammar/grammar_test_util.h"

namespace anelm::grammar {
namespace {

using json = nlohmann::ordered_json;

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

const json& resolve(const json& s, const json& root) {
  if (s.is_object() && s.contains("$ref")) {
    return resolve(root.at(json::json_pointer(s["$ref"].get<std::string>().substr(1))), root);
  }
  return s;
}

bool valid(const json& schema, const json& v, const json& root) {
  const json& s = resolve(schema, root);
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("const")) return v == s["const"];
  if (s.contains("enum")) {
    for (const auto& e : s["enum"]) {
      if (e == v) return true;
    }
    return false;
  }
  if (s.contains("anyOf")) {
    for (const auto& a : s["anyOf"]) {
      if (valid(a, v, root)) return true;
    }
    return false;
  }
  if (!s.contains("type")) return true;
  std::string t = s["type"];
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    if (!v.is_number_integer()) return false;
    int64_t x = v.get<int64_t>();
    return !(s.contains("minimum") && x < s["minimum"].get<int64_t>()) && !(s.contains("maximum") && x > s["maximum"].get<int64_t>());
  }
  if (t == "string") {
    if (!v.is_string()) return false;
    size_t n = code_points(v.get<std::string>());
    return !(s.contains("minLength") && n < s["minLength"].get<size_t>()) && !(s.contains("maxLength") && n > s["maxLength"].get<size_t>());
  }
  if (t == "array") {
    if (!v.is_array()) return false;
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    for (const auto& item : v) {
      if (s.contains("items") && !valid(s["items"], item, root)) return false;
    }
    return true;
  }
  if (!v.is_object()) return false;
  const json props = s.value("properties", json::object());
  size_t next = 0;  // members must follow the schema's order
  std::vector<std::string> order;
  for (const auto& [k, sub] : props.items()) order.push_back(k);
  for (const auto& [k, member] : v.items()) {
    auto it = std::find(order.begin() + static_cast<long>(next), order.end(), k);
    if (it == order.end()) return false;  // unknown, or out of order
    next = static_cast<size_t>(it - order.begin()) + 1;
    if (!valid(props[k], member, root)) return false;
  }
  for (const auto& r : s.value("required", json::array())) {
    if (!v.contains(r.get<std::string>())) return false;
  }
  return true;
}

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  json any(int depth) {
    switch (pick(depth > 2 ? 5 : 7)) {
      case 0: return nullptr;
      case 1: return pick(2) == 0;
      case 2: return static_cast<int64_t>(pick(300)) - 150;
      case 3: return (static_cast<double>(pick(80)) - 40) / 8.0 + 0.125;
      case 4: return str();
      case 5: {
        json a = json::array();
        for (int i = pick(4); i > 0; --i) a.push_back(any(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        for (int i = pick(3); i > 0; --i) o[str()] = any(depth + 1);
        return o;
      }
    }
  }

  json shaped(const json& schema, const json& root, int depth) {
    const json& s = resolve(schema, root);
    if (pick(12) == 0 || depth > 5 || !s.is_object()) return any(depth);
    if (s.contains("enum")) return pick(4) ? s["enum"][pick(static_cast<int>(s["enum"].size()))] : any(depth);
    if (s.contains("anyOf")) return shaped(s["anyOf"][pick(static_cast<int>(s["anyOf"].size()))], root, depth);
    std::string t = s.value("type", "");
    if (t == "integer") {
      int64_t lo = s.value("minimum", int64_t{-60}) - 3, hi = s.value("maximum", int64_t{60}) + 3;
      return lo + static_cast<int64_t>(pick(static_cast<int>(hi - lo + 1)));
    }
    if (t == "number") return pick(2) ? json((static_cast<double>(pick(80)) - 40) / 8.0) : json(pick(100) - 50);
    if (t == "boolean") return pick(2) == 0;
    if (t == "null") return nullptr;
    if (t == "string") {
      std::string out;
      for (int i = pick(s.contains("maxLength") ? s["maxLength"].get<int>() + 2 : 7); i > 0; --i) out += str_char();
      return out;
    }
    if (t == "array") {
      json a = json::array();
      for (int i = pick(5); i > 0; --i) a.push_back(s.contains("items") ? shaped(s["items"], root, depth + 1) : any(depth + 1));
      return a;
    }
    if (t == "object") {
      json o = json::object();
      const json props = s.value("properties", json::object());  // a named copy outlives the loop
      for (const auto& [k, sub] : props.items()) {
        if (pick(20) < 17) o[k] = shaped(sub, root, depth + 1);
      }
      if (pick(20) == 0) o["extra"] = 1;
      return o;
    }
    return any(depth);
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  std::string str_char() {
    static const std::vector<std::string> pool = {"a", "Z", "0", " ", "\"", "\\", "\n", "\t", "\x01", "é", "你", "😀", "/"};
    return pool[static_cast<size_t>(pick(static_cast<int>(pool.size())))];
  }
  std::string str() {
    std::string s;
    for (int i = pick(4); i > 0; --i) s += str_char();
    return s;
  }
  std::mt19937 rng_;
};

void run_oracle(const char* schema_text, uint32_t seed) {
  json schema = json::parse(schema_text);
  auto g = parse_gbnf(json_schema_to_gbnf(schema));
  Generator gen(seed);
  int valid_count = 0, invalid_count = 0;
  for (int i = 0; i < 600; ++i) {
    json v = gen.shaped(schema, schema, 0);
    bool expect = valid(schema, v, schema);
    std::string text = v.dump(i % 3 == 0 ? 2 : -1);
    EXPECT_EQ(testing::matches(g, text), expect) << schema_text << "\n" << text;
    (expect ? valid_count : invalid_count)++;
  }
  // The generator must exercise both sides, or the comparison proves little.
  EXPECT_GT(valid_count, 50) << schema_text;
  EXPECT_GT(invalid_count, 50) << schema_text;
}

TEST(JsonOracle, FlatObject) {
  run_oracle(R"({"type":"object","properties":{
      "id":{"type":"integer","minimum":-20,"maximum":45},
      "name":{"type":"string","minLength":1,"maxLength":4},
      "kind":{"enum":["a\"b","x",3,null]},
      "ok":{"type":"boolean"},
      "score":{"type":"number"}},
    "required":["id","kind"]})",
             1);
}

TEST(JsonOracle, ArraysAndUnions) {
  run_oracle(R"({"type":"array","minItems":1,"maxItems":3,"items":{"anyOf":[
      {"type":"integer","minimum":0,"maximum":9},{"type":"string","maxLength":2},{"type":"null"},
      {"type":"array","items":{"type":"boolean"},"maxItems":2}]}})",
             2);
}

TEST(JsonOracle, RecursiveDefinitions) {
  run_oracle(R"({"$defs":{"node":{"type":"object","properties":{
      "v":{"type":"integer","minimum":1,"maximum":30},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":3}},"required":["v"]}},
    "$ref":"#/$defs/node"})",
             3);
}

}  // namespace
}  // namespace anelm::grammar
