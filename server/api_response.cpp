// Serialises completions and chat completions (bodies and SSE chunk payloads) exactly as OpenAI.
#include "server/api_response.h"
#include "server/logprobs_json.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "server/sse.h"
#include "tokenizer/unicode.h"

namespace anelm::server {

using json = nlohmann::ordered_json;  // fields in OpenAI's order

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string data(const json& j) { return sse_data(dump(j)); }

json usage_json(const UsageInfo& u) {
  json j = {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens}};
  j["prompt_tokens_details"] = {{"cached_tokens", u.cached_tokens}};
  return j;
}

json timings_json(const UsageInfo& u) {
  return {{"cache_n", u.cached_tokens},
          {"prompt_n", u.prompt_tokens - u.cached_tokens},
          {"prompt_ms", u.prompt_ms},
          {"predicted_n", u.completion_tokens},
          {"predicted_ms", u.predicted_ms},
          {"predicted_per_second",
           u.predicted_ms > 0 ? u.completion_tokens * 1000.0 / u.predicted_ms : 0.0}};
}

// A JSON string from raw token bytes (invalid UTF-8 is replaced at dump time).
json text_value(std::string_view s) { return json(std::string(s)); }

// A completions token as text: itself when it is valid UTF-8, else (a byte-fallback piece of a
// character) "bytes:" and each byte as \xNN, as OpenAI's legacy completions write it. Decoding the
// "bytes:" entries and joining all entries gives the exact bytes of the text. A token that itself
// begins with "bytes:" is written in the bytes form too, so the decoding is unambiguous.
std::string token_text(std::string_view s) {
  if (tok::unicode::is_valid_utf8(s) && s.substr(0, 6) != "bytes:") return std::string(s);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "bytes:";
  for (unsigned char c : s) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}


// ---- /v1/completions --------------------------------------------------------------------------

class CompletionSerializer : public ResponseSerializer {
 public:
  explicit CompletionSerializer(ResponseMeta meta) : meta_(std::move(meta)) {}

  std::string choice_start(int) override { return {}; }

  std::string delta(int index, const OutputDelta& d, std::span<const TokenLogprob> lps) override {
    return data(envelope(json::array({choice(index, d.content, lps, json(nullptr))}), true));
  }
  std::string choice_end(int index, const ChoiceOutput& out) override {
    return data(envelope(json::array({choice(index, "", {}, json(out.finish_reason))}), true));
  }
  std::string stream_end(const UsageInfo& u) override {
    if (!meta_.include_usage) return sse_done();
    json j = envelope(json::array(), false);
    j["usage"] = usage_json(u);
    return data(j) + sse_done();
  }
  std::string body(std::span<const ChoiceOutput> choices, const UsageInfo& u) override {
    json cs = json::array();
    for (size_t i = 0; i < choices.size(); ++i)
      cs.push_back(choice(static_cast<int>(i), choices[i].content, choices[i].logprobs,
                          json(choices[i].finish_reason)));
    json j = envelope(std::move(cs), false);
    j["usage"] = usage_json(u);
    j["timings"] = timings_json(u);
    return dump(j);
  }

 private:
  json choice(int index, std::string_view text, std::span<const TokenLogprob> lps, json finish) const {
    json c = {{"index", index}, {"text", text_value(text)}, {"logprobs", nullptr}, {"finish_reason", finish}};
    if (meta_.logprobs) c["logprobs"] = logprobs_json(lps);
    return c;
  }
  static json logprobs_json(std::span<const TokenLogprob> lps) {
    json tokens = json::array(), lp = json::array(), top = json::array(), offs = json::array();
    for (const TokenLogprob& t : lps) {
      tokens.push_back(token_text(t.token));
      lp.push_back(t.logprob);
      json alts = json::object();
      for (const auto& [tok, p] : t.top) alts[token_text(tok)] = p;
      top.push_back(alts);
      offs.push_back(t.text_offset);
    }
    return {{"tokens", tokens}, {"token_logprobs", lp}, {"top_logprobs", top}, {"text_offset", offs}};
  }
  json envelope(json choices, bool chunk) const {
    json j = {{"id", meta_.id}, {"object", "text_completion"}, {"created", meta_.created},
              {"model", meta_.model}};
    if (!meta_.system_fingerprint.empty()) j["system_fingerprint"] = meta_.system_fingerprint;
    j["choices"] = std::move(choices);
    if (chunk && meta_.include_usage) j["usage"] = nullptr;
    return j;
  }
  ResponseMeta meta_;
};

// ---- /v1/chat/completions ---------------------------------------------------------------------

class ChatSerializer : public ResponseSerializer {
 public:
  explicit ChatSerializer(ResponseMeta meta) : meta_(std::move(meta)) {}

  std::string choice_start(int index) override {
    return data(chunk(index, json{{"role", "assistant"}, {"content", ""}}, json(nullptr), {}));
  }
  std::string delta(int index, const OutputDelta& d, std::span<const TokenLogprob> lps) override {
    json delta = json::object();
    if (!d.reasoning.empty()) delta["reasoning_content"] = text_value(d.reasoning);
    if (!d.content.empty() || (d.reasoning.empty() && d.tool_calls.empty())) delta["content"] = text_value(d.content);
    if (!d.tool_calls.empty()) {
      json calls = json::array();
      for (const ToolCallDelta& t : d.tool_calls) {
        json c = {{"index", t.index}};
        json fn = json::object();
        if (!t.id.empty()) {
          c["id"] = t.id;
          c["type"] = "function";
          fn["name"] = t.name;
        }
        fn["arguments"] = text_value(t.arguments);
        c["function"] = std::move(fn);
        calls.push_back(std::move(c));
      }
      delta["tool_calls"] = std::move(calls);
    }
    return data(chunk(index, std::move(delta), json(nullptr), lps));
  }
  std::string choice_end(int index, const ChoiceOutput& out) override {
    return data(chunk(index, json::object(), json(out.finish_reason), {}));
  }
  std::string stream_end(const UsageInfo& u) override {
    if (!meta_.include_usage) return sse_done();
    json j = head("chat.completion.chunk");
    j["choices"] = json::array();
    j["usage"] = usage_json(u);
    return data(j) + sse_done();
  }
  std::string body(std::span<const ChoiceOutput> choices, const UsageInfo& u) override {
    json j = head("chat.completion");
    json cs = json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
      const ChoiceOutput& o = choices[i];
      json msg = {{"role", "assistant"}, {"content", text_value(o.content)}};
      if (!o.reasoning.empty()) msg["reasoning_content"] = text_value(o.reasoning);
      if (!o.tool_calls.empty()) {
        if (o.content.empty()) msg["content"] = nullptr;  // as OpenAI: a pure tool-call turn has no content
        json calls = json::array();
        for (const ToolCallOut& t : o.tool_calls)
          calls.push_back({{"id", t.id}, {"type", "function"},
                           {"function", {{"name", t.name}, {"arguments", text_value(t.arguments)}}}});
        msg["tool_calls"] = std::move(calls);
      }
      msg["refusal"] = nullptr;
      json c = {{"index", static_cast<int>(i)}, {"message", std::move(msg)}, {"logprobs", nullptr},
                {"finish_reason", o.finish_reason}};
      if (meta_.logprobs) c["logprobs"] = logprobs_json(o.logprobs);
      cs.push_back(std::move(c));
    }
    j["choices"] = std::move(cs);
    j["usage"] = usage_json(u);
    j["timings"] = timings_json(u);
    return dump(j);
  }

 private:
  json head(const char* object) const {
    json j = {{"id", meta_.id}, {"object", object}, {"created", meta_.created}, {"model", meta_.model}};
    if (!meta_.system_fingerprint.empty()) j["system_fingerprint"] = meta_.system_fingerprint;
    return j;
  }
  json chunk(int index, json delta, json finish, std::span<const TokenLogprob> lps) const {
    json j = head("chat.completion.chunk");
    json c = {{"index", index}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", finish}};
    if (meta_.logprobs && !lps.empty()) c["logprobs"] = logprobs_json(lps);
    j["choices"] = json::array({c});
    if (meta_.include_usage) j["usage"] = nullptr;
    return j;
  }
  static json logprobs_json(std::span<const TokenLogprob> lps) {
    return {{"content", token_logprobs_json(lps)}, {"refusal", nullptr}};
  }
  ResponseMeta meta_;
};

}  // namespace

json bytes_array(const std::string& s) {
  json a = json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

json token_logprobs_json(std::span<const TokenLogprob> lps) {
  json content = json::array();
  for (const TokenLogprob& t : lps) {
    json top = json::array();
    for (const auto& [tok, p] : t.top) top.push_back({{"token", text_value(tok)}, {"logprob", p}, {"bytes", bytes_array(tok)}});
    content.push_back({{"token", text_value(t.token)}, {"logprob", t.logprob}, {"bytes", bytes_array(t.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return content;
}

std::string ResponseSerializer::stream_error(const ApiError& e) { return sse_error(e); }
std::string ResponseSerializer::keepalive() { return sse_comment("ping"); }

std::unique_ptr<ResponseSerializer> make_completion_serializer(ResponseMeta meta) {
  return std::make_unique<CompletionSerializer>(std::move(meta));
}

std::unique_ptr<ResponseSerializer> make_chat_serializer(ResponseMeta meta) {
  return std::make_unique<ChatSerializer>(std::move(meta));
}

std::string make_response_id(const std::string& prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  uint64_t n = counter.fetch_add(1) ^ (salt << 20);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(n));
  return prefix + buf;
}

}  // namespace anelm::server
