// Test helpers for the chat output parsers: run StreamParser over every chunking of a text and
// check the reassembled deltas against parse_message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_format.h"

namespace anelm::chat::testing {

// The message rebuilt from deltas alone, plus every protocol problem seen in them.
struct Reassembled {
  ParsedMessage message;
  std::vector<std::string> problems;
};

// Feeds `text` cut at the given offsets (ascending), then finish(cut); rebuilds the message from the
// deltas and checks the delta protocol: each call opens with one kToolCallStart carrying its index
// (0, 1, ...), a well-formed id and a name before any of its argument fragments; arguments only for
// opened calls; StreamParser::message() equals the rebuilt message less the calls it dropped
// (unfinished or not JSON). `final` is message().
Reassembled run_stream(std::string_view text, const ChatFormat& format, const ParseOptions& options,
                       const std::vector<std::size_t>& cuts, bool cut = false,
                       ParsedMessage* final = nullptr);

// Chunkings to try: byte by byte, every single cut, and `random_count` random chunkings.
std::vector<std::vector<std::size_t>> all_chunkings(std::size_t length, int random_count,
                                                    unsigned seed);

// For every chunking: no protocol problem, the rebuilt message equals `expected` (content,
// reasoning, each call's name and arguments), and — when check_markers — no tool or reasoning
// marker in content. Reports through gtest (ADD_FAILURE) with the chunking that failed.
void expect_stream_equals(std::string_view text, const ChatFormat& format,
                          const ParseOptions& options, const ParsedMessage& expected,
                          bool check_markers, int random_count = 50);

// parse_message(text) == expected (ids checked for shape only), and the stream check above against
// it.
void expect_parse_and_stream(std::string_view text, const ChatFormat& format,
                             const ParseOptions& options, const ParsedMessage& expected,
                             bool check_markers = true);

bool valid_call_id(const std::string& id, ToolSyntax syntax);
std::string describe(const ParsedMessage& m);

}  // namespace anelm::chat::testing
