// Stop-string matcher: partial matches are held back across token boundaries, stops never emitted.
#include <gtest/gtest.h>

#include "fake_engine.h"
#include "server/chat_output.h"
#include "server/generation.h"
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

TEST(StopMatcher, PassReleasesThePartialAndRestartsMatching) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("abEN"), "ab");
  EXPECT_EQ(m.pass("Dx"), "ENDx");  // inside a region: no match, the held partial goes first
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.push("NDyEND"), "NDy");  // matching restarts after the region
  EXPECT_TRUE(m.stopped());
}

// TextAssembler with a call tracker (tool_choice auto): stop strings cut free text but never the
// inside of a Hermes call, fed one byte token at a time.
std::string assemble(const std::string& reply, std::vector<std::string> stops, bool* stopped) {
  static const testing::FakeTokenizer tk;
  chat::ChatFormat f;
  f.tools = chat::ToolSyntax::kHermes;
  chat::ParseOptions po;
  TextAssembler a(tk, {}, std::move(stops), make_chat_output_parser(f, po));
  std::string out;
  for (unsigned char c : reply) {
    out += a.push(c);
    if (a.stopped()) break;
  }
  out += a.finish();
  *stopped = a.stopped();
  return out;
}

TEST(TextAssembler, StopStringsApplyOnlyOutsideToolCalls) {
  const std::string call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"x\\ny\"}}\n</tool_call>";
  const std::string reply = "Hi.\n" + call + "\nBye.\n";
  bool stopped = false;
  for (const std::string stop : {"{", "\"a\"", "x", "}}", "</tool_call>", "call>\n{"}) {
    EXPECT_EQ(assemble(reply, {stop}, &stopped), reply) << stop;
    EXPECT_FALSE(stopped) << stop;
  }
  // Outside: before the call (also a stop that is a prefix of the marker), and after it.
  EXPECT_EQ(assemble(reply, {"\n"}, &stopped), "Hi.");
  EXPECT_EQ(assemble(reply, {"<tool"}, &stopped), "Hi.\n");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(assemble(reply, {"Bye"}, &stopped), "Hi.\n" + call + "\n");
  EXPECT_TRUE(stopped);
  // A stop string spanning the end of the call: the call's bytes cannot complete it.
  EXPECT_EQ(assemble(reply, {"</tool_call>\nBye"}, &stopped), reply);
  EXPECT_FALSE(stopped);
}

}  // namespace
}  // namespace anelm::server
