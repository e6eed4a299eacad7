// Ollama's native API (/api/chat, /api/generate, /api/embed, /api/tags, /api/show, ...) as a view of
// the chat and text flows: a request is translated into the ChatRequest / GenerationFields the OpenAI
// endpoints use, and the answer is written as Ollama's NDJSON chunks or one object. Errors take
// Ollama's shape {"error": "..."}. ollama_api.cpp translates requests; ollama_response.cpp writes
// answers; handlers_ollama.cpp runs them.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampler.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/embeddings_api.h"

namespace anelm::server {

class ApiError;

// The Ollama release whose API this server follows (GET /api/version): clients gate features on it
// (tools, structured outputs, thinking, logprobs; codex --oss uses /v1/responses from 0.13.4 on, and
// anelm serves it).
inline constexpr const char* kOllamaApiVersion = "0.13.4";

struct OllamaChatRequest {
  ChatRequest chat;
  bool load_only = false;  // no messages: Ollama's "load the model" request
};

// POST /api/chat. Throws ApiError 400 naming the field (messages[2].images, options.mirostat,
// format, ...). `defaults`: the model preset's sampling.
OllamaChatRequest parse_ollama_chat_request(std::string_view body, const engine::SamplingParams& defaults = {});

struct OllamaGenerateRequest {
  GenerationFields gen;
  std::string prompt, system, suffix;
  bool raw = false;
  std::vector<int> context;  // ids of an earlier answer's `context`, put before the prompt
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // think
  bool load_only() const { return prompt.empty() && suffix.empty(); }  // Ollama's "load the model"
};

// POST /api/generate. A non-empty `template` (a Go template) and `images` are refused by name.
OllamaGenerateRequest parse_ollama_generate_request(std::string_view body, const engine::SamplingParams& defaults = {});

struct OllamaEmbedRequest {
  EmbeddingsRequest inputs;   // texts, dimensions
  bool truncate = true;       // cut inputs longer than the context instead of refusing them
  bool legacy = false;        // POST /api/embeddings: {"embedding": [...]}, not normalised
};

// POST /api/embed ({input, truncate, dimensions}) or, with `legacy`, /api/embeddings ({prompt}).
OllamaEmbedRequest parse_ollama_embed_request(std::string_view body, bool legacy);

// The answer side.
struct OllamaMeta {
  std::string model;
  bool chat = true;                // /api/chat (message objects) or /api/generate (response text)
  bool logprobs = false;
  std::vector<int> context;        // /api/generate: the prompt ids, returned with the answer's ids
  bool return_context = false;     // /api/generate without raw
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
};

// NDJSON chunks {model, created_at, message | response, done: false}, then the final chunk with
// done_reason and the durations; one object when not streamed. Tool calls go out whole, with
// arguments as objects, in the chunk that completes them.
std::unique_ptr<ResponseSerializer> make_ollama_serializer(OllamaMeta meta);

// "stop" or "length" for a finished choice.
const char* ollama_done_reason(const ChoiceOutput& out);

// The current time as Ollama writes created_at (RFC 3339, UTC, nanoseconds).
std::string ollama_timestamp();

// {"error": "..."} as JSON text.
std::string ollama_error_body(const ApiError& e);

}  // namespace anelm::server
