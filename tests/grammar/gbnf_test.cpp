// GBNF parsing and matching: accepted and refused texts, errors with their location, bounds.
#include <gtest/gtest.h>

#include <chrono>

#include "grammar/grammar.h"
#include "tests/grammar/grammar_test_util.h"

namespace anelm::grammar {
namespace {

using testing::byte_vocab;
using testing::matches_gbnf;

std::string error_of(const std::string& gbnf) {
  try {
    parse_gbnf(gbnf);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gbnf, LiteralsAlternativesAndGroups) {
  std::string g = "root ::= \"ab\" | \"c\" ( \"d\" | \"e\" )\n";
  EXPECT_TRUE(matches_gbnf(g, "ab"));
  EXPECT_TRUE(matches_gbnf(g, "cd"));
  EXPECT_TRUE(matches_gbnf(g, "ce"));
  EXPECT_FALSE(matches_gbnf(g, "c"));
  EXPECT_FALSE(matches_gbnf(g, "abd"));
  EXPECT_FALSE(matches_gbnf(g, "cf"));
  EXPECT_FALSE(matches_gbnf(g, ""));
}

TEST(Gbnf, MultiLineRulesCommentsAndReferences) {
  std::string g = R"(# a comment line
root ::= greeting " " name   # trailing comment
  | "bye"
greeting ::=
    "hi" | "hello"
name ::= [a-z]+
)";
  EXPECT_TRUE(matches_gbnf(g, "hi bob"));
  EXPECT_TRUE(matches_gbnf(g, "hello x"));
  EXPECT_TRUE(matches_gbnf(g, "bye"));
  EXPECT_FALSE(matches_gbnf(g, "hi Bob"));
  EXPECT_FALSE(matches_gbnf(g, "hi "));
}

TEST(Gbnf, Escapes) {
  std::string g = R"(root ::= "\n\t\"\\" "\x41" "\u00e9" "\U0001F600")";
  EXPECT_TRUE(matches_gbnf(g, "\n\t\"\\A\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_FALSE(matches_gbnf(g, "\n\t\"\\A\xC3\xA9"));
}

TEST(Gbnf, CharClassesOverCodePoints) {
  std::string g = R"(root ::= [a-c0-2] [^a-z\n] [\u00e0-\u00ff] .)";
  EXPECT_TRUE(matches_gbnf(g, "a" "Z" "\xC3\xA9" "x"));
  EXPECT_TRUE(matches_gbnf(g, "2" "\xE4\xBD\xA0" "\xC3\xA0" "\xF0\x9F\x98\x80"));  // 你, à, 😀
  EXPECT_FALSE(matches_gbnf(g, "d" "Z" "\xC3\xA9" "x"));
  EXPECT_FALSE(matches_gbnf(g, "a" "q" "\xC3\xA9" "x"));
  EXPECT_FALSE(matches_gbnf(g, "a" "\n" "\xC3\xA9" "x"));
  EXPECT_FALSE(matches_gbnf(g, "a" "Z" "\xC4\x80" "x"));  // U+0100 outside the class
  // Invalid UTF-8 never matches '.' or a negated class: overlong, surrogate, lone continuation.
  EXPECT_FALSE(matches_gbnf("root ::= .", "\xC0\x80"));
  EXPECT_FALSE(matches_gbnf("root ::= [^a]", "\xED\xA0\x80"));
  EXPECT_FALSE(matches_gbnf("root ::= .", "\x80"));
  EXPECT_FALSE(matches_gbnf("root ::= .", "\xF4\x90\x80\x80"));  // past U+10FFFF
}

TEST(Gbnf, PartialCodePointStaysPending) {
  auto g = parse_gbnf("root ::= [\\u4e00-\\u9fff] \"!\"");
  Matcher m(g, byte_vocab());
  ASSERT_TRUE(m.accept_bytes("\xE4"));  // first byte of 你 (U+4F60)
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.allows('!'));
  EXPECT_FALSE(m.allows(0xE4));  // a lead byte cannot follow a lead byte
  ASSERT_TRUE(m.accept_bytes("\xBD"));
  EXPECT_FALSE(m.accept_bytes("\x41"));  // state unchanged after a refusal
  ASSERT_TRUE(m.accept_bytes("\xA0!"));
  EXPECT_TRUE(m.done());
  // A lead byte whose code points all fall outside the class is refused at once.
  Matcher m2(g, byte_vocab());
  EXPECT_FALSE(m2.accept_bytes("\xC3"));
}

TEST(Gbnf, Repetitions) {
  std::string g = "root ::= \"a\"{2,4} \"b\"{3} \"c\"{2,} \"d\"{,1} (\"x\" \"y\")*\n";
  EXPECT_TRUE(matches_gbnf(g, "aabbbcc"));
  EXPECT_TRUE(matches_gbnf(g, "aaaabbbcccccdxyxy"));
  EXPECT_FALSE(matches_gbnf(g, "abbbcc"));
  EXPECT_FALSE(matches_gbnf(g, "aaaaabbbcc"));
  EXPECT_FALSE(matches_gbnf(g, "aabbcc"));
  EXPECT_FALSE(matches_gbnf(g, "aabbbc"));
  EXPECT_FALSE(matches_gbnf(g, "aabbbccddx"));
  EXPECT_FALSE(matches_gbnf(g, "aabbbccx"));
  EXPECT_TRUE(matches_gbnf("root ::= [0-9]+ \"?\"? \"-\"*", "123?--"));
  EXPECT_FALSE(matches_gbnf("root ::= [0-9]+", ""));
}

TEST(Gbnf, CanEndAndDone) {
  auto g = parse_gbnf("root ::= \"a\" \"b\"?");
  Matcher m(g, byte_vocab());
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.allows(256));  // end of generation only when the grammar can end
  ASSERT_TRUE(m.accept_token('a'));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.done());
  EXPECT_TRUE(m.allows(256));
  ASSERT_TRUE(m.accept_token('b'));
  EXPECT_TRUE(m.done());
  std::vector<uint8_t> mask(257);
  EXPECT_EQ(m.fill_mask(mask), 1);
  EXPECT_EQ(mask[256], 1);
}

TEST(Gbnf, RecursionIsFollowed) {
  std::string g = "root ::= \"(\" root \")\" | \"x\"";
  EXPECT_TRUE(matches_gbnf(g, "x"));
  EXPECT_TRUE(matches_gbnf(g, "((((x))))"));
  EXPECT_FALSE(matches_gbnf(g, "((x)"));
  std::string deep = std::string(5000, '(') + "x" + std::string(5000, ')');
  EXPECT_TRUE(matches_gbnf(g, deep));
}

TEST(Gbnf, SyntaxErrorsNameLineAndRule) {
  std::string e = error_of("root ::= \"a\"\nitem ::= \"b\" )\n");
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("'item'"), std::string::npos) << e;
  e = error_of("root ::= \"abc");
  EXPECT_NE(e.find("unterminated"), std::string::npos) << e;
  e = error_of("root ::= [a-");
  EXPECT_NE(e.find("line 1"), std::string::npos) << e;
  e = error_of("root = \"a\"");
  EXPECT_NE(e.find("::="), std::string::npos) << e;
  e = error_of("root ::= \"\\q\"");
  EXPECT_NE(e.find("escape"), std::string::npos) << e;
  e = error_of("root ::= \"a\"{3,2}");
  EXPECT_NE(e.find("n < m"), std::string::npos) << e;
  e = error_of("root ::= \"a\"\nroot ::= \"b\"");
  EXPECT_NE(e.find("twice"), std::string::npos) << e;
}

TEST(Gbnf, UndefinedRuleAndMissingRoot) {
  std::string e = error_of("root ::= \"a\" thing\n");
  EXPECT_NE(e.find("undefined rule 'thing'"), std::string::npos) << e;
  EXPECT_NE(e.find("line 1:14"), std::string::npos) << e;
  e = error_of("start ::= \"a\"");
  EXPECT_NE(e.find("'root'"), std::string::npos) << e;
  EXPECT_NO_THROW(parse_gbnf("start ::= \"a\"", "start"));
}

TEST(Gbnf, LeftRecursionRefused) {
  std::string e = error_of("root ::= root \"a\" | \"b\"");
  EXPECT_NE(e.find("left recursion"), std::string::npos) << e;
  e = error_of("root ::= a\na ::= b? c\nb ::= \"x\"\nc ::= a \"y\" | \"z\"");
  EXPECT_NE(e.find("left recursion"), std::string::npos) << e;
  EXPECT_NE(e.find("'a'"), std::string::npos) << e;
  e = error_of("root ::= (\"a\"?)*");  // a repetition that can match nothing forever
  EXPECT_NE(e.find("left recursion"), std::string::npos) << e;
  EXPECT_NO_THROW(parse_gbnf("root ::= \"a\" root | \"b\""));  // right recursion is fine
}

TEST(Gbnf, HostileInputsFailFast) {
  auto start = std::chrono::steady_clock::now();
  EXPECT_NE(error_of("root ::= \"a\"{100000}").find("repetition count"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{99999999999999999999}").find("repetition count"), std::string::npos);
  // Nested repetitions reference the inner rule instead of copying it, so they stay small.
  EXPECT_NO_THROW(parse_gbnf("root ::= ((((\"ab\"{10000}){10000}){10000}){10000})"));
  std::string wide = "root ::=";
  for (int i = 0; i < 300; ++i) wide += " \"a\"{10000}";
  EXPECT_NE(error_of(wide).find("too large"), std::string::npos);
  EXPECT_NE(error_of("root ::= " + std::string(1000, '(') + "\"a\"" + std::string(1000, ')')).find("nested"),
            std::string::npos);
  std::string big = "root ::= \"" + std::string(1 << 20, 'a') + "\"";
  EXPECT_NE(error_of(big).find("exceeds the limit"), std::string::npos);
  EXPECT_NE(error_of(std::string("root ::= \"\xFF\"")).find("UTF-8"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Gbnf, AmbiguityIsBounded) {
  // Every "a" doubles the ways to parse; live stacks are capped, so the matcher refuses rather
  // than exploding. The cap must not trigger on a short prefix.
  auto g = parse_gbnf("root ::= x*\nx ::= \"a\" | \"a\" | y\ny ::= \"a\"");
  Matcher m(g, byte_vocab());
  EXPECT_TRUE(m.accept_bytes("aaaa"));
  auto g2 = parse_gbnf("root ::= (\"a\" | \"a\" \"a\")* \"b\"");
  Matcher m2(g2, byte_vocab());
  EXPECT_TRUE(m2.accept_bytes(std::string(2000, 'a') + "b"));
  EXPECT_TRUE(m2.done());
}

TEST(Gbnf, GbnfLiteralRoundTrips) {
  std::string text = "say \"hi\"\\ \n\t\x01 é 你";
  std::string g = "root ::= " + gbnf_literal(text);
  EXPECT_TRUE(matches_gbnf(g, text));
  EXPECT_FALSE(matches_gbnf(g, text + " "));
}

TEST(Gbnf, MaskMatchesPerTokenChecks) {
  // Multi-byte tokens over a small vocabulary, against allows() and copies fed byte by byte.
  std::vector<std::string> toks = {"a", "ab", "abc", "b", "bc", "\xE4", "\xBD\xA0", "\xE4\xBD\xA0", "!", "a!", "", "c"};
  std::vector<bool> usable(toks.size(), true);
  usable[10] = false;
  auto v = std::make_shared<const Vocab>(toks, usable, std::vector<int>{10});
  auto g = parse_gbnf("root ::= (\"a\" | \"b\" \"c\"? | [\\u4e00-\\u9fff])+ \"!\"");
  Matcher m(g, v);
  for (std::string step : {"", "a", "\xE4", "\xBD\xA0", "bc", "!"}) {
    ASSERT_TRUE(m.accept_bytes(step)) << step;
    std::vector<uint8_t> mask(toks.size());
    int n = m.fill_mask(mask);
    int count = 0;
    for (size_t i = 0; i < toks.size(); ++i) {
      Matcher copy = m;
      bool expect = i == 10 ? m.can_end() : copy.accept_bytes(toks[i]);
      EXPECT_EQ(mask[i], expect ? 1 : 0) << "token " << i << " after '" << step << "'";
      EXPECT_EQ(m.allows(static_cast<int>(i)), expect);
      count += expect;
    }
    EXPECT_EQ(n, count);
  }
}

}  // namespace
}  // namespace anelm::grammar

namespace anelm::grammar {
namespace {

TEST(Gbnf, LongGenerationRebuildsTheMemo) {
  // Deep nesting fed byte by byte grows the transition memo past its limit, so the matcher
  // re-interns its state into a fresh memo mid-way; matching must carry on unchanged, and a copy
  // taken before keeps working on the old memo.
  auto g = parse_gbnf("root ::= \"(\" root \")\" | \"x\"");
  Matcher m(g, byte_vocab());
  Matcher early = m;
  ASSERT_TRUE(early.accept_bytes("(("));
  const int depth = 120000;
  for (int i = 0; i < depth; ++i) ASSERT_TRUE(m.accept_token('(')) << i;
  ASSERT_TRUE(m.accept_token('x'));
  for (int i = 0; i < depth - 1; ++i) ASSERT_TRUE(m.accept_token(')')) << i;
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.allows('x'));
  ASSERT_TRUE(m.accept_token(')'));
  EXPECT_TRUE(m.done());
  EXPECT_TRUE(early.accept_bytes("x))"));
  EXPECT_TRUE(early.done());
}

}  // namespace
}  // namespace anelm::grammar
