// OutputParser over chat::StreamParser: its deltas mapped to the API's delta shape.
#include "server/chat_output.h"

#include <vector>

namespace anelm::server {

namespace {

class ChatOutputParser final : public OutputParser {
 public:
  ChatOutputParser(const chat::ChatFormat& format, const chat::ParseOptions& options) : parser_(format, options) {}

  void feed(std::string_view text, OutputDelta& out) override {
    if (!text.empty()) append(parser_.feed(text), out);
  }
  void finish(OutputDelta& out, bool cut) override { append(parser_.finish(cut), out); }
  bool in_tool_call() const override { return parser_.in_tool_call(); }
  void result(ChoiceOutput& out) const override {
    const chat::ParsedMessage& m = parser_.message();
    out.content = m.content;
    out.reasoning = m.reasoning;
    out.tool_calls.clear();
    for (const chat::ToolCall& c : m.tool_calls) out.tool_calls.push_back({c.id, c.name, c.arguments});
  }

 private:
  static void append(const std::vector<chat::Delta>& deltas, OutputDelta& out) {
    for (const chat::Delta& d : deltas) {
      switch (d.kind) {
        case chat::Delta::Kind::kContent: out.content += d.text; break;
        case chat::Delta::Kind::kReasoning: out.reasoning += d.text; break;
        case chat::Delta::Kind::kToolCallStart: out.tool_calls.push_back({d.index, d.id, d.name, ""}); break;
        case chat::Delta::Kind::kToolCallArgs:
          // Fragments of the call just started in this delta extend it; others get their own entry.
          if (!out.tool_calls.empty() && out.tool_calls.back().index == d.index)
            out.tool_calls.back().arguments += d.text;
          else
            out.tool_calls.push_back({d.index, "", "", d.text});
          break;
      }
    }
  }

  chat::StreamParser parser_;
};

}  // namespace

std::unique_ptr<OutputParser> make_chat_output_parser(const chat::ChatFormat& format,
                                                      const chat::ParseOptions& options) {
  return std::make_unique<ChatOutputParser>(format, options);
}

}  // namespace anelm::server
