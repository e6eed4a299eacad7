// Responses API answers: the Response object and its SSE events, in the shapes of the official
// openai SDK types (src/resources/responses/responses.ts): Response, ResponseOutputMessage,
// ResponseFunctionToolCall, ResponseReasoningItem and the response.* stream events.
#include "server/responses_serializer.h"

#include <chrono>

#include "server/api_error.h"

namespace anelm::server {

using json = nlohmann::ordered_json;

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json usage_json(const UsageInfo& u) {
  // Reasoning tokens are not counted apart from the rest of the output (0).
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json text_part(const std::string& text) {
  return {{"type", "output_text"}, {"annotations", json::array()}, {"logprobs", json::array()}, {"text", text}};
}
json reasoning_part(const std::string& text) { return {{"type", "reasoning_text"}, {"text", text}}; }

json message_item(const std::string& id, const std::string& status, const std::string* text) {
  return {{"id", id}, {"type", "message"}, {"status", status},
          {"content", text ? json::array({text_part(*text)}) : json::array()}, {"role", "assistant"}};
}
json reasoning_item(const std::string& id, const std::string& status, const std::string* text) {
  return {{"id", id}, {"type", "reasoning"}, {"status", status}, {"summary", json::array()},
          {"content", text ? json::array({reasoning_part(*text)}) : json::array()}};
}

// The ResponseError code of a failure after the stream started.
const char* error_code(const ApiError& e) {
  if (e.status() == 429) return "rate_limit_exceeded";
  if (e.status() >= 400 && e.status() < 500) return "invalid_prompt";
  return "server_error";
}

class ResponsesSerializer : public ResponseSerializer {
 public:
  ResponsesSerializer(ResponseMeta meta, ResponsesContext rc) : meta_(std::move(meta)), rc_(std::move(rc)) {}

  std::string stream_start() override {
    const json r = response("in_progress", json::array(), nullptr, json(nullptr));
    std::string out = event("response.created", {{"response", r}});  // (statements: sequence numbers in order)
    return out + event("response.in_progress", {{"response", r}});
  }
  std::string choice_start(int) override { return {}; }

  std::string delta(int, const OutputDelta& d, std::span<const TokenLogprob>) override {
    std::string out;
    if (!d.reasoning.empty()) {
      out += ensure_open(Kind::kReasoning);
      open_.text += d.reasoning;
      out += event("response.reasoning_text.delta", {{"item_id", open_.id}, {"output_index", open_.output_index},
                                                    {"content_index", 0}, {"delta", d.reasoning}});
    }
    if (!d.content.empty()) {
      out += ensure_open(Kind::kMessage);
      open_.text += d.content;
      out += event("response.output_text.delta", {{"item_id", open_.id}, {"output_index", open_.output_index},
                                                 {"content_index", 0}, {"delta", d.content}, {"logprobs", json::array()}});
    }
    for (const ToolCallDelta& t : d.tool_calls) {
      if (!t.id.empty()) {
        out += close("completed");
        out += open(Kind::kCall, t.index, t.id, t.name);
      }
      // The chat parser finishes one call before it starts the next: fragments extend the open one.
      if (t.arguments.empty() || open_.kind != Kind::kCall || open_.tool_index != t.index) continue;
      open_.text += t.arguments;
      out += event("response.function_call_arguments.delta",
                   {{"item_id", open_.id}, {"output_index", open_.output_index}, {"delta", t.arguments}});
    }
    return out;
  }

  std::string choice_end(int, const ChoiceOutput& out) override {
    finish_ = out.finish_reason;
    const std::string last_status = finish_ == "length" ? "incomplete" : "completed";
    std::string s;
    if (!saw_message_or_call_) {  // as the body: an answer without text or calls is an empty message
      s += close("completed");
      s += ensure_open(Kind::kMessage);
    }
    return s + close(last_status);
  }

  std::string stream_end(const UsageInfo& usage) override {
    const std::string status = finish_ == "length" ? "incomplete" : "completed";
    const json r = response(status, output_, &usage, json(nullptr));
    save(r, output_);
    return event(status == "completed" ? "response.completed" : "response.incomplete", {{"response", r}});
  }

  std::string stream_error(const ApiError& e) override {
    const json err = {{"code", error_code(e)}, {"message", e.what()}};
    return event("response.failed", {{"response", response("failed", output_, nullptr, err)}});
  }

  std::string body(std::span<const ChoiceOutput> choices, const UsageInfo& usage) override {
    const ChoiceOutput& c = choices.front();  // Responses have one answer (the request has no n)
    json output = json::array();
    if (!c.reasoning.empty()) output.push_back(reasoning_item(make_response_id("rs_"), "completed", &c.reasoning));
    if (!c.content.empty() || c.tool_calls.empty())
      output.push_back(message_item(make_response_id("msg_"), "completed", &c.content));
    for (const ToolCallOut& t : c.tool_calls) output.push_back(call_item(make_response_id("fc_"), "completed", t.id, t.name, t.arguments));
    const bool incomplete = c.finish_reason == "length";
    if (incomplete && !output.empty()) output.back()["status"] = "incomplete";
    const json r = response(incomplete ? "incomplete" : "completed", output, &usage, json(nullptr));
    save(r, output);
    return dump(r);
  }

 private:
  enum class Kind { kNone, kReasoning, kMessage, kCall };
  struct OpenItem {
    Kind kind = Kind::kNone;
    std::string id;
    int output_index = 0;
    std::string text;  // text, reasoning or arguments so far
    int tool_index = -1;
    std::string call_id, name;
  };

  std::string event(const char* type, const json& fields) {
    json j = {{"type", type}};
    for (const auto& [k, v] : fields.items()) j[k] = v;
    j["sequence_number"] = seq_++;
    std::string out = "event: ";
    out += type;
    out += "\ndata: ";
    out += dump(j);
    out += "\n\n";
    return out;
  }

  json call_item(const std::string& id, const std::string& status, const std::string& call_id, const std::string& name,
                 const std::string& arguments) const {
    json j = {{"id", id}, {"type", "function_call"}, {"status", status}, {"arguments", arguments},
              {"call_id", call_id}, {"name", name}};
    if (auto it = rc_.tool_namespace.find(name); it != rc_.tool_namespace.end()) j["namespace"] = it->second;
    return j;
  }

  // The open item as it is now (`done`: with its content).
  json item(const std::string& status, bool done) const {
    const std::string* text = done ? &open_.text : nullptr;
    switch (open_.kind) {
      case Kind::kReasoning: return reasoning_item(open_.id, status, text);
      case Kind::kMessage: return message_item(open_.id, status, text);
      default: return call_item(open_.id, status, open_.call_id, open_.name, done ? open_.text : "");
    }
  }

  std::string ensure_open(Kind kind) {
    if (open_.kind == kind) return {};
    std::string out = close("completed");
    return out + open(kind, -1, "", "");
  }

  std::string open(Kind kind, int tool_index, const std::string& call_id, const std::string& name) {
    open_ = OpenItem{kind, make_response_id(kind == Kind::kReasoning ? "rs_" : kind == Kind::kMessage ? "msg_" : "fc_"),
                     static_cast<int>(output_.size()), "", tool_index, call_id, name};
    if (kind != Kind::kReasoning) saw_message_or_call_ = true;
    std::string out = event("response.output_item.added", {{"output_index", open_.output_index}, {"item", item("in_progress", false)}});
    if (kind == Kind::kCall) return out;
    const json part = kind == Kind::kMessage ? text_part("") : reasoning_part("");
    return out + event("response.content_part.added", {{"item_id", open_.id}, {"output_index", open_.output_index},
                                                      {"content_index", 0}, {"part", part}});
  }

  std::string close(const std::string& status) {
    if (open_.kind == Kind::kNone) return {};
    std::string out;
    if (open_.kind == Kind::kCall) {
      out += event("response.function_call_arguments.done",
                   {{"item_id", open_.id}, {"output_index", open_.output_index}, {"arguments", open_.text}, {"name", open_.name}});
    } else {
      const bool message = open_.kind == Kind::kMessage;
      json done = {{"item_id", open_.id}, {"output_index", open_.output_index}, {"content_index", 0}, {"text", open_.text}};
      if (message) done["logprobs"] = json::array();
      out += event(message ? "response.output_text.done" : "response.reasoning_text.done", done);
      out += event("response.content_part.done", {{"item_id", open_.id}, {"output_index", open_.output_index}, {"content_index", 0},
                                                 {"part", message ? text_part(open_.text) : reasoning_part(open_.text)}});
    }
    json it = item(status, true);
    out += event("response.output_item.done", {{"output_index", open_.output_index}, {"item", it}});
    output_.push_back(std::move(it));
    open_ = OpenItem{};
    return out;
  }

  json response(const std::string& status, const json& output, const UsageInfo* usage, json error) const {
    const json& e = rc_.echo;
    auto echo = [&](const char* key) { return e.contains(key) ? e[key] : json(nullptr); };
    json j = {{"id", meta_.id}, {"object", "response"}, {"created_at", meta_.created}, {"status", status},
              {"background", false}, {"error", std::move(error)},
              {"incomplete_details", status == "incomplete" ? json{{"reason", "max_output_tokens"}} : json(nullptr)},
              {"instructions", echo("instructions")}, {"max_output_tokens", echo("max_output_tokens")},
              {"model", meta_.model}, {"output", output}};
    for (const char* key : {"parallel_tool_calls", "previous_response_id", "prompt_cache_key", "reasoning",
                            "safety_identifier", "service_tier", "store", "temperature", "text", "tool_choice", "tools",
                            "top_p", "truncation"})
      j[key] = echo(key);
    j["usage"] = usage ? usage_json(*usage) : json(nullptr);
    j["user"] = echo("user");
    j["metadata"] = e.contains("metadata") ? e["metadata"] : json::object();
    if (status == "completed") j["completed_at"] = unix_now();
    return j;
  }

  void save(const json& response, const json& output) {
    if (!rc_.store) return;
    json conversation = std::move(rc_.conversation);
    for (const json& it : output) conversation.push_back(responses_canonical_output(it));
    rc_.store->put(meta_.id, ResponseStore::Entry{dump(response), dump(conversation)});
  }

  ResponseMeta meta_;
  ResponsesContext rc_;
  int seq_ = 0;
  OpenItem open_;
  json output_ = json::array();  // finished items of a stream
  bool saw_message_or_call_ = false;
  std::string finish_;
};

}  // namespace

json responses_canonical_output(const json& it) {
  const std::string type = it["type"];
  if (type == "function_call") {
    // A call cut off by max_output_tokens may hold invalid JSON: kept as a JSON string, so that
    // continuing the conversation still works.
    std::string args = it["arguments"];
    if (!json::accept(args)) args = json(args).dump(-1, ' ', false, json::error_handler_t::replace);
    return {{"type", "function_call"}, {"call_id", it["call_id"]}, {"name", it["name"]}, {"arguments", args}};
  }
  std::string text;
  for (const json& p : it["content"]) text += p["text"].get<std::string>();
  if (type == "reasoning")
    return {{"type", "reasoning"}, {"summary", json::array()}, {"content", json::array({reasoning_part(text)})}};
  return {{"type", "message"}, {"role", "assistant"}, {"content", text}};
}

std::unique_ptr<ResponseSerializer> make_responses_serializer(ResponseMeta meta, ResponsesContext rc) {
  return std::make_unique<ResponsesSerializer>(std::move(meta), std::move(rc));
}

}  // namespace anelm::server
