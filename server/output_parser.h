// A choice's generated text -> what the API returns: plain content, or (chat models) reasoning,
// content and tool calls in the model's own syntax. One per choice, used by one HTTP thread.
#pragma once

#include <memory>
#include <string_view>

#include "server/api_response.h"

namespace anelm::server {

class OutputParser {
 public:
  virtual ~OutputParser() = default;
  // Text that is final (stop strings already handled); appends what may be emitted now to `out`.
  virtual void feed(std::string_view text, OutputDelta& out) = 0;
  // End of generation: appends whatever was held back. `cut`: the output was cut short (token
  // limit or stop string), so unfinished markup at its end is dropped, not content.
  virtual void finish(OutputDelta& out, bool cut) = 0;
  // The whole choice so far: content, reasoning and tool calls (complete ones only).
  virtual void result(ChoiceOutput& out) const = 0;
  // Inside a tool call's markup after the text fed so far (where a stop string must not cut).
  virtual bool in_tool_call() const { return false; }
};

// Everything is content (completions; chat without tools or reasoning).
std::unique_ptr<OutputParser> make_plain_parser();

}  // namespace anelm::server
