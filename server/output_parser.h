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
  // End of generation: appends whatever was held back.
  virtual void finish(OutputDelta& out) = 0;
  // The whole choice so far: content, reasoning and tool calls.
  virtual void result(ChoiceOutput& out) const = 0;
};

// Everything is content (completions; chat without tools or reasoning).
std::unique_ptr<OutputParser> make_plain_parser();

}  // namespace anelm::server
