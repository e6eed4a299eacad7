// The chat endpoint's output parser: splits generated text into reasoning, content and tool calls in
// the model's own syntax (chat/chat_format.h), streaming them as OpenAI deltas.
#pragma once

#include <cstdint>
#include <memory>

#include "chat/chat_format.h"
#include "server/output_parser.h"

namespace anelm::server {

// `options.parse_tools` false when the request offered no tools (markup then stays content).
std::unique_ptr<OutputParser> make_chat_output_parser(const chat::ChatFormat& format,
                                                      const chat::ParseOptions& options);

}  // namespace anelm::server
