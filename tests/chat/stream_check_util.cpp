// Test helpers for the chat output parsers (see stream_check.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>

#include "tests/chat/stream_check.h"

namespace anelm::chat::testing {

bool valid_call_id(const std::string& id, ToolSyntax syntax) {
  std::string_view body = id;
  if (syntax == ToolSyntax::kMistral) {
    if (id.size() != 9) return false;
  } else {
    if (id.size() != 29 || id.rfind("call_", 0) != 0) return false;
    body.remove_prefix(5);
  }
  return std::all_of(body.begin(), body.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
}

std::string describe(const ParsedMessage& m) {
  std::ostringstream os;
  os << "reasoning=[" << m.reasoning << "] content=[" << m.content
     << "] calls=" << m.tool_calls.size();
  for (const auto& c : m.tool_calls) os << " {" << c.name << " " << c.arguments << "}";
  return os.str();
}

Reassembled run_stream(std::string_view text, const ChatFormat& format, const ParseOptions& options,
                       const std::vector<std::size_t>& cuts, bool cut, ParsedMessage* final) {
  Reassembled r;
  StreamParser parser(format, options);
  auto absorb = [&](const std::vector<Delta>& deltas) {
    for (const Delta& d : deltas) {
      switch (d.kind) {
        case Delta::Kind::kContent:
          if (d.text.empty()) r.problems.push_back("empty content delta");
          r.message.content += d.text;
          break;
        case Delta::Kind::kReasoning:
          if (d.text.empty()) r.problems.push_back("empty reasoning delta");
          r.message.reasoning += d.text;
          break;
        case Delta::Kind::kToolCallStart:
          if (d.index != static_cast<int>(r.message.tool_calls.size())) {
            r.problems.push_back("call start with index " + std::to_string(d.index));
          }
          if (d.name.empty()) r.problems.push_back("call start without name");
          if (!valid_call_id(d.id, format.tools)) r.problems.push_back("bad call id " + d.id);
          r.message.tool_calls.push_back(ToolCall{d.id, d.name, ""});
          break;
        case Delta::Kind::kToolCallArgs:
          if (d.index < 0 || d.index >= static_cast<int>(r.message.tool_calls.size())) {
            r.problems.push_back("arguments for unopened call " + std::to_string(d.index));
          } else {
            if (d.text.empty()) r.problems.push_back("empty arguments delta");
            r.message.tool_calls[static_cast<std::size_t>(d.index)].arguments += d.text;
          }
          break;
      }
    }
  };
  std::size_t at = 0;
  for (std::size_t cut : cuts) {
    absorb(parser.feed(text.substr(at, cut - at)));
    at = cut;
  }
  absorb(parser.feed(text.substr(at)));
  absorb(parser.finish(cut));
  const ParsedMessage& m = parser.message();
  if (final) *final = m;
  // message() == the deltas, less dropped calls (matched by id, in order).
  bool same = m.content == r.message.content && m.reasoning == r.message.reasoning;
  std::size_t j = 0;
  for (std::size_t i = 0; same && i < m.tool_calls.size(); ++i) {
    while (j < r.message.tool_calls.size() && r.message.tool_calls[j].id != m.tool_calls[i].id) ++j;
    same = j < r.message.tool_calls.size() && m.tool_calls[i].name == r.message.tool_calls[j].name &&
           m.tool_calls[i].arguments == r.message.tool_calls[j].arguments;
    ++j;
  }
  if (!same) r.problems.push_back("message() differs from the deltas: " + describe(m));
  return r;
}

std::vector<std::vector<std::size_t>> all_chunkings(std::size_t length, int random_count,
                                                    unsigned seed) {
  std::vector<std::vector<std::size_t>> out;
  out.push_back({});  // one piece
  std::vector<std::size_t> bytes;
  for (std::size_t i = 1; i < length; ++i) bytes.push_back(i);
  out.push_back(bytes);
  for (std::size_t i = 1; i < length; ++i) out.push_back({i});
  std::mt19937 rng(seed);
  for (int k = 0; k < random_count && length > 1; ++k) {
    std::vector<std::size_t> cuts;
    std::size_t at = 0;
    while (true) {
      at += 1 + rng() % 7;
      if (at >= length) break;
      cuts.push_back(at);
    }
    out.push_back(cuts);
  }
  return out;
}

namespace {

const char* const kMarkers[] = {"<tool_call>",  "</tool_call>",  "<think>",   "</think>",
                                "[TOOL_CALLS]", "[ARGS]",        "[CALL_ID]", "[THINK]",
                                "[/THINK]",     "<|python_tag|>", "<function=", "<parameter=",
                                "</parameter>", "</function>", "<|tool_call|>", "<|/tool_call|>"};

std::string cuts_text(const std::vector<std::size_t>& cuts) {
  std::string s;
  for (std::size_t c : cuts) s += std::to_string(c) + ",";
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

}  // namespace

void expect_stream_equals(std::string_view text, const ChatFormat& format,
                          const ParseOptions& options, const ParsedMessage& expected,
                          bool check_markers, int random_count) {
  int failures = 0;
  for (const auto& cuts : all_chunkings(text.size(), random_count, 1234)) {
    Reassembled r = run_stream(text, format, options, cuts);
    bool ok = r.problems.empty() && r.message.content == expected.content &&
              r.message.reasoning == expected.reasoning &&
              r.message.tool_calls.size() == expected.tool_calls.size();
    for (std::size_t i = 0; ok && i < expected.tool_calls.size(); ++i) {
      ok = r.message.tool_calls[i].name == expected.tool_calls[i].name &&
           r.message.tool_calls[i].arguments == expected.tool_calls[i].arguments;
    }
    if (check_markers) {
      for (const char* m : kMarkers) {
        if (r.message.content.find(m) != std::string::npos) ok = false;
      }
    }
    if (!ok && ++failures <= 3) {
      std::string problems;
      for (const auto& p : r.problems) problems += p + "; ";
      ADD_FAILURE() << "stream differs for cuts [" << cuts_text(cuts) << "] of\n"
                    << text << "\n  got:      " << describe(r.message)
                    << "\n  expected: " << describe(expected) << "\n  problems: " << problems;
    }
  }
}

void expect_parse_and_stream(std::string_view text, const ChatFormat& format,
                             const ParseOptions& options, const ParsedMessage& expected,
                             bool check_markers) {
  const ParsedMessage got = parse_message(text, format, options);
  EXPECT_EQ(got.reasoning, expected.reasoning) << text;
  EXPECT_EQ(got.content, expected.content) << text;
  ASSERT_EQ(got.tool_calls.size(), expected.tool_calls.size()) << text << "\n" << describe(got);
  for (std::size_t i = 0; i < got.tool_calls.size(); ++i) {
    EXPECT_EQ(got.tool_calls[i].name, expected.tool_calls[i].name) << text;
    EXPECT_EQ(got.tool_calls[i].arguments, expected.tool_calls[i].arguments) << text;
    EXPECT_TRUE(valid_call_id(got.tool_calls[i].id, format.tools)) << got.tool_calls[i].id;
  }
  expect_stream_equals(text, format, options, expected, check_markers);
}

}  // namespace anelm::chat::testing
