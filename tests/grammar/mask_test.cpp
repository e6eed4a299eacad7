// The vocabulary mask over the real Qwen2.5 vocabulary equals a naive per-token check, at several
// states of a JSON Schema grammar; prints how long a full mask takes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "grammar/grammar.h"
#include "tests/grammar/grammar_test_util.h"

namespace anelm::grammar {
namespace {

const testing::QwenVocab* qwen() {
  static const auto q = testing::load_qwen_vocab();
  return q ? &*q : nullptr;
}

// Naive reference: a copy of the matcher fed each token's bytes.
std::vector<uint8_t> naive_mask(const Matcher& m, const testing::QwenVocab& q) {
  std::vector<uint8_t> mask(q.bytes.size(), 0);
  for (size_t i = 0; i < q.bytes.size(); ++i) {
    bool eog = std::find(q.eog.begin(), q.eog.end(), static_cast<int>(i)) != q.eog.end();
    if (eog) {
      mask[i] = m.can_end();
    } else if (!q.bytes[i].empty()) {
      Matcher copy = m;
      mask[i] = copy.accept_bytes(q.bytes[i]);
    }
  }
  return mask;
}

double time_mask_ms(const Matcher& m, std::vector<uint8_t>& mask, int* count) {
  auto t0 = std::chrono::steady_clock::now();
  *count = m.fill_mask(mask);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

TEST(Mask, EqualsNaiveCheckOnQwenVocab) {
  const auto* q = qwen();
  if (!q) GTEST_SKIP() << "shared/models/qwen2.5-0.5b-instruct not found";
  auto schema = nlohmann::ordered_json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 40},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "tags": {"type": "array", "items": {"type": "string"}},
      "city": {"type": "string"},
      "kind": {"enum": ["cat", "dog", "mouse \"m\""]}
    },
    "required": ["name", "age"]
  })");
  auto g = parse_gbnf(json_schema_to_gbnf(schema));
  Matcher m(g, q->vocab);
  // Prefixes that stop in interesting places: start, inside a key, inside a string value (also
  // mid code point), inside a number, between members, inside an array, at the end.
  std::vector<std::pair<std::string, std::string>> steps = {
      {"start", ""},         {"after {", "{"},         {"in key", "\"na"},
      {"in string", "me\": \"Bo"}, {"mid code point", "\xE4"}, {"string again", "\xBD\xA0 x"},
      {"in number", "\", \"age\": 4"}, {"after number", "2"}, {"in array", ", \"tags\": [\"a\", "},
      {"after array", "\"b\"]"}, {"in enum", ", \"kind\": \"mo"}, {"end", "use \\\"m\\\"\"}"}};
  for (const auto& [label, text] : steps) {
    ASSERT_TRUE(m.accept_bytes(text)) << label;
    std::vector<uint8_t> mask(q->bytes.size());
    int count = 0;
    double cold = time_mask_ms(m, mask, &count);
    double warm = time_mask_ms(m, mask, &count);
    auto expect = naive_mask(m, *q);
    size_t differ = 0;
    for (size_t i = 0; i < mask.size(); ++i) differ += mask[i] != expect[i];
    EXPECT_EQ(differ, 0u) << label;
    int expected_count = 0;
    for (auto b : expect) expected_count += b;
    EXPECT_EQ(count, expected_count) << label;
    std::printf("[ mask     ] %-15s allowed %6d of %zu, fill_mask %.2f ms first, %.2f ms again\n", label.c_str(), count,
                mask.size(), cold, warm);
  }
  EXPECT_TRUE(m.done());
}

TEST(Mask, AnyJsonObjectOnQwenVocab) {
  const auto* q = qwen();
  if (!q) GTEST_SKIP() << "shared/models/qwen2.5-0.5b-instruct not found";
  auto g = parse_gbnf(json_object_gbnf());
  Matcher m(g, q->vocab);
  std::vector<uint8_t> mask(q->bytes.size());
  for (std::string text : {"", "{\"key\": [1, 2.5e3, true, null, {\"x\": \"y", "\"}], \"n\":", " -0.5}"}) {
    ASSERT_TRUE(m.accept_bytes(text)) << text;
    int count = 0;
    double ms = time_mask_ms(m, mask, &count);
    EXPECT_EQ(mask, naive_mask(m, *q)) << text;
    std::printf("[ mask     ] json_object after %3zu bytes: allowed %6d, %.2f ms\n", text.size(), count, ms);
  }
  EXPECT_TRUE(m.done());
  // Nothing but end of generation once the object is closed.
  int count = m.fill_mask(mask);
  EXPECT_EQ(count, static_cast<int>(q->eog.size()));
}

TEST(Mask, GenerationLoopStaysConsistent) {
  const auto* q = qwen();
  if (!q) GTEST_SKIP() << "shared/models/qwen2.5-0.5b-instruct not found";
  // Drive a generation: always take the lowest allowed token that is not whitespace-only; every
  // taken token must be allowed by allows(), the mask and accept_token alike.
  auto schema = nlohmann::ordered_json::parse(R"({"type":"object","properties":{"a":{"type":"integer","minimum":-5,"maximum":120},
      "b":{"type":"boolean"}},"required":["a","b"]})");
  Matcher m(parse_gbnf(json_schema_to_gbnf(schema)), q->vocab);
  std::vector<uint8_t> mask(q->bytes.size());
  std::string text;
  for (int step = 0; step < 64 && !m.done(); ++step) {
    ASSERT_GT(m.fill_mask(mask), 0);
    int pick = -1;
    for (size_t i = 0; i < mask.size() && pick < 0; ++i) {
      if (mask[i] && q->bytes[i].find_first_not_of(" \n\t") != std::string::npos) pick = static_cast<int>(i);
    }
    ASSERT_GE(pick, 0);
    ASSERT_TRUE(m.allows(pick));
    ASSERT_TRUE(m.accept_token(pick));
    text += q->bytes[pick];
  }
  EXPECT_TRUE(m.done()) << text;
  auto parsed = nlohmann::json::parse(text);
  EXPECT_GE(parsed["a"].get<int>(), -5);
  EXPECT_LE(parsed["a"].get<int>(), 120);
  EXPECT_TRUE(parsed["b"].is_boolean());
}

}  // namespace
}  // namespace anelm::grammar
