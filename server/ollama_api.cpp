// Ollama requests -> the chat layer's ChatRequest and the shared GenerationFields (the answer side:
// ollama_response.cpp). A chat request is rewritten into the OpenAI shape and parsed by the chat
// completions parser, so that messages, tools and formats are validated in one place; `options`
// (Ollama's sampling and runner settings) are read here.
#include "server/ollama_api.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <spdlog/spdlog.h>

#include "server/api_error.h"
#include "server/http_policy.h"
#include "server/json_body.h"
#include "server/json_fields.h"

namespace anelm::server {

using json = nlohmann::ordered_json;  // tools and arguments keep the client's key order

namespace {

constexpr int kMaxRequestDepth = 128;   // as the chat parser: tool schemas nest a few dozen levels
constexpr size_t kMaxStops = 16;        // StopMatcher checks every stop per emitted piece
constexpr int kMaxTokensCap = 1 << 20;
constexpr size_t kMaxContextIds = 1 << 20;
constexpr int kMaxTopLogprobs = 20;
constexpr size_t kMaxToolCalls = 1024;  // per assistant turn: each tool result scans them for its name

json parse_body(std::string_view body) { return parse_json_body(body, kMaxRequestDepth); }

std::string at(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

std::string num(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// ---- options ----------------------------------------------------------------------------------

// Runner settings fixed when the server starts, and settings without effect here: accepted, as
// Ollama accepts options a model does not use, and logged at debug.
constexpr const char* kIgnoredOptions[] = {
    "num_ctx", "num_batch", "num_gpu", "main_gpu", "low_vram", "f16_kv", "logits_all", "vocab_only",
    "use_mmap", "use_mlock", "num_thread", "numa", "num_keep", "embedding_only", "penalize_newline",
    "mirostat_tau", "mirostat_eta"};

std::optional<double> opt_number(const json& o, const char* key, double lo, double hi) {
  const json* v = field(o, key);
  if (!v) return std::nullopt;
  const std::string name = std::string("options.") + key;
  if (!v->is_number() || !std::isfinite(v->get<double>()))
    throw invalid_field(name, name + " must be a number");
  const double d = v->get<double>();
  if (d < lo || d > hi) throw invalid_field(name, name + " must be in [" + num(lo) + ", " + num(hi) + "], got " + num(d));
  return d;
}

// Ollama reads integer options from JSON numbers and truncates a fraction.
std::optional<int64_t> opt_int(const json& o, const char* key, int64_t lo, int64_t hi) {
  const auto d = opt_number(o, key, static_cast<double>(lo), static_cast<double>(hi));
  if (!d) return std::nullopt;
  return static_cast<int64_t>(std::trunc(*d));
}

// A sampler that would change the output and is not implemented: a 400 unless it is off.
void refuse_unless_off(const json& o, const char* key, bool (*off)(double), const char* what) {
  const auto v = opt_number(o, key, -1e9, 1e9);
  if (v && !off(*v))
    throw invalid_field(std::string("options.") + key,
                        std::string("options.") + key + " = " + num(*v) + " is not supported by this server (" + what + ")");
}

void apply_options(const json& j, GenerationFields& g) {
  const json* o = field(j, "options");
  if (!o) return;
  if (!o->is_object()) throw invalid_field("options", "options must be an object");
  engine::SamplingParams& s = g.sampling;
  if (auto v = opt_int(*o, "num_predict", -2, kMaxTokensCap); v && *v >= 0) g.max_tokens = static_cast<int>(*v);
  if (auto v = opt_number(*o, "temperature", 0, 100)) s.temperature = static_cast<float>(*v);
  if (auto v = opt_int(*o, "top_k", std::numeric_limits<int32_t>::min(), 1 << 20)) s.top_k = static_cast<int>(std::max<int64_t>(*v, 0));
  if (auto v = opt_number(*o, "top_p", 0, 1)) s.top_p = static_cast<float>(*v);
  if (auto v = opt_number(*o, "min_p", 0, 1)) s.min_p = static_cast<float>(*v);
  if (auto v = opt_number(*o, "repeat_penalty", 0, 10)) s.repetition_penalty = *v > 0 ? static_cast<float>(*v) : 1.0f;
  if (auto v = opt_int(*o, "repeat_last_n", -1, 1 << 20)) s.penalty_last_n = static_cast<int>(*v);
  if (auto v = opt_number(*o, "presence_penalty", -100, 100)) s.presence_penalty = static_cast<float>(*v);
  if (auto v = opt_number(*o, "frequency_penalty", -100, 100)) s.frequency_penalty = static_cast<float>(*v);
  if (auto v = opt_int(*o, "seed", std::numeric_limits<int64_t>::min() / 2, std::numeric_limits<int64_t>::max() / 2); v && *v >= 0) {
    s.seed = static_cast<uint64_t>(*v);  // Ollama's -1: a fresh seed per request
    g.seed_given = true;
  }
  try {
    g.stop = parse_stop(*o, kMaxStops);
  } catch (const ApiError& e) {
    throw invalid_field("options.stop", std::string("options.") + e.what());
  }
  refuse_unless_off(*o, "mirostat", [](double v) { return v == 0; }, "mirostat sampling");
  refuse_unless_off(*o, "typical_p", [](double v) { return v >= 1; }, "locally typical sampling; 1 turns it off");
  refuse_unless_off(*o, "tfs_z", [](double v) { return v >= 1; }, "tail-free sampling; 1 turns it off");
  static constexpr const char* kRead[] = {"num_predict", "temperature", "top_k", "top_p", "min_p", "repeat_penalty",
                                          "repeat_last_n", "presence_penalty", "frequency_penalty", "seed", "stop",
                                          "mirostat", "typical_p", "tfs_z"};
  for (const auto& [key, value] : o->items()) {
    bool read = false;
    for (const char* k : kRead) read = read || key == k;
    if (read) continue;
    bool known = false;
    for (const char* k : kIgnoredOptions) known = known || key == k;
    spdlog::debug("ollama request: option '{}' ignored{}", log_escape(key, 64), known ? " (no effect on this server)" : " (unknown)");
  }
}

// format: "json" (any JSON object), a JSON schema, or "" / absent (free text).
void apply_format(const json& j, GenerationFields& g) {
  const json* f = field(j, "format");
  if (!f || (f->is_string() && f->get_ref<const std::string&>().empty())) return;
  if (f->is_string() && f->get_ref<const std::string&>() == "json") {
    g.response_format.kind = ResponseFormat::Kind::kJsonObject;
  } else if (f->is_object() || f->is_boolean()) {
    g.response_format.kind = ResponseFormat::Kind::kJsonSchema;
    g.response_format.schema = *f;
    g.response_format.name = "format";
    // Ollama drops what its grammar cannot express; so does the grammar helper when not strict.
    g.response_format.strict = false;
  } else {
    throw invalid_field("format", "format must be \"json\" or a JSON schema object");
  }
}

// think: true / false (the template's enable_thinking) or a level (gpt-oss: reasoning_effort).
void apply_think(const json& j, json& kwargs) {
  const json* t = field(j, "think");
  if (!t) return;
  if (t->is_boolean()) {
    kwargs["enable_thinking"] = t->get<bool>();
  } else if (t->is_string() && (*t == "low" || *t == "medium" || *t == "high")) {
    kwargs["enable_thinking"] = true;
    kwargs["reasoning_effort"] = *t;
  } else {
    throw invalid_field("think", "think must be true, false, \"low\", \"medium\" or \"high\"");
  }
}

void refuse_images(const json& obj, const std::string& where) {
  const json* images = field(obj, "images");
  if (!images) return;
  const std::string name = field_path(where, "images");
  if (!images->is_array()) throw invalid_field(name, name + " must be an array");
  if (!images->empty()) throw invalid_field(name, name + ": images are not supported by this server (text-only models)");
}

void check_fields(const json& j, std::initializer_list<const char*> read, const char* what) {
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : read) known = known || key == k;
    if (!known) spdlog::debug("ollama {} request: field '{}' ignored", what, log_escape(key, 64));  // keep_alive, ...
  }
}

// The shared top-level fields: model, options, format, stream (true unless false), logprobs.
GenerationFields parse_generation(const json& j, const engine::SamplingParams& defaults) {
  GenerationFields g;
  g.sampling = defaults;
  if (const json* m = field(j, "model"); m && !m->is_string()) throw invalid_field("model", "model must be a string");
  apply_options(j, g);
  apply_format(j, g);
  g.stream = get_bool(j, "stream", true);
  g.logprobs = get_bool(j, "logprobs", false);
  if (auto v = get_int(j, "top_logprobs", 0, kMaxTopLogprobs)) {
    g.top_logprobs = static_cast<int>(*v);
    if (*v > 0) g.logprobs = true;
  }
  return g;
}

// ---- chat messages ----------------------------------------------------------------------------

// Ollama's conversation in the OpenAI shape. Tool calls carry no ids in Ollama's API; each gets one,
// and a tool message answers the first unanswered call of its tool_name (else the first unanswered
// call), so that templates that match results to calls by id see them paired.
class MessageTranslator {
 public:
  json translate(const json& messages) {
    if (!messages.is_array()) throw invalid_field("messages", "messages must be an array");
    json out = json::array();
    for (size_t i = 0; i < messages.size(); ++i) out.push_back(message(messages[i], at("messages", i)));
    return out;
  }

 private:
  json message(const json& m, const std::string& where) {
    if (!m.is_object()) throw invalid_field(where, where + " must be an object");
    const std::string role = get_string(m, "role", where, true);
    refuse_images(m, where);
    json out = {{"role", role}, {"content", get_string(m, "content", where, false)}};
    for (const auto& [key, value] : m.items())
      if (key != "role" && key != "content" && key != "images" && key != "thinking" && key != "tool_calls" &&
          key != "tool_name" && key != "tool_call_id")
        spdlog::debug("ollama chat request: field '{}.{}' ignored", where, log_escape(key, 64));
    if (role == "assistant") {
      if (const std::string thinking = get_string(m, "thinking", where, false); !thinking.empty())
        out["reasoning_content"] = thinking;
      if (const json* calls = field(m, "tool_calls")) out["tool_calls"] = tool_calls(*calls, field_path(where, "tool_calls"));
    } else if (role == "tool") {
      const std::string name = get_string(m, "tool_name", where, false);
      if (!name.empty()) out["name"] = name;
      std::string id = get_string(m, "tool_call_id", where, false);
      out["tool_call_id"] = id.empty() ? answer(name) : id;
    }
    return out;
  }

  json tool_calls(const json& calls, const std::string& where) {
    if (!calls.is_array()) throw invalid_field(where, where + " must be an array");
    if (calls.size() > kMaxToolCalls) throw invalid_field(where, where + ": at most " + std::to_string(kMaxToolCalls) + " calls");
    pending_.clear();
    json out = json::array();
    for (size_t k = 0; k < calls.size(); ++k) {
      const std::string w = at(where, k);
      const json& c = calls[k];
      if (!c.is_object()) throw invalid_field(w, w + " must be an object");
      const json* fn = field(c, "function");
      if (!fn || !fn->is_object()) throw invalid_field(field_path(w, "function"), field_path(w, "function") + " must be an object");
      const std::string name = get_string(*fn, "name", field_path(w, "function"), true);
      std::string id = get_string(c, "id", w, false);
      if (id.empty()) id = "call_" + std::to_string(++calls_seen_);
      json call = {{"id", id}, {"type", "function"}, {"function", {{"name", name}}}};
      if (const json* args = field(*fn, "arguments")) call["function"]["arguments"] = *args;  // an object (or JSON text)
      out.push_back(std::move(call));
      pending_.emplace_back(name, id);
    }
    return out;
  }

  std::string answer(const std::string& name) {
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& p) { return p.first == name; });
    if (it == pending_.end()) it = pending_.begin();
    if (it == pending_.end()) return "call_" + std::to_string(++calls_seen_);
    std::string id = it->second;
    pending_.erase(it);
    return id;
  }

  std::vector<std::pair<std::string, std::string>> pending_;  // the last assistant turn's unanswered calls
  size_t calls_seen_ = 0;
};

}  // namespace

OllamaChatRequest parse_ollama_chat_request(std::string_view body, const engine::SamplingParams& defaults) {
  const json j = parse_body(body);
  check_fields(j, {"model", "messages", "tools", "format", "options", "stream", "think", "logprobs", "top_logprobs"}, "chat");
  OllamaChatRequest out;
  GenerationFields gen = parse_generation(j, defaults);
  const json* messages = field(j, "messages");
  if (!messages || (messages->is_array() && messages->empty())) {
    out.load_only = true;
    out.chat.gen = std::move(gen);
    return out;
  }
  // The conversation and tools in the OpenAI shape, validated by the chat completions parser.
  json openai = json::object();
  openai["messages"] = MessageTranslator().translate(*messages);
  if (const json* tools = field(j, "tools")) openai["tools"] = *tools;
  json kwargs = json::object();
  apply_think(j, kwargs);
  if (!kwargs.empty()) openai["chat_template_kwargs"] = kwargs;
  out.chat = parse_chat_request(openai.dump(-1, ' ', false, json::error_handler_t::replace), defaults);
  out.chat.gen = std::move(gen);
  return out;
}

OllamaGenerateRequest parse_ollama_generate_request(std::string_view body, const engine::SamplingParams& defaults) {
  const json j = parse_body(body);
  check_fields(j, {"model", "prompt", "suffix", "system", "template", "context", "raw", "format", "options", "stream",
                   "think", "logprobs", "top_logprobs", "images"}, "generate");
  OllamaGenerateRequest r;
  r.gen = parse_generation(j, defaults);
  r.prompt = get_string(j, "prompt", "", false);
  r.suffix = get_string(j, "suffix", "", false);
  r.system = get_string(j, "system", "", false);
  r.raw = get_bool(j, "raw", false);
  if (!get_string(j, "template", "", false).empty())
    throw invalid_field("template", "template is not supported: Ollama's Go templates are not run here; the model's own "
                                    "chat template is used (raw: true sends a prompt as it is)");
  refuse_images(j, "");
  apply_think(j, r.template_kwargs);
  if (const json* c = field(j, "context")) {
    if (!c->is_array()) throw invalid_field("context", "context must be an array of token ids");
    if (c->size() > kMaxContextIds) throw invalid_field("context", "context holds more token ids than any context");
    for (size_t i = 0; i < c->size(); ++i) {
      const json& id = (*c)[i];
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int>::max())
        throw invalid_field(at("context", i), at("context", i) + " must be a token id (a non-negative integer)");
      r.context.push_back(id.get<int>());
    }
  }
  return r;
}

OllamaEmbedRequest parse_ollama_embed_request(std::string_view body, bool legacy) {
  const json j = parse_body(body);
  OllamaEmbedRequest r;
  r.legacy = legacy;
  if (const json* m = field(j, "model"); m && !m->is_string()) throw invalid_field("model", "model must be a string");
  if (legacy) {
    check_fields(j, {"model", "prompt", "options"}, "embeddings");
    r.inputs.texts.push_back(get_string(j, "prompt", "", true));
    return r;
  }
  check_fields(j, {"model", "input", "truncate", "dimensions", "options"}, "embed");
  r.truncate = get_bool(j, "truncate", true);
  if (const json* in = field(j, "input"); in && in->is_array() && in->empty()) return r;  // Ollama: no vectors
  json openai = {{"input", field(j, "input") ? j["input"] : json()}};
  if (const json* d = field(j, "dimensions")) openai["dimensions"] = *d;
  r.inputs = parse_embeddings_request(openai.dump(-1, ' ', false, json::error_handler_t::replace));
  if (r.inputs.is_ids) throw invalid_field("input", "input must be a string or an array of strings");
  return r;
}

}  // namespace anelm::server
