// The Responses API's wire form of an answer: a Response object (non-streamed), or the SSE event
// sequence (event: lines, sequence_number) whose response.output_item.done items are complete — the
// only thing codex builds its output from. Stores the finished response when the request asked to.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_response.h"
#include "server/response_store.h"

namespace anelm::server {

struct ResponsesContext {
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();  // ResponsesRequest::echo
  std::map<std::string, std::string> tool_namespace;               // function name -> namespace
  // The canonical items before this answer (previous conversation + input): stored with the
  // output items appended, for a later previous_response_id.
  nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
  ResponseStore* store = nullptr;  // null: store: false
};

// `meta.id` is the response id ("resp_..."), `meta.created` its created_at.
std::unique_ptr<ResponseSerializer> make_responses_serializer(ResponseMeta meta, ResponsesContext rc);

// The stored conversation items an output item continues with (canonical input items).
nlohmann::ordered_json responses_canonical_output(const nlohmann::ordered_json& output_item);

}  // namespace anelm::server
