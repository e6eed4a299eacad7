// Token log-probabilities as JSON, shared by the APIs that report them (OpenAI chat, Ollama,
// llama.cpp's n_probs); defined in api_response.cpp.
#pragma once

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_response.h"

namespace anelm::server {

// A token's bytes as an array of numbers (a piece of a split character is exact here).
nlohmann::ordered_json bytes_array(const std::string& s);

// OpenAI chat's logprobs.content entries, which Ollama's `logprobs` repeat field for field:
// {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}.
nlohmann::ordered_json token_logprobs_json(std::span<const TokenLogprob> lps);

}  // namespace anelm::server
