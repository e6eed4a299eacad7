// Hostile templates: every one ends quickly with jinja::Error naming the limit it hit, never a
// crash, a hang or unbounded memory (run under ASan/valgrind locally to check the last two).
#include <chrono>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "jinja/jinja.h"

namespace {

using anelm::jinja::Error;
using anelm::jinja::Template;
using nlohmann::ordered_json;

const auto kNow = std::chrono::system_clock::from_time_t(1721988000);
constexpr double kMaxSeconds = 10;  // generous: the render budget is 2 s, parsing is linear

// Parses and renders; returns the error message ("" if none) and checks the wall time.
std::string run(const std::string& source, const ordered_json& ctx = ordered_json::object()) {
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    Template::parse(source).render(ctx, kNow);
  } catch (const Error& e) {
    error = e.what();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(s, kMaxSeconds) << source.substr(0, 120);
  return error;
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t k = 0; k < n; ++k) out += s;
  return out;
}

#define EXPECT_ERROR_HAS(source, text) EXPECT_NE(run(source).find(text), std::string::npos) << run(source)

TEST(JinjaLimits, NestedLoopsRunOutOfSteps) {
  EXPECT_ERROR_HAS("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "LimitError");
  EXPECT_ERROR_HAS("{% for a in range(100000) %}{% for b in range(100000) %}{{ a }}{% endfor %}{% endfor %}", "LimitError");
}

TEST(JinjaLimits, ExponentialStringGrowthHitsTheSizeLimit) {
  EXPECT_ERROR_HAS("{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                   "exceeds the output limit");
  EXPECT_ERROR_HAS("{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                   "exceeds the output limit");
  EXPECT_ERROR_HAS("{{ 'x' * 1000000000000 }}", "exceeds the output limit");
  EXPECT_ERROR_HAS("{{ [1] * 1000000000000 }}", "LimitError");
  EXPECT_ERROR_HAS("{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
                   "items exceeds the limit");
  EXPECT_ERROR_HAS("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}",
                   "LimitError");
  EXPECT_ERROR_HAS("{{ ('x' * 4000000) | list | length }}", "items exceeds the limit");
  EXPECT_ERROR_HAS("{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = [ns.s, ns.s] | join(ns.s) %}{% endfor %}",
                   "LimitError");
}

TEST(JinjaLimits, HugeOutputStops) {
  EXPECT_ERROR_HAS("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "exceeds the output limit");
}

TEST(JinjaLimits, HugeRangeIsRefused) {
  EXPECT_ERROR_HAS("{{ range(1000000000) | length }}", "OverflowError: Range too big");
  EXPECT_ERROR_HAS("{% for i in range(-9223372036854775807, 9223372036854775807) %}{% endfor %}", "OverflowError");
}

TEST(JinjaLimits, RecursiveMacrosStopAtTheDepthLimit) {
  EXPECT_ERROR_HAS("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "RecursionError: maximum recursion depth exceeded");
  EXPECT_ERROR_HAS("{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(0) }}", "RecursionError");
  // Exponential fan-out without depth: the step budget.
  EXPECT_ERROR_HAS("{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}", "LimitError");
}

TEST(JinjaLimits, DeepExpressionsAreRefusedByTheParser) {
  EXPECT_ERROR_HAS("{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}", "nests deeper than");
  EXPECT_ERROR_HAS("{{ " + repeat("[", 100000) + repeat("]", 100000) + " }}", "nests deeper than");
  EXPECT_ERROR_HAS("{{ " + repeat("{'a': ", 50000) + "1" + repeat("}", 50000) + " }}", "nests deeper than");
  EXPECT_ERROR_HAS("{{ " + repeat("not ", 100000) + "1 }}", "nests deeper than");
  EXPECT_ERROR_HAS("{{ " + repeat("-", 100000) + "1 }}", "nests deeper than");
  // Chains the parser builds with loops, not recursion.
  EXPECT_ERROR_HAS("{{ 1" + repeat(" + 1", 200000) + " }}", "nests deeper than");
  EXPECT_ERROR_HAS("{{ 'a'" + repeat(" ~ 'a'", 100000) + " }}", "nests deeper than");
  EXPECT_ERROR_HAS("{{ x" + repeat(".a", 200000) + " }}", "nests deeper than");
  EXPECT_ERROR_HAS("{{ x" + repeat("[0]", 200000) + " }}", "nests deeper than");
  EXPECT_ERROR_HAS("{{ x" + repeat(" | trim", 100000) + " }}", "nests deeper than");
  EXPECT_ERROR_HAS("{{ x" + repeat("()", 200000) + " }}", "nests deeper than");
  EXPECT_ERROR_HAS("{{ 1" + repeat(" if 1 else 1", 50000) + " }}", "nests deeper than");
}

TEST(JinjaLimits, DeepStatementsAreRefusedByTheParser) {
  EXPECT_ERROR_HAS(repeat("{% if true %}", 30000) + repeat("{% endif %}", 30000), "nests deeper than");
  EXPECT_ERROR_HAS(repeat("{% for x in [1] %}", 50000), "nests deeper than");
  EXPECT_ERROR_HAS(repeat("{% macro m() %}", 50000), "nests deeper than");
}

TEST(JinjaLimits, DeepValuesAreRefused) {
  EXPECT_ERROR_HAS("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}",
                   "nests containers deeper than");
  // A namespace containing itself (Python allows it; here it would leak): refused.
  EXPECT_ERROR_HAS("{% set ns = namespace(x=1) %}{% set ns.x = [ns] %}{{ ns }}", "a namespace cannot contain itself");
  EXPECT_ERROR_HAS("{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = {'k': [b]} %}", "cannot contain itself");
  EXPECT_EQ(run("{% set a = namespace(x=1) %}{% set b = namespace(a=a) %}{% set b.c = [a] %}{{ b.c[0].x }}"), "");
  // Deep JSON in the context (a client's tool arguments): 2000 levels (nlohmann copies recursively).
  ordered_json deep = 1;
  for (int k = 0; k < 2000; ++k) deep = ordered_json::array({std::move(deep)});
  std::string error;
  try {
    Template::parse("{{ x }}").render({{"x", deep}}, kNow);
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("nests containers deeper than"), std::string::npos) << error;
}

TEST(JinjaLimits, HugeTemplateIsRefused) {
  EXPECT_ERROR_HAS(std::string(2 << 20, 'a'), "LimitError: the template has 2097152 bytes");
}

TEST(JinjaLimits, UnterminatedConstructsAreSyntaxErrors) {
  for (const char* s : {"{{ x", "{{ x }", "{% if x %}", "{% if x", "{{ 'abc }}", "{{ \"abc", "{# comment", "{% raw %}abc",
                        "{% for x in %}{% endfor %}", "{% macro %}", "{{ }}", "{% %}", "{% endif %}", "{{ x | }}", "{{ (1 }}",
                        "{{ [1, 2 }}", "{{ {'a' }}", "{% set %}", "{{ x is }}", "{{ 'a\\u12' }}", "{{ x[ }}", "{% for %}",
                        "{% if x %}{% elif %}{% endif %}", "{% filter %}{% endfilter %}", "{{ 1 if }}"}) {
    const std::string e = run(s);
    EXPECT_EQ(e.rfind("TemplateSyntaxError", 0), 0u) << s << " -> " << e;
  }
}

// Random bytes and random token soup: every input parses and renders or throws Error.
TEST(JinjaLimits, GarbageNeverCrashes) {
  std::mt19937 rng(12345);
  const char* pieces[] = {"{{", "}}", "{%", "%}", "{#", "#}", "-", "+", "if", "for", "in", "endif", "endfor", "set", "=",
                          "x", "'", "\"", "(", ")", "[", "]", "{", "}", ",", ".", "|", "trim", "1", "2.5", " ", "\n",
                          "not", "is", "defined", "~", "*", "macro", "endmacro", "raw", "endraw", "\\", "\xff", "\x00"};
  int errors = 0;
  for (int n = 0; n < 3000; ++n) {
    std::string s;
    const int len = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < len; ++k) {
      if (n % 3 == 0) s += static_cast<char>(rng() % 256);
      else s += pieces[rng() % std::size(pieces)];
    }
    errors += !run(s, {{"x", ordered_json::array({1, "a"})}}).empty();
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
