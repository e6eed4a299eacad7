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

// A tool call as the API returns it; `arguments` is JSON text.
struct ToolCallOut {
  std::string id, name, arguments;
};

// One piece of a choice's streamed output. A tool-call delta carries `index` always; `id` and
// `name` only on the first delta of that call; then `arguments` fragments.
struct ToolCallDelta {
  int index = 0;
  std::string id, name, arguments;
};
struct OutputDelta {
  std::string content;
  std::string reasoning;  // reasoning_content (a reasoning model's <think> block)
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

// One finished choice.
struct ChoiceOutput {
  std::string content;
  std::string reasoning;
  std::vector<ToolCallOut> tool_calls;
  std::string finish_reason;
  std::vector<TokenLogprob> logprobs;
};

// Streams are: per choice (index), start_chunk (if any), delta_chunk..., finish_chunk; then
// usage_chunk (if include_usage) and "[DONE]". Non-streamed answers are body().
class ResponseSerializer {
 public:
  virtual ~ResponseSerializer() = default;
  virtual std::optional<std::string> start_chunk(int index) const = 0;
  virtual std::string delta_chunk(int index, const OutputDelta& delta, std::span<const TokenLogprob> lps) const = 0;
  virtual std::string finish_chunk(int index, std::string_view finish_reason) const = 0;
  virtual std::string usage_chunk(const UsageInfo& usage) const = 0;
  virtual std::string body(std::span<const ChoiceOutput> choices, const UsageInfo& usage) const = 0;
};

std::unique_ptr<ResponseSerializer> make_completion_serializer(ResponseMeta meta);
std::unique_ptr<ResponseSerializer> make_chat_serializer(ResponseMeta meta);

// A fresh id with the given prefix ("cmpl-", "chatcmpl-").
std::string make_response_id(const std::string& prefix);

}  // namespace anelm::server
