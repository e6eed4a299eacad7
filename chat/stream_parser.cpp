// The public output parsers (chat_format.h): StreamParser, which feeds the shared state machine
// (stream_machine.h) piece by piece and hands back its deltas, and parse_message, which runs it
// over a whole output and then applies the one check streaming cannot make (an announced call
// that did not complete, or whose arguments are not a JSON object, is content).
#include <algorithm>

#include "chat/chat_format.h"
#include "chat/stream_machine.h"

namespace anelm::chat {

StreamParser::StreamParser(ChatFormat format, ParseOptions options)
    : machine_(std::make_unique<detail::Machine>(format, options)) {}
StreamParser::~StreamParser() = default;
StreamParser::StreamParser(StreamParser&&) noexcept = default;
StreamParser& StreamParser::operator=(StreamParser&&) noexcept = default;

std::vector<Delta> StreamParser::feed(std::string_view piece) {
  machine_->feed(piece);
  return machine_->take_deltas();
}

std::vector<Delta> StreamParser::finish(bool cut) {
  machine_->finish(cut);
  return machine_->take_deltas();
}

const ParsedMessage& StreamParser::message() const { return machine_->message(); }

bool StreamParser::in_tool_call() const { return machine_->in_tool_call(); }

ParsedMessage parse_message(std::string_view text, const ChatFormat& format,
                            const ParseOptions& options) {
  detail::Machine m(format, options);
  m.feed(text);
  m.finish();
  ParsedMessage msg = m.message();
  // Strict where streaming cannot be: the first block with an announced call that did not complete,
  // or with arguments that are not a JSON object, is content from its first byte to the end.
  const auto& blocks = m.blocks();
  for (std::size_t bi = 0; bi < blocks.size(); ++bi) {
    const auto& b = blocks[bi];
    if (!b.committed) continue;
    bool bad = !b.ok || b.dropped;
    const std::size_t end_call =
        bi + 1 < blocks.size() ? blocks[bi + 1].first_call : msg.tool_calls.size();
    for (std::size_t i = b.first_call; !bad && i < end_call; ++i) {
      const auto& args = msg.tool_calls[i].arguments;
      const auto first = args.find_first_not_of(" \t\r\n");
      bad = first == std::string::npos || args[first] != '{' || !detail::is_json_text(args, kMaxJsonDepth + 1);
    }
    if (bad) {
      msg.content.resize(b.content_len);
      msg.content.append(text.substr(std::min(b.raw_start, text.size())));
      msg.tool_calls.resize(b.first_call);
      break;
    }
  }
  return msg;
}

}  // namespace anelm::chat
