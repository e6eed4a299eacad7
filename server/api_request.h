// OpenAI request types parsed from JSON with per-field validation (nlohmann stays in the .cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sampler.h"

namespace anelm::server {

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
};

struct CompletionRequest {
  GenerationFields gen;
  std::string prompt_text;               // when the prompt is a string
  std::vector<int> prompt_ids;           // when the prompt is a token-id array
  bool prompt_is_ids = false;
  bool echo = false;
};

struct ChatMessage {
  std::string role;     // system | user | assistant ("developer" is mapped to system)
  std::string content;  // text parts joined
};

struct ChatRequest {
  GenerationFields gen;
  std::vector<ChatMessage> messages;
};

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
