// jinja2's semantics, one small template at a time: every filter, test, method and operator the
// engine supports, loops, macros, namespaces, whitespace control, tojson, undefined values and the
// sandbox. The expectations (jinja_semantics_cases.inc) are what jinja2 3.1.6 renders in
// transformers' environment, produced by tests/data/jinja/gen_semantics.py; an expectation
// starting with "!" is the error jinja2 raises ("Class: message"; ours may add the line).
#include <chrono>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "jinja/jinja.h"

namespace {

using anelm::jinja::Error;
using anelm::jinja::Raised;
using anelm::jinja::Template;

struct SemanticsCase {
  const char* source;
  const char* want;
};

#include "tests/jinja/jinja_semantics_cases.inc"

// 2024-07-26T10:00:00Z, as the generator's strftime_now.
const auto kNow = std::chrono::system_clock::from_time_t(1721988000);

std::string render(const std::string& source, const nlohmann::ordered_json& ctx) {
  try {
    return Template::parse(source).render(ctx, kNow);
  } catch (const Raised& e) {
    return std::string("!raise_exception: ") + e.what();
  } catch (const Error& e) {
    return std::string("!") + e.what();
  }
}

class JinjaSemantics : public ::testing::TestWithParam<size_t> {};

TEST_P(JinjaSemantics, RendersAsJinja2) {
  const SemanticsCase& c = kCases[GetParam()];
  const std::string got = render(c.source, nlohmann::ordered_json::parse(kContextJson));
  const std::string want = c.want;
  if (want.rfind("!TemplateSyntaxError", 0) == 0) {
    // Malformed templates: the class only (jinja2's wording of syntax errors is not reproduced).
    EXPECT_EQ(got.substr(0, want.find(':')), want.substr(0, want.find(':'))) << "template: " << c.source << "\n" << got;
  } else if (!want.empty() && want[0] == '!') {
    // The class and jinja2's message; ours may append " (line N)".
    EXPECT_EQ(got.substr(0, want.size()), want) << "template: " << c.source;
    EXPECT_TRUE(got.size() == want.size() || got.compare(want.size(), 7, " (line ") == 0) << got;
  } else {
    EXPECT_EQ(got, want) << "template: " << c.source;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, JinjaSemantics, ::testing::Range<size_t>(0, std::size(kCases)));

TEST(JinjaSemanticsTable, CoversTheGeneratedCases) { EXPECT_GE(std::size(kCases), 170u); }

}  // namespace
