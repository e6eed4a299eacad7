// Stop-string matcher: partial matches are held back across token boundaries, stops never emitted.
#include <gtest/gtest.h>

#include "server/stop_strings.h"

namespace anelm::server {
namespace {

// Feeds pieces one by one; returns the concatenated output (plus flush when not stopped).
std::string run(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.push(p);
  return out + m.flush();
}

TEST(StopMatcher, NoStopsPassesThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, StopInsideOnePiece) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("helloENDworld"), "hello");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "END");
  EXPECT_EQ(m.push("more"), "");
}

TEST(StopMatcher, PartialMatchHeldBackAcrossPieces) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("abcE"), "abc");
  EXPECT_EQ(m.push("N"), "");
  EXPECT_EQ(m.push("D tail"), "");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, FalsePartialIsReleased) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("abE"), "ab");
  EXPECT_EQ(m.push("Nx"), "ENx");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, FlushReleasesUnfinishedPartial) {
  StopMatcher m({"</end>"});
  EXPECT_EQ(run(m, {"text</e"}), "text</e");
}

TEST(StopMatcher, EarliestOfSeveralStops) {
  StopMatcher m({"world", "lo w"});
  EXPECT_EQ(run(m, {"hel", "lo", " wor", "ld"}), "hel");
  EXPECT_EQ(m.matched(), "lo w");
}

TEST(StopMatcher, OverlappingPrefixes) {
  StopMatcher m({"aab"});
  EXPECT_EQ(m.push("a"), "");
  EXPECT_EQ(m.push("a"), "");
  EXPECT_EQ(m.push("a"), "a");  // "aaa": the first a can no longer start "aab"
  EXPECT_EQ(m.push("b"), "");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, NewlineStopCharByChar) {
  StopMatcher m({"\n\n"});
  std::string out = run(m, {"line", "\n", "x", "\n", "\n", "y"});
  EXPECT_EQ(out, "line\nx");
}

TEST(StopMatcher, EmptyStopsIgnored) {
  StopMatcher m({""});
  EXPECT_EQ(m.push("abc"), "abc");
}

}  // namespace
}  // namespace anelm::server
