// Property test: ~1,000 seeded random schemas (nested objects, arrays, tuples, enums, integer
// ranges incl. bounds above 2^53 and at the 64-bit limits, patterns, formats, anyOf / oneOf /
// allOf, $ref) are compiled strictly; random token sequences the matcher allows are generated to
// completion (the byte vocabulary, and the real Qwen2.5 vocabulary for every 25th schema), and
// every text is validated by an independent validator: python-jsonschema (validate_instances.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "tests/grammar/grammar_test_util.h"

namespace anelm::grammar {
namespace {

using json = nlohmann::ordered_json;

class SchemaGen {
 public:
  explicit SchemaGen(uint64_t seed) : rng_(seed) {}

  json root() {
    defs_ = json::object();
    json s = r(3) ? object(0) : any(0);
    if (!defs_.empty()) s["$defs"] = defs_;
    return s;
  }

 private:
  int r(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  json any(int depth) {
    const int k = depth >= 3 ? r(7) : r(15);
    switch (k) {
      case 0: return string();
      case 1: return pattern();
      case 2: return integer();
      case 3: return r(2) ? json{{"type", "number"}} : json{{"type", "number"}, {"minimum", 0}};
      case 4: return r(2) ? json{{"type", "boolean"}} : json{{"type", "null"}};
      case 5: return enumeration();
      case 6: return json{{"const", r(2) ? json("fixed \"q\"") : json(uint64_t{18446744073709551615u})}};
      case 7: return object(depth + 1);
      case 8: return array(depth + 1);
      case 9: return tuple(depth + 1);
      case 10: return json{{"anyOf", json::array({any(depth + 1), any(depth + 1)})}};
      case 11: return one_of(depth + 1);
      case 12: return ref(depth + 1);
      case 13: return r(2) ? json{{"type", json::array({"string", "null"})}, {"maxLength", 3}} : json{{"type", json::array({"integer", "null"})}, {"maximum", -3}};
      default: return all_of(depth + 1);
    }
  }

  json string() {
    switch (r(4)) {
      case 0: return {{"type", "string"}};
      case 1: {
        int lo = r(4);
        return {{"type", "string"}, {"minLength", lo}, {"maxLength", lo + r(4)}};
      }
      default: {
        static const char* kFormats[] = {"date", "time", "date-time", "uuid", "email", "uri"};
        return {{"type", "string"}, {"format", kFormats[r(6)]}};
      }
    }
  }

  json pattern() {
    static const char* kPatterns[] = {
        "^[a-z]{2,5}$", "^\\d{3}-\\d{4}$", "^(foo|bar)+$", "^[A-Z][a-z]*( [A-Z][a-z]*)?$", "abc",
        "^x.y$",        "^\\w+@\\w+\\.com$", "^[^\"\\\\]{1,3}$", "^a?b*c{2}$", "^(\\(|\\))$",
        "^\"q\"\\\\$",  "^(?:[0-9a-f]{2}:){2}[0-9a-f]{2}$", "[0-9]$", "^é+ü?$", "^(a|b|)c$"};
    return {{"type", "string"}, {"pattern", kPatterns[r(15)]}};
  }

  static json big(int which) {
    switch (which) {
      case 0: return json(int64_t{9007199254740993});
      case 1: return json(int64_t{-9007199254740993});
      case 2: return json(std::numeric_limits<int64_t>::min());
      case 3: return json(std::numeric_limits<int64_t>::max());
      case 4: return json(uint64_t{18446744073709551615u});
      case 5: return json(-5);
      case 6: return json(0);
      default: return json(123);
    }
  }

  json integer() {
    json s = {{"type", "integer"}};
    const int a = r(8), b = r(8);
    auto val = [](const json& j) -> long double {
      return j.is_number_unsigned() ? static_cast<long double>(j.get<uint64_t>()) : static_cast<long double>(j.get<int64_t>());
    };
    json lo = big(a), hi = big(b);
    if (val(lo) > val(hi)) std::swap(lo, hi);
    switch (r(5)) {
      case 0: s["minimum"] = lo, s["maximum"] = hi; break;
      case 1: s["minimum"] = lo; break;
      case 2: s["maximum"] = hi; break;
      case 3:
        if (val(hi) - val(lo) >= 2) s["exclusiveMinimum"] = lo, s["exclusiveMaximum"] = hi;
        break;
      default: s["minimum"] = lo, s["maximum"] = lo; break;  // exactly one value
    }
    return s;
  }

  json enumeration() {
    json e = json::array({"a", "b\"c", 7, nullptr});
    if (r(2)) e.push_back(uint64_t{9007199254740993u});
    if (r(2)) e.push_back(json::array({1, "x"}));
    return {{"enum", e}};
  }

  json object(int depth) {
    json props = json::object(), required = json::array();
    const int n = r(5);
    for (int i = 0; i < n; ++i) {
      const std::string key = std::string(1, static_cast<char>('a' + i)) + (r(4) ? "" : " \"k\"");
      props[key] = any(depth + 1);
      if (r(2)) required.push_back(key);
    }
    json s = {{"type", "object"}, {"properties", props}};
    if (!required.empty()) s["required"] = required;
    if (r(2)) s["additionalProperties"] = false;
    if (n == 0 && r(2)) s = {{"type", "object"}, {"additionalProperties", r(2) ? any(depth + 1) : json(true)}};
    return s;
  }

  json array(int depth) {
    json s = {{"type", "array"}, {"items", any(depth + 1)}};
    if (r(2)) {
      const int lo = r(3);
      s["minItems"] = lo;
      if (r(2)) s["maxItems"] = lo + r(3);
    }
    return s;
  }

  json tuple(int depth) {
    json s = {{"type", "array"}, {"prefixItems", json::array({any(depth + 1), any(depth + 1)})}};
    if (r(2)) s["items"] = any(depth + 1);
    else if (r(2)) s["items"] = false;
    return s;
  }

  json one_of(int depth) {
    if (r(2)) {  // distinct types
      return {{"oneOf", json::array({string(), integer(), json{{"type", "array"}, {"items", any(depth + 1)}}})}};
    }
    json a = object(depth + 1), b = object(depth + 1);  // a discriminator property
    for (auto* o : {&a, &b}) {
      (*o)["properties"]["kind"] = {{"const", o == &a ? "A" : "B"}};
      if (!o->contains("required")) (*o)["required"] = json::array();
      (*o)["required"].push_back("kind");
    }
    return {{"oneOf", json::array({a, b})}};
  }

  json ref(int depth) {
    const std::string name = "d" + std::to_string(defs_.size());
    defs_[name] = any(depth + 1);
    return {{"$ref", "#/$defs/" + name}};
  }

  json all_of(int depth) {
    json a = {{"type", "object"}, {"properties", {{"x", {{"type", "integer"}, {"minimum", 0}}}}}, {"required", json::array({"x"})}};
    json b = {{"properties", {{"y", any(depth + 1)}, {"x", {{"maximum", 9}}}}}, {"required", json::array({"y"})}};
    return {{"allOf", json::array({a, b})}};
  }

  std::mt19937_64 rng_;
  json defs_;
};

TEST(SchemaProperty, RandomSchemasGenerateValidJson) {
  const auto* q = [] {
    static const auto v = testing::load_qwen_vocab();
    return v ? &*v : nullptr;
  }();
  const auto dir = std::filesystem::temp_directory_path() / ("anelm_schema_property_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto cases_path = dir / "cases.jsonl";
  std::ofstream cases(cases_path);
  constexpr int kSchemas = 1000;
  int finished = 0, unfinished = 0;
  for (int i = 0; i < kSchemas; ++i) {
    SchemaGen gen(0xA11CE + static_cast<uint64_t>(i));
    const json schema = gen.root();
    std::shared_ptr<const Grammar> g;
    try {
      g = parse_gbnf(json_schema_to_gbnf(schema), "root", GbnfOptions{kMaxSchemaGrammarBytes, nullptr});
    } catch (const std::exception& e) {
      ADD_FAILURE() << "schema " << i << " refused: " << e.what() << "\n" << schema.dump();
      continue;
    }
    const bool real = q && i % 25 == 0;
    const std::shared_ptr<const Vocab> vp = real ? q->vocab : testing::byte_vocab();
    const Vocab& vocab = *vp;
    const std::vector<int> eog = real ? q->eog : std::vector<int>{256};
    std::mt19937_64 rng(static_cast<uint64_t>(i) * 7 + 1);
    for (int w = 0; w < (real ? 1 : 2); ++w) {
      bool died = false;
      auto text = testing::random_walk(Matcher(g, vp), vocab,
                                       eog, rng, real ? 600 : 3000, &died);
      ASSERT_FALSE(died) << "schema " << i << ": the matcher allowed no token\n" << schema.dump();
      if (!text) {
        ++unfinished;
        continue;
      }
      ++finished;
      cases << json{{"i", i}, {"schema", schema}, {"text", *text}}.dump() << "\n";
    }
  }
  cases.close();
  std::printf("[ property ] %d texts generated, %d walks unfinished\n", finished, unfinished);
  EXPECT_GE(finished, kSchemas * 2 * 95 / 100 - kSchemas / 25);
  const std::string script = std::string(ANELM_SOURCE_DIR) + "/tests/grammar/validate_instances.py";
  const std::string out_path = (dir / "validation.txt").string();
  const int rc = std::system(("python3 " + script + " " + cases_path.string() + " > " + out_path + " 2>&1").c_str());
  std::ifstream report(out_path);
  const std::string text((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) GTEST_SKIP() << text;
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << text.substr(0, 8000);
  std::printf("[ property ] %s", text.substr(text.rfind("checked")).c_str());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace anelm::grammar
