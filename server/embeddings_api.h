// POST /v1/embeddings: the OpenAI request parsed with per-field validation, and the response body.
// Engine-free: the handler (handlers_embeddings.cpp) tokenizes, runs the engine and normalises.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace anelm::server {

// Bounds of one request (the body itself is bounded by max_body_bytes).
struct EmbeddingsLimits {
  static constexpr size_t kMaxInputs = 2048;  // OpenAI's limit on the input array
};

struct EmbeddingsRequest {
  // `input` as texts ("a" or ["a", "b"]) or as token ids ([1, 2] or [[1, 2], [3]]); never both.
  std::vector<std::string> texts;
  std::vector<std::vector<int>> ids;
  bool is_ids = false;
  bool base64 = false;               // encoding_format "base64": little-endian float32, base64
  std::optional<int> dimensions;     // Matryoshka: first `dimensions` values, re-normalised
  size_t count() const { return is_ids ? ids.size() : texts.size(); }
};

// Throws ApiError 400 naming the field (input, input[i], encoding_format, dimensions, model).
// `user` and unknown fields are accepted and logged at debug level.
EmbeddingsRequest parse_embeddings_request(std::string_view body);

// The OpenAI list object: one {"object":"embedding","index":i,"embedding":...} per vector of
// `vectors` ([n][dims], already normalised), floats as shortest round-trip decimals or base64.
std::string embeddings_response_body(std::span<const float> vectors, int dims, bool base64,
                                     const std::string& model, int prompt_tokens);

// Standard base64 (RFC 4648, padded) of `n` bytes.
std::string base64_encode(const void* data, size_t n);

}  // namespace anelm::server
