// Anthropic Messages API (POST /v1/messages, /v1/messages/count_tokens) as a view of the chat flow:
// a Messages request is translated into the normalized ChatRequest (the one chat completions use),
// and the chat answer is serialised as a Message object or its SSE events. Errors take Anthropic's
// shape {"type":"error","error":{"type","message"}}.
// anthropic_api.cpp translates requests; anthropic_response.cpp writes answers and errors.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/sampler.h"
#include "server/api_request.h"
#include "server/api_response.h"

namespace anelm::server {

class ApiError;

struct MessagesRequest {
  ChatRequest chat;              // conversation, tools, tool_choice, sampling, stop strings, stream
  bool system_in_place = false;  // a system turn sits inside `messages` (kept at its place)
};

// Parses and translates a Messages request body. Throws ApiError 400 naming the field (e.g.
// `messages[2].content[0].type`) for malformed input and for content this server cannot use
// (images, documents). Fields without meaning for a local server are accepted and logged at debug.
// `defaults`: sampling for fields the request leaves out (the model preset's).
MessagesRequest parse_messages_request(std::string_view body, const engine::SamplingParams& defaults = {});

// The conversation with every system turn folded into one leading system message (in order, joined
// by blank lines), for templates that accept a system message only first.
nlohmann::ordered_json merge_system_messages(const nlohmann::ordered_json& messages);

struct MessagesMeta {
  std::string id;         // msg_...
  std::string model;
  int input_tokens = 0;   // the prompt's tokens, reported in message_start before prefill
};

// The Message object (body) and the event stream: message_start, ping, content_block_start /
// content_block_delta (text_delta, thinking_delta, input_json_delta) / content_block_stop per
// block, message_delta (stop_reason, stop_sequence, usage), message_stop; `event: error` mid-stream.
std::unique_ptr<ResponseSerializer> make_messages_serializer(MessagesMeta meta);

// end_turn / max_tokens / stop_sequence / tool_use for a finished choice.
const char* anthropic_stop_reason(const ChoiceOutput& out);

// Anthropic's error type for an HTTP status (invalid_request_error, authentication_error,
// permission_error, not_found_error, request_too_large, rate_limit_error, overloaded_error, api_error).
const char* anthropic_error_type(int status);

// {"type":"error","error":{"type","message"}} as JSON text.
std::string anthropic_error_body(const ApiError& e);

}  // namespace anelm::server
