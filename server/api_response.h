// OpenAI response serialisers: one per API surface (text completions, chat completions).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace anelm::server {

struct ResponseMeta {
  std::string id;          // cmpl-... / chatcmpl-...
  int64_t created = 0;     // Unix seconds
  std::string model;
  bool include_usage = false;  // streams: "usage": null on every chunk, then a usage chunk
  bool logprobs = false;       // the request asked for logprobs
};

struct UsageInfo {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
  double prompt_ms = 0, predicted_ms = 0;  // llama-server style "timings"
};

struct TokenLogprob {
  std::string token;                               // the token's bytes
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // alternatives
  int text_offset = 0;                             // byte offset of the token in the text
};

// Streams are: start_chunk (if any), delta_chunk..., finish_chunk, usage_chunk (if include_usage),
// then "[DONE]". Non-streamed answers are body().
class ResponseSerializer {
 public:
  virtual ~ResponseSerializer() = default;
  virtual std::optional<std::string> start_chunk() const = 0;
  virtual std::string delta_chunk(std::string_view text, std::span<const TokenLogprob> lps) const = 0;
  virtual std::string finish_chunk(std::string_view finish_reason) const = 0;
  virtual std::string usage_chunk(const UsageInfo& usage) const = 0;
  virtual std::string body(std::string_view text, std::string_view finish_reason,
                           const UsageInfo& usage, std::span<const TokenLogprob> lps) const = 0;
};

std::unique_ptr<ResponseSerializer> make_completion_serializer(ResponseMeta meta);
std::unique_ptr<ResponseSerializer> make_chat_serializer(ResponseMeta meta);

// A fresh id with the given prefix ("cmpl-", "chatcmpl-").
std::string make_response_id(const std::string& prefix);

}  // namespace anelm::server
