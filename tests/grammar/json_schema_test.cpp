// JSON Schema -> GBNF: per keyword, texts that must be accepted and texts that must be refused;
// unsupported keywords are refused with their name and path.
#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "grammar/grammar.h"
#include "tests/grammar/grammar_test_util.h"

namespace anelm::grammar {
namespace {

using json = nlohmann::ordered_json;

struct Case {
  const char* schema;
  std::vector<std::string> accept;
  std::vector<std::string> refuse;
};

void check(const Case& c) {
  auto schema = json::parse(c.schema);
  std::string gbnf = json_schema_to_gbnf(schema);
  std::shared_ptr<const Grammar> g;
  ASSERT_NO_THROW(g = parse_gbnf(gbnf)) << gbnf;
  for (const auto& text : c.accept) EXPECT_TRUE(testing::matches(g, text)) << c.schema << "\nshould accept: " << text << "\n" << gbnf;
  for (const auto& text : c.refuse) EXPECT_FALSE(testing::matches(g, text)) << c.schema << "\nshould refuse: " << text << "\n" << gbnf;
}

std::string schema_error(const char* schema) {
  try {
    json_schema_to_gbnf(json::parse(schema));
  } catch (const SchemaError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonSchema, Primitives) {
  check({R"({"type":"string"})", {R"("")", R"("a b")", R"("\"\\\/\b\f\n\r\t\u00e9")", "\"你好\""},
         {"\"a", "\"\n\"", R"("\x")", R"("\u12")", "'a'", "\"\x01\""}});
  check({R"({"type":"number"})", {"0", "-1", "3.25", "1e5", "-0.5E-3", "10"}, {"01", "1.", ".5", "+1", "-", "1e", "0x1"}});
  check({R"({"type":"integer"})", {"0", "-7", "1234567890"}, {"1.0", "-0x", "00", "1e3", ""}});
  check({R"({"type":"boolean"})", {"true", "false"}, {"True", "1", "null"}});
  check({R"({"type":"null"})", {"null"}, {"nul", "None"}});
  check({R"({"type":["string","null"]})", {"null", R"("x")"}, {"1"}});
}

TEST(JsonSchema, EmptySchemaIsAnyValue) {
  for (const char* s : {"{}", "true", R"({"description":"anything"})"}) {
    check({s, {"1", R"({"a":[1,{"b":null}]})", "[]", R"("s")", "true"}, {"", "[1,]", "{a:1}", "tru"}});
  }
}

TEST(JsonSchema, IntegerRanges) {
  check({R"({"type":"integer","minimum":-5,"maximum":120})", {"-5", "-1", "0", "7", "99", "100", "120"},
         {"121", "-6", "01", "-0", "200", "1000", "-10"}});
  check({R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})", {"1", "9"}, {"0", "10", "-1"}});
  check({R"({"type":"integer","minimum":10})", {"10", "11", "99", "100", "123456789"}, {"9", "0", "-10"}});
  check({R"({"type":"integer","maximum":-3})", {"-3", "-4", "-100", "-99999"}, {"-2", "0", "3"}});
  check({R"({"type":"integer","minimum":-1000,"maximum":-100})", {"-100", "-999", "-1000", "-543"}, {"-99", "-1001", "100"}});
  check({R"({"type":"integer","minimum":0,"maximum":0})", {"0"}, {"1", "-0", "00"}});
  check({R"({"type":"integer","minimum":1.5,"maximum":3.5})", {"2", "3"}, {"1", "4"}});
  EXPECT_NE(schema_error(R"({"type":"integer","minimum":5,"maximum":4})").find("empty"), std::string::npos);
}

TEST(JsonSchema, IntegerRangesExhaustive) {
  // Every bound pair in a window, against every integer text in a wider one.
  for (int lo = -23; lo <= 23; lo += 7) {
    for (int hi = lo; hi <= 130; hi += 29) {
      json schema = {{"type", "integer"}, {"minimum", lo}, {"maximum", hi}};
      auto g = parse_gbnf(json_schema_to_gbnf(schema));
      for (int v = -150; v <= 150; ++v) {
        EXPECT_EQ(testing::matches(g, std::to_string(v)), v >= lo && v <= hi) << lo << ".." << hi << " " << v;
      }
    }
  }
}

TEST(JsonSchema, StringLengthsAndFormats) {
  check({R"({"type":"string","minLength":2,"maxLength":3})", {R"("ab")", R"("abc")", R"("\n\t")", "\"é你\""},
         {R"("a")", R"("abcd")", R"("")"}});
  check({R"({"type":"string","format":"date"})", {R"("2024-02-28")", R"("1999-12-31")", R"("2000-04-30")"},
         {R"("2024-13-01")", R"("24-01-01")", R"("2024-1-1")", R"("2023-02-29")", R"("2023-11-31")", R"("2023-02-30")"}});
  check({R"({"type":"string","format":"time"})", {R"("23:59:59Z")", R"("08:00:00.123+02:00")"}, {R"("24:00:00Z")", R"("12:00")", R"("23:59:60Z")"}});
  check({R"({"type":"string","format":"date-time"})", {R"("2024-01-02T03:04:05Z")"}, {R"("2024-01-02 03:04:05Z")", R"("2024-01-02")"}});
  check({R"({"type":"string","format":"uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
         {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"}});
  check({R"({"type":"string","format":"email"})", {R"("a.b+c@example.co.uk")", R"("x@y.org")"}, {R"("a@b")", R"("@b.org")", R"("a b@c.org")"}});
  check({R"({"type":"string","format":"uri"})", {R"("https://example.com/a?b=1#c")", R"("urn:isbn:123")"}, {R"("no scheme")", R"("http://a b")"}});
  std::string e = schema_error(R"({"type":"object","properties":{"m":{"type":"string","format":"hostname"}}})");
  EXPECT_NE(e.find("hostname"), std::string::npos) << e;
  EXPECT_NE(e.find("/properties/m/format"), std::string::npos) << e;
}

TEST(JsonSchema, EnumAndConstWithEscapes) {
  check({R"({"enum":["a\"b","back\\slash","new\nline",1,null,true,"é"]})",
         {R"("a\"b")", R"("back\\slash")", R"("new\nline")", "1", "null", "true", "\"é\""},
         {R"("ab")", R"("a"b")", "2", "false", R"("back\slash")"}});
  check({R"({"const":{"k":[1,"x"]}})", {R"({"k":[1,"x"]})"}, {R"({"k":[1]})", R"({"k":[1,"y"]})"}});
  check({R"({"type":"object","properties":{"v":{"const":"fixed"}},"required":["v"]})", {R"({"v":"fixed"})"}, {R"({"v":"other"})"}});
}

TEST(JsonSchema, ObjectsRequiredOptionalAndOrder) {
  const char* s = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},
                      "required":["b"]})";
  check({s,
         {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"b":"x","c":true})", R"({"a":1,"b":"x","c":false})",
          "{\n  \"a\": 1,\n  \"b\": \"x\"\n}", R"({ "b" : "x" })"},
         {R"({})", R"({"a":1})", R"({"b":"x","a":1})", R"({"b":"x","d":1})", R"({"b":"x",})", R"({"b":1})",
          R"({"a":1,,"b":"x"})", R"({,"b":"x"})"}});
  // No required members: the empty object and any ordered subset.
  check({R"({"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}})", {"{}", R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"},
         {R"({"b":2,"a":1})", R"({"a":1,"a":1})"}});
  // Property names needing escapes.
  check({R"({"type":"object","properties":{"q\"k":{"type":"null"}},"required":["q\"k"]})", {R"({"q\"k":null})"}, {R"({"qk":null})"}});
}

// Objects of more than 64 members take the bucketed grammar (json_schema.cpp bucketed_object). Its
// language must be the plain chain's: members in declaration order, each at most once, every
// required one present, extras only after them. Checked against that rule written out here, on
// random member subsets (in order, shuffled, repeated) of a 150-member object with required members
// at the start, in the middle, at a bucket edge and last, with and without extras.
TEST(JsonSchema, ManyMembersKeepOrderRequiredAndUniqueness) {
  const int n = 150;
  const std::set<int> required = {0, 37, 48, 95, 149};  // bucket size 16: 48 starts a bucket
  for (bool extras : {false, true}) {
    json props = json::object(), req = json::array();
    for (int i = 0; i < n; ++i) {
      testing::append_member(props, "k" + std::to_string(i), json{{"type", "integer"}});
      if (required.count(i)) req.push_back("k" + std::to_string(i));
    }
    json schema = {{"type", "object"}, {"properties", props}, {"required", req}};
    schema["additionalProperties"] = extras ? json{{"type", "string"}} : json(false);
    const std::string gbnf = json_schema_to_gbnf(schema);
    ASSERT_NE(gbnf.find("-enter ::="), std::string::npos) << "not bucketed";
    std::shared_ptr<const Grammar> g;
    ASSERT_NO_THROW(g = parse_gbnf(gbnf));
    std::mt19937 rng(99 + extras);
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<int> keys;
      for (int i = 0; i < n; ++i)
        if (required.count(i) || rng() % 4 == 0) keys.push_back(i);
      const int mutation = static_cast<int>(rng() % 5);  // 0, 1: as is; 2: drop one; 3: swap two; 4: repeat one
      if (mutation == 2) keys.erase(keys.begin() + static_cast<long>(rng() % keys.size()));
      if (mutation == 3) std::swap(keys[rng() % keys.size()], keys[rng() % keys.size()]);
      if (mutation == 4) keys.insert(keys.begin() + static_cast<long>(rng() % keys.size()), keys[rng() % keys.size()]);
      bool valid = std::is_sorted(keys.begin(), keys.end()) && std::adjacent_find(keys.begin(), keys.end()) == keys.end();
      for (int r : required) valid = valid && std::count(keys.begin(), keys.end(), r) == 1;
      std::string text = "{";
      for (int k : keys) text += (text.size() > 1 ? ",\"k" : "\"k") + std::to_string(k) + "\":" + std::to_string(k);
      const bool extra = rng() % 3 == 0;
      if (extra) text += ",\"zz\":\"v\"";
      text += "}";
      EXPECT_EQ(testing::matches(g, text), valid && (!extra || extras)) << text;
    }
  }
}

TEST(JsonSchema, AdditionalProperties) {
  check({R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})",
         {R"({"a":1,"x":"y","z":"w"})", R"({"x":"y"})", "{}"}, {R"({"a":1,"x":2})", R"({"x":"y","a":1})"}});
  check({R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":true})", {R"({"a":1,"x":[1]})"}, {R"({"a":1,"x"})", R"({"a":1,"x":})"}});
  // Known gap: an additional key may repeat a declared one ({"a":"s"} passes as an extra member).
  check({R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false})", {R"({"a":1})"}, {R"({"a":1,"x":1})"}});
  // Absent: no extras beside declared properties (OpenAI strict); any object with no properties.
  check({R"({"type":"object","properties":{"a":{"type":"integer"}}})", {R"({"a":1})"}, {R"({"a":1,"x":1})"}});
  check({R"({"type":"object"})", {"{}", R"({"x":{"y":[]}})"}, {"[]", "{"}});
}

TEST(JsonSchema, Arrays) {
  check({R"({"type":"array","items":{"type":"integer"}})", {"[]", "[1]", "[1, 2,3]", "[\n  1,\n  2\n]"}, {"[1,]", "[,]", "[\"a\"]", "[1 2]"}});
  check({R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})", {"[1,2]", "[1,2,3]"}, {"[]", "[1]", "[1,2,3,4]"}});
  check({R"({"type":"array","minItems":1})", {"[1]", R"([{"a":1},"x"])"}, {"[]"}});
  check({R"({"type":"array","maxItems":0})", {"[]"}, {"[1]"}});
  check({R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]})", {R"(["a",1])"}, {R"(["a"])", R"([1,"a"])", R"(["a",1,2])"}});
  check({R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"boolean"}})", {R"(["a"])", R"(["a",true,false])"}, {R"(["a",1])", "[]"}});
}

TEST(JsonSchema, UnionsRefsAndRecursion) {
  check({R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]})", {"1", R"("a")"}, {R"("ab")", "null"}});
  check({R"({"oneOf":[{"type":"null"},{"type":"boolean"}]})", {"null", "true"}, {"1"}});
  check({R"({"allOf":[{"type":"integer","minimum":3}]})", {"3"}, {"2"}});
  check({R"({"$defs":{"pos":{"type":"integer","minimum":1}},"type":"object","properties":{"p":{"$ref":"#/$defs/pos"},
           "q":{"$ref":"#/definitions/neg"}},"definitions":{"neg":{"type":"integer","maximum":-1}},"required":["p","q"]})",
         {R"({"p":1,"q":-1})"}, {R"({"p":0,"q":-1})", R"({"p":1,"q":0})"}});
  const char* tree = R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})";
  check({tree, {R"({"v":1})", R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]})"}, {R"({"v":1,"kids":[{}]})", R"({"kids":[]})"}});
  // A reference to the root itself.
  check({R"({"type":"array","items":{"anyOf":[{"type":"integer"},{"$ref":"#"}]}})", {"[1,[2,[3]],[]]"}, {"[1,[2,[\"x\"]]]"}});
}

TEST(JsonSchema, UnsupportedKeywordsNameKeywordAndPath) {
  struct Bad {
    const char* schema;
    const char* keyword;
    const char* path;
  };
  for (const Bad& b : std::vector<Bad>{
           {R"({"type":"object","properties":{"a":{"type":"object","patternProperties":{}}}})", "patternProperties", "/properties/a"},
           {R"({"type":"string","pattern":"^(?=a)$"})", "pattern", "/pattern"},
           {R"({"type":"object","minProperties":1})", "minProperties", "at /"},
           {R"({"not":{"type":"string"}})", "not", "at /"},
           {R"({"if":{},"then":{}})", "if", "at /"},
           {R"({"type":"integer","multipleOf":2})", "multipleOf", "at /"},
           {R"({"type":"array","items":{"type":"array","uniqueItems":true}})", "uniqueItems", "/items"},
           {R"({"type":"array","contains":{}})", "contains", "at /"},
           {R"({"type":"object","dependentRequired":{}})", "dependentRequired", "at /"},
           {R"({"anyOf":[{"type":"string","pattern":"a\\1"}]})", "pattern", "/anyOf/0"},
           {R"({"$ref":"https://example.com/s.json"})", "$ref", "/$ref"},
           {R"({"$ref":"#/$defs/missing"})", "$ref", "/$ref"},
           {R"({"type":"wat"})", "wat", "/type"},
       }) {
    std::string e = schema_error(b.schema);
    EXPECT_NE(e.find(b.keyword), std::string::npos) << b.schema << " -> " << e;
    EXPECT_NE(e.find(b.path), std::string::npos) << b.schema << " -> " << e;
  }
  EXPECT_NE(schema_error("false").find("false"), std::string::npos);
}

TEST(JsonSchema, WhitespaceIsBounded) {
  auto g = parse_gbnf(json_schema_to_gbnf(json::parse(R"({"type":"array","items":{"type":"integer"}})")));
  Matcher m(g, testing::byte_vocab());
  ASSERT_TRUE(m.accept_bytes("[\n"));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(m.accept_bytes(" ")) << i;
  EXPECT_FALSE(m.allows(' '));
  EXPECT_FALSE(m.allows('\n'));
  EXPECT_TRUE(m.accept_bytes("1"));
  // A single blank, then no more.
  Matcher m2(g, testing::byte_vocab());
  ASSERT_TRUE(m2.accept_bytes("[1 "));
  EXPECT_FALSE(m2.allows(' '));
  EXPECT_TRUE(m2.allows(']'));
}

TEST(JsonSchema, ConverterCombinesSchemasAndRules) {
  SchemaConverter c;
  std::string a = c.add_schema("get weather", json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"));
  std::string b = c.add_schema("get weather", json::parse(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})"));
  EXPECT_NE(a, b);
  c.add_rule("root", "\"<tool_call>\" ( " + gbnf_literal("{\"name\": \"w\", \"arguments\": ") + " " + a + " | " +
                         gbnf_literal("{\"name\": \"n\", \"arguments\": ") + " " + b + " ) \"}\"");
  auto g = parse_gbnf(c.gbnf());
  EXPECT_TRUE(testing::matches(g, R"(<tool_call>{"name": "w", "arguments": {"city":"Paris"}})"));
  EXPECT_TRUE(testing::matches(g, R"(<tool_call>{"name": "n", "arguments": {"n":3}})"));
  EXPECT_FALSE(testing::matches(g, R"(<tool_call>{"name": "n", "arguments": {"city":"Paris"}})"));
}

TEST(JsonSchema, JsonObjectGrammar) {
  auto g = parse_gbnf(json_object_gbnf());
  EXPECT_TRUE(testing::matches(g, R"({"a": [1, -2.5e+3, "x", true, false, null, {}]})"));
  EXPECT_FALSE(testing::matches(g, "[1]"));
  EXPECT_FALSE(testing::matches(g, R"({"a": 1,})"));
  EXPECT_FALSE(testing::matches(g, R"({"a": 1} )"));  // ends at the closing brace
}

TEST(JsonSchema, Patterns) {
  check({R"({"type":"string","pattern":"^[a-z]{2,3}-\\d+$"})", {R"("ab-1")", R"("xyz-0042")"}, {R"("a-1")", R"("abcd-1")", R"("ab-")", R"("AB-1")"}});
  check({R"({"type":"string","pattern":"^(foo|ba[rz])+$"})", {R"("foo")", R"("barbazfoo")"}, {R"("")", R"("fo")", R"("bat")"}});
  // Unanchored: anything around the match (JSON Schema's search semantics).
  check({R"({"type":"string","pattern":"abc"})", {R"("abc")", R"("xxabcyy")", R"("\"abc")"}, {R"("ab")", R"("acb")"}});
  check({R"({"type":"string","pattern":"^abc"})", {R"("abcdef")"}, {R"("xabc")"}});
  // Characters JSON must escape are written escaped; a quote in the class is \" in the output.
  check({R"({"type":"string","pattern":"^[\"x]\\\\$"})", {R"("\"\\")", R"("x\\")"}, {R"(""\")", R"("x\")"}});
  check({R"({"type":"string","pattern":"^a.c$"})", {R"("abc")", R"("a c")", "\"aéc\"", R"("a\"c")"}, {R"("ac")", R"("a\nc")"}});
  check({R"({"type":"string","pattern":"^\\w\\s?\\W$"})", {R"("a !")", R"("_.")", R"("a\t-")"}, {R"("ab")", R"("a  !")"}});
  check({R"({"type":"string","pattern":"^(?:x|y)?z{2}(?<n>q)*$"})", {R"("zz")", R"("xzzqq")"}, {R"("z")", R"("xyzz")"}});
  check({R"({"type":"string","pattern":"^[^a-c]$|^ok$"})", {R"("d")", R"("ok")", R"("\\")"}, {R"("a")", R"("okk")"}});
  for (const char* bad : {R"j({"type":"string","pattern":"(?=a)"})j", R"({"type":"string","pattern":"(a)\\1"})",
                          R"({"type":"string","pattern":"a\\b"})", R"({"type":"string","pattern":"[a"})",
                          R"({"type":"string","pattern":"a^b"})"}) {
    EXPECT_NE(schema_error(bad).find("pattern"), std::string::npos) << bad;
  }
}

TEST(JsonSchema, ExactIntegersBeyondDoubles) {
  check({R"({"type":"integer","minimum":9007199254740993,"maximum":9007199254740993})", {"9007199254740993"},
         {"9007199254740992", "9007199254740994"}});
  // Unbounded above: as many digits as the bound has (at least 16), so a model cannot loop in digits.
  check({R"({"type":"integer","exclusiveMinimum":9223372036854775806})", {"9223372036854775807", "9999999999999999999"},
         {"9223372036854775806", "18446744073709551615"}});
  check({R"({"type":"integer","minimum":-9223372036854775808,"maximum":-9223372036854775807})",
         {"-9223372036854775808", "-9223372036854775807"}, {"-9223372036854775806", "-9223372036854775809"}});
  check({R"({"type":"integer","maximum":18446744073709551615,"minimum":18446744073709551614})",
         {"18446744073709551615", "18446744073709551614"}, {"18446744073709551613", "18446744073709551616"}});
  check({R"({"const":18446744073709551615})", {"18446744073709551615"}, {"18446744073709551614", "1.8446744073709552e+19"}});
}

TEST(JsonSchema, AllOfAnyOfAndRefMerging) {
  check({R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer","minimum":0}},"required":["a"]},
                      {"properties":{"b":{"type":"string"},"a":{"maximum":5}},"required":["b"]}]})",
         {R"({"a":5,"b":"x"})", R"({"a":0,"b":""})"}, {R"({"a":6,"b":"x"})", R"({"a":1})", R"({"b":"x"})"}});
  check({R"({"type":"object","properties":{"k":{"type":"string"},"v":{"type":"integer"}},"anyOf":[{"required":["k"]},{"required":["v"]}]})",
         {R"({"k":"x"})", R"({"v":1})", R"({"k":"x","v":1})"}, {"{}"}});
  check({R"({"$defs":{"n":{"type":"integer"}},"$ref":"#/$defs/n","minimum":3})", {"3", "40"}, {"2", "\"3\""}});
  check({R"({"type":"integer","nullable":true})", {"1", "null"}, {"\"1\""}});
  check({R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"maxItems":1})", {"[1]"}, {"[1,\"a\"]", "[]"}});
  check({R"({"type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"boolean"},"minItems":2,"maxItems":3})",
         {"[1,true]", "[1,true,false]"}, {"[1]", "[1,true,true,true]"}});
}

TEST(JsonSchema, OneOfIsEnforcedOrRefused) {
  // Distinct discriminators: each branch alone; a text mixing them is refused.
  const char* tagged = R"({"oneOf":[{"type":"object","properties":{"t":{"const":"a"},"x":{"type":"integer"}},"required":["t"]},
                                     {"type":"object","properties":{"t":{"const":"b"},"y":{"type":"integer"}},"required":["t"]}]})";
  check({tagged, {R"({"t":"a","x":1})", R"({"t":"b","y":2})"}, {R"({"t":"a","y":1})", R"({"t":"c"})"}});
  check({R"({"oneOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]})", {R"("s")", "1", "null"}, {"1.5"}});
  check({R"({"oneOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false},
                      {"type":"object","properties":{"b":{"type":"integer"}},"required":["b"],"additionalProperties":false}]})",
         {R"({"a":1})", R"({"b":1})"}, {R"({"a":1,"b":1})"}});
  for (const char* overlapping : {R"({"oneOf":[{"type":"integer"},{"type":"number"}]})",
                                  R"({"oneOf":[{"type":"object","properties":{"a":{"type":"integer"}}},{"type":"object"}]})"}) {
    EXPECT_NE(schema_error(overlapping).find("oneOf"), std::string::npos) << overlapping;
    SchemaOptions relaxed;
    relaxed.strict = false;
    EXPECT_NO_THROW(parse_gbnf(json_schema_to_gbnf(json::parse(overlapping), relaxed)));
  }
}

TEST(JsonSchema, NonStrictDropsWhatItCannotEnforceAndSaysSo) {
  SchemaConverter c;
  SchemaOptions relaxed;
  relaxed.strict = false;
  relaxed.where = "tools[0]";
  const std::string rule = c.add_schema("t", json::parse(R"({"type":"object","properties":{"a":{"type":"integer","multipleOf":2},
      "b":{"not":{"type":"null"},"type":"string","pattern":"^x+$"},"c":{"$ref":"https://example.com/x"}},"required":["a","b"],
      "if":{},"then":{}})"), relaxed);
  c.add_rule("root", rule);
  std::string notes;
  for (const auto& n : c.relaxed()) notes += n + "\n";
  for (const char* what : {"'multipleOf' at /properties/a", "'not' at /properties/b", "'if' at /", "'then' at /",
                           "https://example.com/x", "tools[0]: "})
    EXPECT_NE(notes.find(what), std::string::npos) << what << "\n" << notes;
  auto g = parse_gbnf(c.gbnf());
  EXPECT_TRUE(testing::matches(g, R"({"a":3,"b":"xx","c":[1]})")) << "the rest still applies";
  EXPECT_FALSE(testing::matches(g, R"({"a":3,"b":"y"})")) << "pattern kept";
  EXPECT_FALSE(testing::matches(g, R"({"a":"3","b":"x"})")) << "types kept";
}

TEST(JsonSchema, DeepNestingIsALimit) {
  std::string deep = "{\"type\":\"integer\"}";
  for (int i = 0; i < 200; ++i) deep = "{\"type\":\"array\",\"items\":" + deep + "}";
  EXPECT_NE(schema_error(deep.c_str()).find("deeper than the limit of 128"), std::string::npos);
}

}  // namespace
}  // namespace anelm::grammar
