// Pre-tokenizer split rules (Qwen2, Llama-3, GPT-2) on hand-checked cases.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/tokenizer/vocab_vectors_util.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenizer.h"

namespace anelm::tok {
namespace {

std::vector<std::string> split(std::string_view text, PreTokenizer kind) {
  std::vector<std::string> out;
  for (auto w : pre_tokenize(text, kind)) out.emplace_back(w);
  return out;
}
using V = std::vector<std::string>;

TEST(PreTokenizer, Qwen2DigitsAreSingle) {
  EXPECT_EQ(split("abc 12345", PreTokenizer::kQwen2), (V{"abc", " ", "1", "2", "3", "4", "5"}));
}

TEST(PreTokenizer, Llama3DigitsInGroupsOfThree) {
  EXPECT_EQ(split("12345 x", PreTokenizer::kLlama3), (V{"123", "45", " x"}));
}

TEST(PreTokenizer, ContractionsCaseInsensitive) {
  EXPECT_EQ(split("I'M you'RE we'll", PreTokenizer::kQwen2), (V{"I", "'M", " you", "'RE", " we", "'ll"}));
  EXPECT_EQ(split("I'M", PreTokenizer::kGpt2), (V{"I", "'", "M"}));  // GPT-2's are case-sensitive
}

TEST(PreTokenizer, WhitespaceRules) {
  // \s+(?!\S) leaves one space for the next word; \s*[\r\n]+ ends at the last newline.
  EXPECT_EQ(split("a   b", PreTokenizer::kQwen2), (V{"a", "  ", " b"}));
  EXPECT_EQ(split("a \n\n  b", PreTokenizer::kQwen2), (V{"a", " \n\n", " ", " b"}));
  EXPECT_EQ(split("a  ", PreTokenizer::kQwen2), (V{"a", "  "}));
  EXPECT_EQ(split("x!!\n\ny", PreTokenizer::kQwen2), (V{"x", "!!\n\n", "y"}));
  EXPECT_EQ(split("\tword", PreTokenizer::kQwen2), (V{"\tword"}));
}

TEST(PreTokenizer, UnicodeClasses) {
  // Combining marks (Mn) are not letters: Khmer vowel signs split words.
  EXPECT_EQ(split("café 你好 ½", PreTokenizer::kQwen2), (V{"café", " 你好", " ", "½"}));
}

TEST(PreTokenizer, InvalidBytesKept) {
  const std::string text = "a\xFF\xFE b";
  std::string joined;
  for (auto w : pre_tokenize(text, PreTokenizer::kQwen2)) joined += w;
  EXPECT_EQ(joined, text);
}

TEST(ByteLevel, MappingRoundTrip) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_level::decode(byte_level::encode(all)), all);
  EXPECT_EQ(byte_level::encode(" "), "Ġ");
  EXPECT_EQ(byte_level::encode("\n"), "Ċ");
}

// 300 random strings split by the reference regexes with Python's `regex` module
// (tests/data/tokenizer/make_pretokenizer_cases.py).
TEST(PreTokenizer, MatchesReferenceRegexes) {
  const auto file = std::filesystem::path(__FILE__).parent_path().parent_path() / "data/tokenizer/pretokenizer_cases.json";
  const auto j = nlohmann::json::parse(testing::read_text_file(file));
  const std::pair<const char*, PreTokenizer> kinds[] = {
      {"qwen2", PreTokenizer::kQwen2}, {"llama3", PreTokenizer::kLlama3}, {"gpt2", PreTokenizer::kGpt2}};
  int checked = 0;
  for (const auto& c : j["cases"]) {
    for (const auto& [name, kind] : kinds) {
      EXPECT_EQ(split(c["text"].get<std::string>(), kind), c[name].get<V>()) << name << ": " << c["text"].dump();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 900);
}

}  // namespace
}  // namespace anelm::tok

namespace anelm::tok {
namespace {

// Qwen3.5's regex keeps combining marks with their letters ([\p{L}\p{M}]+) and out of punctuation
// runs; Qwen2's splits them off as "other".
TEST(PreTokenizer, Qwen35KeepsCombiningMarksInWords) {
  const std::string text = "e\xcc\x81t\xc3\xa9 \xe0\xa4\x95\xe0\xa4\xbf!";  // e + U+0301, "té", Devanagari ka + vowel sign i
  const auto q35 = pre_tokenize(text, PreTokenizer::kQwen35);
  const auto q2 = pre_tokenize(text, PreTokenizer::kQwen2);
  ASSERT_EQ(q35.size(), 3u);
  EXPECT_EQ(q35[0], "e\xcc\x81t\xc3\xa9");
  EXPECT_EQ(q35[1], " \xe0\xa4\x95\xe0\xa4\xbf");
  EXPECT_EQ(q35[2], "!");
  EXPECT_GT(q2.size(), q35.size());
}

}  // namespace
}  // namespace anelm::tok
