// Anthropic Messages answers: the chat layer's choice as a Message object or its SSE events, and
// Anthropic's error shape.
#include <string>

#include <nlohmann/json.hpp>

#include "server/anthropic_api.h"
#include "server/api_error.h"
#include "server/json_body.h"
#include "server/sse.h"

namespace anelm::server {

using json = nlohmann::ordered_json;  // fields in Anthropic's order

const char* anthropic_stop_reason(const ChoiceOutput& out) {
  if (!out.tool_calls.empty()) return "tool_use";
  if (!out.stop_sequence.empty()) return "stop_sequence";
  return out.finish_reason == "length" ? "max_tokens" : "end_turn";
}

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string event(const char* name, const json& payload) { return sse_event(name, dump(payload)); }

// Tool-use ids in Anthropic's spelling (toolu_...): the client sends them back as tool_use_id.
std::string tool_use_id(const std::string& id) {
  return id.rfind("call_", 0) == 0 ? "toolu_" + id.substr(5) : id;
}

json usage_json(int input_tokens, int cached_tokens, int output_tokens) {
  return {{"input_tokens", input_tokens},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", cached_tokens},
          {"output_tokens", output_tokens}};
}

// Anthropic counts cached prompt tokens apart: input + cache_read = the whole prompt.
json usage_json(const UsageInfo& u) {
  return usage_json(u.prompt_tokens - u.cached_tokens, u.cached_tokens, u.completion_tokens);
}

json stop_sequence_json(const ChoiceOutput& out) {
  return std::string(anthropic_stop_reason(out)) == "stop_sequence" ? json(out.stop_sequence) : json(nullptr);
}

class MessagesSerializer : public ResponseSerializer {
 public:
  explicit MessagesSerializer(MessagesMeta meta) : meta_(std::move(meta)) {}

  std::string stream_start() override {
    json message = head();
    message["content"] = json::array();
    message["stop_reason"] = nullptr;
    message["stop_sequence"] = nullptr;
    message["usage"] = usage_json(meta_.input_tokens, 0, 0);
    return event("message_start", {{"type", "message_start"}, {"message", std::move(message)}}) +
           event("ping", {{"type", "ping"}});
  }

  std::string choice_start(int) override { return {}; }

  // Blocks open lazily: a change of kind (thinking -> text -> tool_use) closes the open one.
  std::string delta(int, const OutputDelta& d, std::span<const TokenLogprob>) override {
    std::string out;
    if (!d.reasoning.empty()) {
      out += open(Kind::kThinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
      out += block_delta({{"type", "thinking_delta"}, {"thinking", d.reasoning}});
    }
    if (!d.content.empty()) {
      out += open(Kind::kText, {{"type", "text"}, {"text", ""}});
      out += block_delta({{"type", "text_delta"}, {"text", d.content}});
    }
    for (const ToolCallDelta& t : d.tool_calls) {
      if (!t.id.empty()) {
        // The input goes only in input_json_delta events (clients ignore it in the start event).
        out += open(Kind::kToolUse, {{"type", "tool_use"}, {"id", tool_use_id(t.id)}, {"name", t.name},
                                     {"input", json::object()}}, /*force=*/true);
        tool_index_ = t.index;
      } else if (open_ != Kind::kToolUse || tool_index_ != t.index) {
        continue;  // the chat parser streams one call at a time: a fragment of another cannot occur
      }
      if (!t.arguments.empty()) {
        tool_input_sent_ = true;
        out += block_delta({{"type", "input_json_delta"}, {"partial_json", t.arguments}});
      }
    }
    return out;
  }

  std::string choice_end(int, const ChoiceOutput& out) override {
    end_ = out;
    return close();
  }

  std::string stream_end(const UsageInfo& u) override {
    json delta = {{"stop_reason", anthropic_stop_reason(end_)}, {"stop_sequence", stop_sequence_json(end_)}};
    return event("message_delta", {{"type", "message_delta"}, {"delta", std::move(delta)}, {"usage", usage_json(u)}}) +
           event("message_stop", {{"type", "message_stop"}});
  }

  std::string stream_error(const ApiError& e) override { return sse_event("error", anthropic_error_body(e)); }

  std::string body(std::span<const ChoiceOutput> choices, const UsageInfo& u) override {
    json content = json::array();
    const ChoiceOutput none;
    const ChoiceOutput& o = choices.empty() ? none : choices[0];
    if (!o.reasoning.empty()) content.push_back({{"type", "thinking"}, {"thinking", o.reasoning}, {"signature", ""}});
    if (!o.content.empty()) content.push_back({{"type", "text"}, {"text", o.content}});
    for (const ToolCallOut& t : o.tool_calls) {
      json input;
      if (!parse_json_linear(t.arguments, input) || !input.is_object()) input = json::object();  // cut by max_tokens: no usable input
      content.push_back({{"type", "tool_use"}, {"id", tool_use_id(t.id)}, {"name", t.name}, {"input", std::move(input)}});
    }
    json j = head();
    j["content"] = std::move(content);
    j["stop_reason"] = anthropic_stop_reason(o);
    j["stop_sequence"] = stop_sequence_json(o);
    j["usage"] = usage_json(u);
    return dump(j);
  }

 private:
  enum class Kind { kNone, kText, kThinking, kToolUse };

  json head() const {
    return {{"id", meta_.id}, {"type", "message"}, {"role", "assistant"}, {"model", meta_.model}};
  }

  std::string open(Kind kind, json block, bool force = false) {
    if (open_ == kind && !force) return {};
    std::string out = close();
    open_ = kind;
    tool_input_sent_ = false;
    return out + event("content_block_start",
                       {{"type", "content_block_start"}, {"index", index_}, {"content_block", std::move(block)}});
  }

  std::string block_delta(json delta) {
    return event("content_block_delta", {{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(delta)}});
  }

  std::string close() {
    if (open_ == Kind::kNone) return {};
    std::string out;
    // A call without arguments still needs an input object once assembled.
    if (open_ == Kind::kToolUse && !tool_input_sent_) out += block_delta({{"type", "input_json_delta"}, {"partial_json", "{}"}});
    out += event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
    open_ = Kind::kNone;
    ++index_;
    return out;
  }

  MessagesMeta meta_;
  Kind open_ = Kind::kNone;
  int index_ = 0;            // the open (or next) content block
  int tool_index_ = -1;      // the chat layer's index of the open tool call
  bool tool_input_sent_ = false;
  ChoiceOutput end_;
};

}  // namespace

std::unique_ptr<ResponseSerializer> make_messages_serializer(MessagesMeta meta) {
  return std::make_unique<MessagesSerializer>(std::move(meta));
}

const char* anthropic_error_type(int status) {
  switch (status) {
    case 400: case 405: case 415: case 422: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: case 529: return "overloaded_error";
    default: return status < 500 ? "invalid_request_error" : "api_error";
  }
}

std::string anthropic_error_body(const ApiError& e) {
  // The chat layer names tool schemas as OpenAI does (tools[i].function.parameters): say it as the
  // client wrote it.
  std::string message = e.what();
  for (size_t pos; (pos = message.find("].function.parameters")) != std::string::npos;)
    message.replace(pos, 21, "].input_schema");
  return dump({{"type", "error"}, {"error", {{"type", anthropic_error_type(e.status())}, {"message", message}}}});
}

}  // namespace anelm::server
