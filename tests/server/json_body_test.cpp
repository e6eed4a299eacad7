// parse_json_body against nlohmann's own parser (the reference): same values, same key order, same
// duplicate-key rule, same rejections; and a 200k-key object that nlohmann's insertion would take
// minutes for.
#include "server/json_body.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "server/api_error.h"

namespace anelm::server {
namespace {

using json = nlohmann::ordered_json;

json reference(const std::string& text) { return json::parse(text, nullptr, /*allow_exceptions=*/false); }

// Random JSON text with repeated keys, escapes, numbers of every kind and objects on both sides of
// the size at which the parser starts indexing keys.
std::string random_doc(std::mt19937& rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const int kind = depth > 3 ? pick(5) : pick(7);
  switch (kind) {
    case 0: return "null";
    case 1: return pick(2) ? "true" : "false";
    case 2: { const char* nums[] = {"0", "-7", "18446744073709551615", "-9223372036854775808", "1.5e300", "2.25"};
              return nums[pick(6)]; }
    case 3: return "\"s\\u00e9" + std::to_string(pick(100)) + "\\n\"";
    case 4: return "\"\"";
    case 5: {
      std::string s = "[";
      for (int i = 0, n = pick(5); i < n; ++i) s += (i ? "," : "") + random_doc(rng, depth + 1);
      return s + "]";
    }
    default: {
      std::string s = "{";
      const int n = pick(2) ? pick(6) : 10 + pick(30);  // small (scanned) and large (indexed) objects
      for (int i = 0; i < n; ++i)
        s += (i ? "," : "") + ("\"k" + std::to_string(pick(n + 2)) + "\":") + random_doc(rng, depth + 1);
      return s + "}";
    }
  }
}

TEST(JsonBody, MatchesNlohmannOnRandomDocuments) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000; ++i) {
    const std::string text = "{\"root\":" + random_doc(rng, 0) + "}";
    const json want = reference(text);
    ASSERT_FALSE(want.is_discarded()) << text;
    const json got = parse_json_body(text, 128);
    ASSERT_EQ(got.dump(), want.dump()) << text;  // dump compares key order too
  }
}

TEST(JsonBody, RepeatedKeyKeepsFirstPositionAndLastValue) {
  std::string text = "{";
  for (int i = 0; i < 40; ++i) text += "\"k" + std::to_string(i % 20) + "\":" + std::to_string(i) + ",";
  text += "\"k3\":[1]}";
  EXPECT_EQ(parse_json_body(text, 8).dump(), reference(text).dump());
  EXPECT_EQ(parse_json_body(text, 8).size(), 20u);
  EXPECT_EQ(parse_json_body(text, 8)["k3"], json::array({1}));
}

TEST(JsonBody, RejectsWhatNlohmannRejectsAndNamesTheProblem) {
  for (const std::string bad : {"", "{", "{\"a\":}", "{\"a\":1,}", "[1,2", "{\"a\":\"\xff\"}", "{\"a\":1} x",
                                "{'a':1}", "{\"a\":nan}"}) {
    EXPECT_TRUE(reference(bad).is_discarded()) << bad;
    try {
      parse_json_body(bad, 8);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_json_body("[1]", 8), ApiError);  // valid, not an object
  std::string deep(200, '[');
  try {
    parse_json_body("{\"a\":" + deep + "}", 128);
    ADD_FAILURE() << "accepted 200 levels";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("deeper than 128"), std::string::npos) << e.what();
  }
}

TEST(JsonBody, AnObjectOf200kKeysKeepsItsOrder) {
  // nlohmann's own parse scans every earlier key on each insert: ~2e10 comparisons here.
  std::string text = "{\"properties\":{";
  for (int i = 0; i < 200000; ++i) text += (i ? ",\"p" : "\"p") + std::to_string(i) + "\":{\"type\":\"string\"}";
  text += "}}";
  const json j = parse_json_body(text, 8);
  const json& p = j["properties"];
  ASSERT_EQ(p.size(), 200000u);
  int i = 0;
  for (const auto& [key, value] : p.items()) {
    ASSERT_EQ(key, "p" + std::to_string(i++));
    ASSERT_EQ(value["type"], "string");
  }
}

}  // namespace
}  // namespace anelm::server
