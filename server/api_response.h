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

class ApiError;

struct ResponseMeta {
  std::string id;          // cmpl-... / chatcmpl-...
  int64_t created = 0;     // Unix seconds
  std::string model;
  bool include_usage = false;  // streams: "usage": null on every chunk, then a usage chunk
  bool logprobs = false;       // the request asked for logprobs
  std::string system_fingerprint = {};  // OpenAI's; empty: not sent
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
  int id = -1;                                     // the token id (llama.cpp's n_probs reports it)
  std::vector<int> top_ids;                        // the alternatives' ids, as `top`
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
  // What this choice used (llama.cpp's /completion reports it per result).
  struct Stats {
    int prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
    double prompt_ms = 0, predicted_ms = 0;
  };
  std::string content;
  std::string reasoning;
  std::vector<ToolCallOut> tool_calls;
  std::string finish_reason;
  std::string stop_sequence;  // the stop string that ended it (empty: none); Anthropic reports it
  std::vector<TokenLogprob> logprobs;
  bool limited = false;       // a line limit (n_indent, t_max_predict_ms) ended it
  Stats stats;
  std::vector<int> token_ids;  // the tokens it generated
};

// One API's wire form of an answer (OpenAI completions / chat, Responses, Anthropic Messages): all of
// them are views of the same choices, deltas and usage. A stream is, as SSE text to write:
// stream_start(), then per choice choice_start, delta..., choice_end; then stream_end(usage).
// Serializers may keep state across these calls (e.g. to repeat a finished item in a final event).
// Non-streamed answers are body().
class ResponseSerializer {
 public:
  virtual ~ResponseSerializer() = default;
  virtual std::string stream_start() { return {}; }
  virtual std::string choice_start(int index) = 0;
  virtual std::string delta(int index, const OutputDelta& delta, std::span<const TokenLogprob> lps) = 0;
  // `out`: the whole choice (content, reasoning, tool calls, finish_reason).
  virtual std::string choice_end(int index, const ChoiceOutput& out) = 0;
  virtual std::string stream_end(const UsageInfo& usage) = 0;
  // An error after the stream started (default: OpenAI's `data: {"error": ...}`).
  virtual std::string stream_error(const ApiError& e);
  // The stream's media type, and what is written when nothing else was for a while (SSE: a comment
  // line; empty: nothing, for formats without comments such as NDJSON).
  virtual const char* stream_content_type() const { return "text/event-stream"; }
  virtual std::string keepalive();
  virtual std::string body(std::span<const ChoiceOutput> choices, const UsageInfo& usage) = 0;
};

std::unique_ptr<ResponseSerializer> make_completion_serializer(ResponseMeta meta);
std::unique_ptr<ResponseSerializer> make_chat_serializer(ResponseMeta meta);

// A fresh id with the given prefix ("cmpl-", "chatcmpl-").
std::string make_response_id(const std::string& prefix);

}  // namespace anelm::server
