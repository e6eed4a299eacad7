// Bounded JSON Schema numbers against exact arithmetic: for every pair of bounds from a set of
// decimals (each inclusive, exclusive or absent), every candidate text must be accepted exactly
// when its value lies in the range (values compared as integers in millionths, not doubles).
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_number_range.h"
#include "tests/grammar/grammar_test_util.h"

namespace anelm::grammar {
namespace {

using json = nlohmann::ordered_json;

// Millionths of a decimal text with at most 6 fraction digits and no exponent.
long long millionths(const std::string& t) {
  const bool neg = t[0] == '-';
  const std::string s = neg ? t.substr(1) : t;
  const size_t dot = s.find('.');
  long long v = std::stoll(s.substr(0, dot)) * 1000000;
  if (dot != std::string::npos) {
    std::string f = s.substr(dot + 1);
    f.resize(6, '0');
    v += std::stoll(f);
  }
  return neg ? -v : v;
}

TEST(NumberRange, ParseDecimalIsExact) {
  auto d = parse_decimal("-2.50E1");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->negative);
  EXPECT_EQ(static_cast<long long>(d->integer), 25);
  EXPECT_EQ(d->fraction, "");
  d = parse_decimal("1.25e-3");
  ASSERT_TRUE(d);
  EXPECT_EQ(static_cast<long long>(d->integer), 0);
  EXPECT_EQ(d->fraction, "00125");
  d = parse_decimal("9007199254740993.5");
  ASSERT_TRUE(d);
  EXPECT_EQ(int_bound_text(d->integer), "9007199254740993");
  EXPECT_EQ(d->fraction, "5");
  d = parse_decimal("-0.0");
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->negative);
  EXPECT_FALSE(parse_decimal("1e400"));
  EXPECT_FALSE(parse_decimal("1.5x"));
}

TEST(NumberRange, EveryBoundPairAgainstExactComparison) {
  const std::vector<std::string> bounds = {"-2.5", "-1", "-0.05", "0", "0.25", "1", "1.5", "3", "10"};
  std::vector<std::string> texts;
  for (const char* sign : {"", "-"})
    for (const char* ip : {"0", "1", "2", "3", "9", "10", "11"})
      for (const char* fp : {"", ".0", ".00", ".05", ".049", ".051", ".1", ".125", ".25", ".250", ".250001", ".4",
                             ".5", ".50", ".500001", ".75", ".9"})
        texts.push_back(std::string(sign) + ip + fp);
  const std::vector<std::string> malformed = {"01", "1.", ".5", "+1", "1e0", "0.5e1", "--1", "1.2.3", ""};
  int checked = 0;
  for (int li = -1; li < static_cast<int>(bounds.size()); ++li) {
    for (int hi = -1; hi < static_cast<int>(bounds.size()); ++hi) {
      for (int flags = 0; flags < 4; ++flags) {
        const bool lo_ex = flags & 1, hi_ex = flags & 2;
        if ((li < 0 && lo_ex) || (hi < 0 && hi_ex) || (li < 0 && hi < 0)) continue;
        json schema = {{"type", "number"}};
        if (li >= 0) schema[lo_ex ? "exclusiveMinimum" : "minimum"] = json::parse(bounds[li]);
        if (hi >= 0) schema[hi_ex ? "exclusiveMaximum" : "maximum"] = json::parse(bounds[hi]);
        const long long lo_v = li >= 0 ? millionths(bounds[li]) : 0, hi_v = hi >= 0 ? millionths(bounds[hi]) : 0;
        const bool empty = li >= 0 && hi >= 0 && (lo_v > hi_v || (lo_v == hi_v && (lo_ex || hi_ex)));
        SchemaOptions strict;
        strict.strict = true;
        if (empty) {  // nothing fits: a strict schema is refused, naming the range
          EXPECT_THROW(json_schema_to_gbnf(schema, strict), SchemaError) << schema.dump();
          continue;
        }
        const std::string gbnf = json_schema_to_gbnf(schema, strict);
        std::shared_ptr<const Grammar> g;
        ASSERT_NO_THROW(g = parse_gbnf(gbnf)) << gbnf;
        for (const std::string& t : texts) {
          const long long v = millionths(t);
          bool in = (li < 0 || (lo_ex ? v > lo_v : v >= lo_v)) && (hi < 0 || (hi_ex ? v < hi_v : v <= hi_v));
          if (t[0] == '-' && v == 0) in = false;  // "-0" forms are left out (zero is written "0")
          EXPECT_EQ(testing::matches(g, t), in) << schema.dump() << " text " << t << "\n" << gbnf;
          ++checked;
        }
        for (const std::string& t : malformed) EXPECT_FALSE(testing::matches(g, t)) << schema.dump() << " " << t;
      }
    }
  }
  EXPECT_GT(checked, 40000);
}

}  // namespace
}  // namespace anelm::grammar
