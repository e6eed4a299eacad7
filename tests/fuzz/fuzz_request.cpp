// libFuzzer target: the OpenAI request parsers (chat, completion, tokenize, detokenize). Only
// ApiError may escape them; what they return must serialise again.
#include <cstdint>
#include <string_view>

#include "server/api_error.h"
#include "server/api_request.h"

using namespace anelm::server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    ChatRequest r = parse_chat_request(body);
    (void)r.messages.dump();
    (void)r.tools.dump();
    (void)r.template_kwargs.dump();
    (void)r.gen.response_format.schema.dump();
    (void)tool_names(r.tools);
  } catch (const ApiError&) {}
  try {
    CompletionRequest r = parse_completion_request(body);
    (void)r.gen.response_format.schema.dump();
  } catch (const ApiError&) {}
  try {
    (void)parse_tokenize_request(body);
  } catch (const ApiError&) {}
  try {
    (void)parse_detokenize_request(body);
  } catch (const ApiError&) {}
  return 0;
}
