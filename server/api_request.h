// OpenAI request types parsed from JSON with per-field validation. Every field a request may carry
// is parsed here; any other is a 400 naming it (nothing is silently ignored).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampler.h"

namespace anelm::server {

// response_format: free text, any JSON object, or JSON matching a schema (enforced by a grammar).
struct ResponseFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema };
  Kind kind = Kind::kText;
  nlohmann::ordered_json schema;  // kJsonSchema: json_schema.schema (key order kept)
  std::string name;       // kJsonSchema: json_schema.name
};

// Fields shared by /v1/completions and /v1/chat/completions.
struct GenerationFields {
  std::optional<int> max_tokens;         // unset: endpoint default
  engine::SamplingParams sampling;       // temperature, top_p, top_k, min_p, penalties, seed
  bool seed_given = false;               // false: the server picks a fresh seed
  std::vector<std::string> stop;         // stop strings, never emitted
  bool stream = false;
  bool include_usage = false;            // stream_options.include_usage
  int top_logprobs = 0;                  // alternatives per token
  bool logprobs = false;                 // return per-token logprobs
  int n = 1;                             // independent choices
  ResponseFormat response_format;
  std::string grammar;                   // llama-server's GBNF `grammar` field; empty: none
};

struct CompletionRequest {
  GenerationFields gen;
  std::string prompt_text;               // when the prompt is a string
  std::vector<int> prompt_ids;           // when the prompt is a token-id array
  bool prompt_is_ids = false;
  bool echo = false;
};

// tool_choice: auto (the model decides), none, required (at least one call), or one named function.
struct ToolChoice {
  enum class Kind { kAuto, kNone, kRequired, kFunction };
  Kind kind = Kind::kAuto;
  std::string name;  // kFunction
};

struct ChatRequest {
  GenerationFields gen;
  // The conversation as chat templates read it (transformers' shape): roles system (also from
  // "developer"), user, assistant, tool; text parts joined into one string; assistant tool_calls
  // with function.arguments parsed into an object; tool messages with tool_call_id.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // OpenAI tools, validated
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs
};

// The name of each function in `tools`, in order.
std::vector<std::string> tool_names(const nlohmann::ordered_json& tools);

struct TokenizeRequest {
  std::string content;
  bool add_special = false;
  bool parse_special = true;
  bool with_pieces = false;
};

struct DetokenizeRequest {
  std::vector<int> tokens;
};

// Each throws ApiError (400, param = the offending field) on invalid input.
// `defaults`: sampling for fields the request leaves out (the model preset's; OpenAI's otherwise).
CompletionRequest parse_completion_request(std::string_view body,
                                           const engine::SamplingParams& defaults = {});
ChatRequest parse_chat_request(std::string_view body, const engine::SamplingParams& defaults = {});
TokenizeRequest parse_tokenize_request(std::string_view body);
DetokenizeRequest parse_detokenize_request(std::string_view body);

}  // namespace anelm::server
