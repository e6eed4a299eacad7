// The OpenAI Responses API request (POST /v1/responses) translated into the chat request every
// chat-shaped endpoint runs: input items -> chat messages (plain string content; roles system,
// user, assistant, tool), function tools (namespaces flattened), tool_choice, text.format ->
// response_format, reasoning.effort -> reasoning_effort. Pure: no I/O and no logging (the handler
// logs the ignored fields), so the fuzz target can drive it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampler.h"
#include "server/api_error.h"
#include "server/api_request.h"

namespace anelm::server {

struct ResponsesRequest {
  // The input as canonical items, each a valid Responses input item: message {type, role, content
  // (a string or [{type: input_text, text}])}, function_call {type, call_id, name, arguments}, function_call_output {type, call_id,
  // output (as message content)}, reasoning {type, summary: [], content: [{type: reasoning_text, text}]}.
  // Stored (with the output) for a later previous_response_id.
  nlohmann::ordered_json input = nlohmann::ordered_json::array();
  std::string instructions;  // empty: none
  // The chat-completions fields this request maps to, besides messages (tools, tool_choice,
  // max_tokens, temperature, top_p, seed, response_format, parallel_tool_calls, reasoning_effort,
  // stream).
  nlohmann::ordered_json chat = nlohmann::ordered_json::object();
  std::vector<std::string> tool_paths;          // chat tools[k] came from this Responses path
  std::map<std::string, std::string> tool_namespace;  // flattened function name -> its namespace
  std::string previous_response_id;             // empty: none
  bool store = true;
  bool stream = false;
  // The request fields a Response object repeats (instructions, tools, tool_choice, text, ...).
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();
  std::vector<std::string> ignored;  // accepted-and-ignored fields and dropped tools, for the debug log
};

// Throws ApiError 400 naming the field (input[2].content[0].type, tools[3].type, ...).
ResponsesRequest parse_responses_request(std::string_view body);

// The chat request of `r` continuing `history` (the canonical items of the previous response's
// conversation, or an empty array). `defaults`: sampling for fields the request leaves out.
// Throws ApiError 400 naming the Responses field.
ChatRequest responses_to_chat(const ResponsesRequest& r, const nlohmann::ordered_json& history,
                              const engine::SamplingParams& defaults = {});

// An error a chat-level check raised (e.g. the output constraint: "tools[0].function.parameters",
// "response_format.json_schema.schema.x") with `param` renamed to the Responses field it came from.
ApiError responses_error(const ApiError& e, const ResponsesRequest& r);

}  // namespace anelm::server
