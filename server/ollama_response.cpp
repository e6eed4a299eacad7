// Ollama answers: the chat layer's choice as /api/chat message chunks or /api/generate response
// chunks (NDJSON), or one object, and Ollama's error shape.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/json_body.h"
#include "server/logprobs_json.h"
#include "server/ollama_api.h"

namespace anelm::server {

using json = nlohmann::ordered_json;  // fields in Ollama's order

const char* ollama_done_reason(const ChoiceOutput& out) { return out.finish_reason == "length" ? "length" : "stop"; }

std::string ollama_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ns));
  return buf;
}

std::string ollama_error_body(const ApiError& e) {
  return json{{"error", e.what()}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

std::string line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

int64_t ms_to_ns(double ms) { return static_cast<int64_t>(ms * 1e6); }

// Calls [first, end) of a reply's calls, each with its index in the reply.
json tool_calls_json(const std::vector<ToolCallOut>& calls, size_t first, size_t end) {
  json out = json::array();
  for (size_t i = first; i < end; ++i) {
    json args;
    // A call cut by num_predict has no usable arguments: an empty object, as the other APIs give.
    if (!parse_json_linear(calls[i].arguments, args) || !args.is_object()) args = json::object();
    out.push_back({{"function", {{"index", i}, {"name", calls[i].name}, {"arguments", std::move(args)}}}});
  }
  return out;
}

class OllamaSerializer : public ResponseSerializer {
 public:
  explicit OllamaSerializer(OllamaMeta meta) : meta_(std::move(meta)) {}

  const char* stream_content_type() const override { return "application/x-ndjson"; }
  std::string keepalive() override { return {}; }  // NDJSON has no comments; Ollama sends nothing either

  std::string choice_start(int) override { return {}; }

  std::string delta(int, const OutputDelta& d, std::span<const TokenLogprob> lps) override {
    std::string out;
    if (meta_.chat) {
      for (const ToolCallDelta& t : d.tool_calls) {
        if (t.index < 0) continue;
        if (static_cast<size_t>(t.index) >= calls_.size()) calls_.resize(static_cast<size_t>(t.index) + 1);
        ToolCallOut& c = calls_[static_cast<size_t>(t.index)];
        if (!t.id.empty()) c.id = t.id;
        if (!t.name.empty()) c.name = t.name;
        c.arguments += t.arguments;
      }
    }
    if (!d.content.empty() || !d.reasoning.empty() || !lps.empty()) out += text_chunk(d, lps);
    // A call is whole once the next one starts: it goes out then, in a chunk of its own, as Ollama
    // streams each call its parser closes (the last one at the end of the reply).
    if (calls_.size() > sent_ + 1) {
      out += calls_chunk(calls_, sent_, calls_.size() - 1);
      sent_ = calls_.size() - 1;
    }
    return out;
  }

  std::string choice_end(int, const ChoiceOutput& out) override {
    end_ = out;
    if (!meta_.chat || out.tool_calls.size() <= sent_) return {};
    return calls_chunk(out.tool_calls, sent_, out.tool_calls.size());  // the calls not out yet
  }

  std::string stream_end(const UsageInfo& u) override {
    json j = head();
    if (meta_.chat) j["message"] = message("", "");
    else j["response"] = "";
    return line(finish(std::move(j), end_, u));
  }

  std::string stream_error(const ApiError& e) override { return ollama_error_body(e) + "\n"; }

  std::string body(std::span<const ChoiceOutput> choices, const UsageInfo& u) override {
    const ChoiceOutput none;
    const ChoiceOutput& o = choices.empty() ? none : choices[0];
    json j = head();
    if (meta_.chat) {
      j["message"] = message(o.content, o.reasoning);
      if (!o.tool_calls.empty()) j["message"]["tool_calls"] = tool_calls_json(o.tool_calls, 0, o.tool_calls.size());
    } else {
      j["response"] = o.content;
      if (!o.reasoning.empty()) j["thinking"] = o.reasoning;
    }
    if (meta_.logprobs) j["logprobs"] = token_logprobs_json(o.logprobs);
    return finish(std::move(j), o, u).dump(-1, ' ', false, json::error_handler_t::replace);
  }

 private:
  json head() const { return {{"model", meta_.model}, {"created_at", ollama_timestamp()}}; }

  std::string text_chunk(const OutputDelta& d, std::span<const TokenLogprob> lps) const {
    json j = head();
    if (meta_.chat) {
      j["message"] = message(d.content, d.reasoning);
    } else {
      j["response"] = d.content;
      if (!d.reasoning.empty()) j["thinking"] = d.reasoning;
    }
    j["done"] = false;
    if (meta_.logprobs && !lps.empty()) j["logprobs"] = token_logprobs_json(lps);
    return line(j);
  }

  std::string calls_chunk(const std::vector<ToolCallOut>& calls, size_t first, size_t end) const {
    json j = head();
    j["message"] = message("", "");
    j["message"]["tool_calls"] = tool_calls_json(calls, first, end);
    j["done"] = false;
    return line(j);
  }

  static json message(const std::string& content, const std::string& thinking) {
    json m = {{"role", "assistant"}, {"content", content}};
    if (!thinking.empty()) m["thinking"] = thinking;
    return m;
  }

  // The last object: done, why, the prompt + answer ids (/api/generate) and the durations in ns.
  json finish(json j, const ChoiceOutput& o, const UsageInfo& u) const {
    j["done"] = true;
    j["done_reason"] = ollama_done_reason(o);
    if (meta_.return_context) {
      json ctx = json::array();
      for (int id : meta_.context) ctx.push_back(id);
      for (int id : o.token_ids) ctx.push_back(id);
      j["context"] = std::move(ctx);
    }
    const auto total = std::chrono::steady_clock::now() - meta_.arrived;
    j["total_duration"] = std::chrono::duration_cast<std::chrono::nanoseconds>(total).count();
    j["load_duration"] = 0;
    j["prompt_eval_count"] = u.prompt_tokens;
    j["prompt_eval_duration"] = ms_to_ns(u.prompt_ms);
    j["eval_count"] = u.completion_tokens;
    j["eval_duration"] = ms_to_ns(u.predicted_ms);
    return j;
  }

  OllamaMeta meta_;
  ChoiceOutput end_;
  std::vector<ToolCallOut> calls_;  // the reply's tool calls as the deltas build them
  size_t sent_ = 0;                 // calls_[0, sent_) are out
};

}  // namespace

std::unique_ptr<ResponseSerializer> make_ollama_serializer(OllamaMeta meta) {
  return std::make_unique<OllamaSerializer>(std::move(meta));
}

}  // namespace anelm::server
