// Parses and validates OpenAI request bodies into native structs; every failure names its field.
#include "server/api_request.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace anelm::server {

using nlohmann::json;

namespace {

constexpr int kMaxTokensCap = 1 << 20;  // far above any context; rejects absurd values early
constexpr size_t kMaxStops = 4;
constexpr size_t kMaxStopBytes = 256;

json parse_object(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw invalid_field("", "request body is not valid JSON (or not UTF-8)");
  if (!j.is_object()) throw invalid_field("", "request body must be a JSON object");
  return j;
}

// The field if present and not null.
const json* field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

bool get_bool(const json& j, const char* name, bool dflt) {
  const json* v = field(j, name);
  if (!v) return dflt;
  if (!v->is_boolean()) throw invalid_field(name, std::string(name) + " must be a boolean");
  return v->get<bool>();
}

std::optional<int64_t> get_int(const json& j, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(j, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer() && !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()))
    throw invalid_field(name, std::string(name) + " must be an integer");
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
      throw invalid_field(name, std::string(name) + " must be in [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "]");
    return static_cast<int64_t>(d);
  }
  bool neg = v->is_number_integer() && !v->is_number_unsigned() && v->get<int64_t>() < 0;
  if (!neg && v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
    throw invalid_field(name, std::string(name) + " must be at most " + std::to_string(hi));
  int64_t x = v->get<int64_t>();
  if (x < lo || x > hi)
    throw invalid_field(name, std::string(name) + " must be in [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "], got " + std::to_string(x));
  return x;
}

std::optional<float> get_number(const json& j, const char* name, double lo, double hi) {
  const json* v = field(j, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw invalid_field(name, std::string(name) + " must be a number");
  double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    throw invalid_field(name, std::string(name) + " must be in [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "]");
  return static_cast<float>(d);
}

std::vector<std::string> parse_stop(const json& j) {
  const json* v = field(j, "stop");
  std::vector<std::string> out;
  if (!v) return out;
  auto add = [&](const json& s) {
    if (!s.is_string()) throw invalid_field("stop", "stop must be a string or an array of strings");
    std::string str = s.get<std::string>();
    if (str.empty()) return;  // an empty stop string would match everything: ignore it
    if (str.size() > kMaxStopBytes) throw invalid_field("stop", "stop strings are limited to 256 bytes");
    out.push_back(std::move(str));
  };
  if (v->is_array()) {
    if (v->size() > kMaxStops) throw invalid_field("stop", "at most 4 stop sequences are allowed");
    for (const json& s : *v) add(s);
  } else {
    add(*v);
  }
  return out;
}

void reject_unsupported(const json& j) {
  if (auto n = get_int(j, "n", 1, std::numeric_limits<int>::max()); n && *n != 1)
    throw invalid_field("n", "only n = 1 is supported");
  if (auto b = get_int(j, "best_of", 1, std::numeric_limits<int>::max()); b && *b != 1)
    throw invalid_field("best_of", "only best_of = 1 is supported");
  if (const json* t = field(j, "tools"); t && !(t->is_array() && t->empty()))
    throw invalid_field("tools", "tools are not supported");
  if (const json* lb = field(j, "logit_bias"); lb && !(lb->is_object() && lb->empty()))
    throw invalid_field("logit_bias", "logit_bias is not supported");
  if (const json* s = field(j, "suffix"); s && !(s->is_string() && s->get<std::string>().empty()))
    throw invalid_field("suffix", "suffix is not supported");
  if (const json* rf = field(j, "response_format")) {
    const json* type = rf->is_object() ? field(*rf, "type") : nullptr;
    if (!type || !type->is_string() || type->get<std::string>() != "text")
      throw invalid_field("response_format", "only response_format {\"type\": \"text\"} is supported");
  }
  if (const json* m = field(j, "model"); m && !m->is_string())
    throw invalid_field("model", "model must be a string");
}

GenerationFields parse_generation_fields(const json& j, const char* max_tokens_name,
                                         const engine::SamplingParams& defaults) {
  reject_unsupported(j);
  GenerationFields g;
  g.sampling = defaults;
  if (auto mt = get_int(j, max_tokens_name, 0, kMaxTokensCap)) g.max_tokens = static_cast<int>(*mt);
  engine::SamplingParams& s = g.sampling;
  if (auto v = get_number(j, "temperature", 0.0, 2.0)) s.temperature = *v;
  if (auto v = get_number(j, "top_p", 0.0, 1.0)) s.top_p = *v;
  if (auto v = get_int(j, "top_k", 0, 1 << 20)) s.top_k = static_cast<int>(*v);
  if (auto v = get_number(j, "min_p", 0.0, 1.0)) s.min_p = *v;
  if (auto v = get_number(j, "presence_penalty", -2.0, 2.0)) s.presence_penalty = *v;
  if (auto v = get_number(j, "frequency_penalty", -2.0, 2.0)) s.frequency_penalty = *v;
  if (auto v = get_number(j, "repetition_penalty", 0.01, 10.0)) s.repetition_penalty = *v;
  if (auto v = get_int(j, "seed", std::numeric_limits<int64_t>::min(),
                       std::numeric_limits<int64_t>::max())) {
    s.seed = static_cast<uint64_t>(*v);
    g.seed_given = true;
  }
  g.stop = parse_stop(j);
  g.stream = get_bool(j, "stream", false);
  if (const json* so = field(j, "stream_options")) {
    if (!so->is_object()) throw invalid_field("stream_options", "stream_options must be an object");
    g.include_usage = get_bool(*so, "include_usage", false);
  }
  return g;
}

void parse_prompt(const json& j, CompletionRequest& r) {
  const json* p = field(j, "prompt");
  if (!p) throw invalid_field("prompt", "prompt is required");
  if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
    return;
  }
  if (!p->is_array() || p->empty())
    throw invalid_field("prompt", "prompt must be a string or a non-empty array of token ids");
  if (p->size() == 1 && (*p)[0].is_string()) {  // ["text"]: one prompt, supported
    r.prompt_text = (*p)[0].get<std::string>();
    return;
  }
  for (const json& t : *p) {
    if (t.is_string()) throw invalid_field("prompt", "an array of several prompts is not supported");
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int>::max())
      throw invalid_field("prompt", "prompt token ids must be non-negative integers");
    r.prompt_ids.push_back(t.get<int>());
  }
  r.prompt_is_ids = true;
}

std::string message_content(const json& m, size_t index, const std::string& role) {
  std::string where = "messages[" + std::to_string(index) + "].content";
  const json* c = field(m, "content");
  if (!c) {
    if (role == "assistant") return {};  // null content with tool_calls: treat as empty
    throw invalid_field(where, where + " is required");
  }
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) throw invalid_field(where, where + " must be a string or an array of parts");
  std::string out;
  for (const json& part : *c) {
    const json* type = part.is_object() ? field(part, "type") : nullptr;
    if (!type || !type->is_string() || type->get<std::string>() != "text")
      throw invalid_field(where, where + ": only text parts are supported");
    const json* text = field(part, "text");
    if (!text || !text->is_string()) throw invalid_field(where, where + ": a text part needs a string text");
    out += text->get<std::string>();
  }
  return out;
}

ChatMessage parse_message(const json& m, size_t index) {
  std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) throw invalid_field(where, where + " must be an object");
  const json* role = field(m, "role");
  if (!role || !role->is_string()) throw invalid_field(where + ".role", where + ".role must be a string");
  std::string r = role->get<std::string>();
  if (r == "developer") r = "system";
  if (r != "system" && r != "user" && r != "assistant")
    throw invalid_field(where + ".role", where + ".role '" + r +
                                             "' is not supported (system, developer, user, assistant)");
  return ChatMessage{r, message_content(m, index, r)};
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body, const engine::SamplingParams& defaults) {
  json j = parse_object(body);
  CompletionRequest r;
  r.gen = parse_generation_fields(j, "max_tokens", defaults);
  parse_prompt(j, r);
  r.echo = get_bool(j, "echo", false);
  if (const json* lp = field(j, "logprobs")) {
    if (lp->is_boolean()) throw invalid_field("logprobs", "logprobs must be an integer in [0, 5]");
    r.gen.top_logprobs = static_cast<int>(*get_int(j, "logprobs", 0, 5));
    r.gen.logprobs = true;
  }
  return r;
}

ChatRequest parse_chat_request(std::string_view body, const engine::SamplingParams& defaults) {
  json j = parse_object(body);
  ChatRequest r;
  const bool new_name = field(j, "max_completion_tokens") != nullptr;
  r.gen = parse_generation_fields(j, new_name ? "max_completion_tokens" : "max_tokens", defaults);
  const json* msgs = field(j, "messages");
  if (!msgs || !msgs->is_array() || msgs->empty())
    throw invalid_field("messages", "messages must be a non-empty array");
  for (size_t i = 0; i < msgs->size(); ++i) r.messages.push_back(parse_message((*msgs)[i], i));
  r.gen.logprobs = get_bool(j, "logprobs", false);
  if (auto t = get_int(j, "top_logprobs", 0, 20)) {
    if (!r.gen.logprobs) throw invalid_field("top_logprobs", "top_logprobs requires logprobs: true");
    r.gen.top_logprobs = static_cast<int>(*t);
  }
  return r;
}

TokenizeRequest parse_tokenize_request(std::string_view body) {
  json j = parse_object(body);
  TokenizeRequest r;
  const json* c = field(j, "content");
  if (!c || !c->is_string()) throw invalid_field("content", "content must be a string");
  r.content = c->get<std::string>();
  r.add_special = get_bool(j, "add_special", false);
  r.parse_special = get_bool(j, "parse_special", true);
  r.with_pieces = get_bool(j, "with_pieces", false);
  return r;
}

DetokenizeRequest parse_detokenize_request(std::string_view body) {
  json j = parse_object(body);
  DetokenizeRequest r;
  const json* t = field(j, "tokens");
  if (!t || !t->is_array()) throw invalid_field("tokens", "tokens must be an array of token ids");
  for (const json& id : *t) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int>::max())
      throw invalid_field("tokens", "tokens must be non-negative integers");
    r.tokens.push_back(id.get<int>());
  }
  return r;
}

}  // namespace anelm::server
