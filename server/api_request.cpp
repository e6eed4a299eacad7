// Parses and validates OpenAI request bodies into native structs; every failure names its field.
#include "server/api_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "engine/json_depth.h"
#include "server/api_error.h"
#include "server/json_body.h"
#include "server/json_fields.h"

namespace anelm::server {

// ordered: templates print tools and arguments in the order the client wrote them (as Python does).
using json = nlohmann::ordered_json;

namespace {

constexpr int kMaxTokensCap = 1 << 20;  // far above any context; rejects absurd values early
constexpr size_t kMaxStops = 4;
constexpr size_t kMaxStopBytes = 256;
constexpr int kMaxChoices = 16;
constexpr size_t kMaxPrompts = 64;           // /v1/completions prompts per request (and prompts x n)
constexpr size_t kMaxLogitBias = 1024;       // logit_bias entries
constexpr size_t kMaxTools = 128;
constexpr size_t kMaxGrammarBytes = 64 * 1024;

constexpr int kMaxRequestDepth = 128;  // tool schemas nest a few dozen levels at most

json parse_object(std::string_view body) { return parse_json_body(body, kMaxRequestDepth); }

// Fields every generation endpoint parses (besides its own).
constexpr const char* kGenerationFieldNames[] = {
    "model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "presence_penalty",
    "frequency_penalty", "repetition_penalty", "seed", "stop", "stream", "stream_options", "n",
    "response_format", "grammar", "logit_bias"};

// Fields that would change the output and are not implemented: a 400 naming them, never ignored.
// (Accepted when null, or, for modalities, when it asks for text only.)
constexpr const char* kUnimplementedFieldNames[] = {
    "audio",               // spoken output
    "prediction",          // predicted outputs (speculative decoding against a given text)
    "web_search_options",  // a server-side web search
    "functions",           // the deprecated form of tools: send tools
    "function_call",       // the deprecated form of tool_choice: send tool_choice
};

// A field that is neither shared, one of `own`, nor refused above has no meaning for a local
// server (store, metadata, user, service_tier, prompt_cache_key, safety_identifier, verbosity, ...)
// or is unknown: accepted, and logged at debug level so that a user can see what was ignored.
void check_top_level_fields(const json& j, std::initializer_list<const char*> own) {
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : kGenerationFieldNames) known = known || key == k;
    for (const char* k : own) known = known || key == k;
    if (known || value.is_null()) continue;
    for (const char* k : kUnimplementedFieldNames)
      if (key == k) throw invalid_field(key, "'" + key + "' is not supported by this server");
    if (key == "modalities") {  // ["text"] is the default and means nothing else
      bool text_only = value.is_array();
      if (text_only)
        for (const json& m : value) text_only = text_only && m.is_string() && m.get<std::string>() == "text";
      if (!text_only) throw invalid_field("modalities", "only the \"text\" modality is supported");
    }
    spdlog::debug("request field '{}' ignored (no meaning for this server)", key);
  }
}

// Accepted only with the value that means "off" (what SDKs send by default).
void reject_unsupported(const json& j) {
  if (auto b = get_int(j, "best_of", 1, std::numeric_limits<int>::max()); b && *b != 1)
    throw invalid_field("best_of", "only best_of = 1 is supported");
  if (const json* m = field(j, "model"); m && !m->is_string())
    throw invalid_field("model", "model must be a string");
}

// logit_bias: {"token id": bias in [-100, 100]}. Ids are checked against the vocabulary by the
// handler (validate_logit_bias), which knows it.
std::vector<std::pair<int, float>> parse_logit_bias(const json& j) {
  std::vector<std::pair<int, float>> out;
  const json* lb = field(j, "logit_bias");
  if (!lb) return out;
  if (!lb->is_object()) throw invalid_field("logit_bias", "logit_bias must be an object mapping token ids to numbers");
  if (lb->size() > kMaxLogitBias)
    throw invalid_field("logit_bias", "logit_bias is limited to " + std::to_string(kMaxLogitBias) + " entries");
  for (const auto& [key, value] : lb->items()) {
    const std::string where = "logit_bias." + key;
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key) digits = digits && c >= '0' && c <= '9';
    if (!digits || std::stoll(key) > std::numeric_limits<int>::max())
      throw invalid_field(where, "logit_bias keys must be token ids (non-negative integers), got '" + key + "'");
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100.0 ||
        value.get<double>() > 100.0)
      throw invalid_field(where, where + " must be a number in [-100, 100]");
    out.emplace_back(static_cast<int>(std::stoll(key)), value.get<float>());
  }
  return out;
}

ResponseFormat parse_response_format(const json& j) {
  ResponseFormat rf;
  const json* v = field(j, "response_format");
  if (!v) return rf;
  const json* type = v->is_object() ? field(*v, "type") : nullptr;
  if (!type || !type->is_string())
    throw invalid_field("response_format", "response_format must be an object with a string type");
  const std::string t = type->get<std::string>();
  if (t == "text") return rf;
  if (t == "json_object") {
    rf.kind = ResponseFormat::Kind::kJsonObject;
    return rf;
  }
  if (t != "json_schema")
    throw invalid_field("response_format.type",
                        "response_format.type must be text, json_object or json_schema, got '" + t + "'");
  const json* js = field(*v, "json_schema");
  if (!js || !js->is_object())
    throw invalid_field("response_format.json_schema", "response_format.json_schema must be an object");
  for (const auto& [key, value] : js->items()) {
    if (key != "name" && key != "schema" && key != "strict" && key != "description")
      throw invalid_field("response_format.json_schema." + key,
                          "unsupported field 'response_format.json_schema." + key + "'");
  }
  const json* schema = field(*js, "schema");
  if (!schema || !(schema->is_object() || schema->is_boolean()))
    throw invalid_field("response_format.json_schema.schema",
                        "response_format.json_schema.schema must be a JSON Schema object");
  if (const json* strict = field(*js, "strict"); strict && !strict->is_boolean())
    throw invalid_field("response_format.json_schema.strict", "response_format.json_schema.strict must be a boolean");
  if (const json* strict = field(*js, "strict")) rf.strict = strict->get<bool>();  // grammar helper: strict keyword checks
  if (const json* name = field(*js, "name")) {
    if (!name->is_string()) throw invalid_field("response_format.json_schema.name", "response_format.json_schema.name must be a string");
    rf.name = name->get<std::string>();
  }
  rf.kind = ResponseFormat::Kind::kJsonSchema;
  rf.schema = *schema;
  return rf;
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
  // The server's --logit-bias defaults stay; the request's entries add to them (and win per id).
  for (const auto& [id, bias] : parse_logit_bias(j)) {
    auto same = std::find_if(s.logit_bias.begin(), s.logit_bias.end(), [id = id](const auto& e) { return e.first == id; });
    if (same != s.logit_bias.end()) same->second = bias;
    else s.logit_bias.emplace_back(id, bias);
  }
  if (auto v = get_int(j, "seed", std::numeric_limits<int64_t>::min(),
                       std::numeric_limits<int64_t>::max())) {
    s.seed = static_cast<uint64_t>(*v);
    g.seed_given = true;
  }
  g.stop = parse_stop(j, kMaxStops);
  g.n = static_cast<int>(get_int(j, "n", 1, kMaxChoices).value_or(1));
  g.response_format = parse_response_format(j);
  g.grammar = parse_grammar(j);
  if (!g.grammar.empty() && g.response_format.kind != ResponseFormat::Kind::kText)
    throw invalid_field("grammar", "grammar and a JSON response_format cannot be combined");
  g.stream = get_bool(j, "stream", false);
  if (const json* so = field(j, "stream_options")) {
    if (!so->is_object()) throw invalid_field("stream_options", "stream_options must be an object");
    for (const auto& [key, value] : so->items())  // e.g. include_obfuscation: no meaning here
      if (key != "include_usage") spdlog::debug("request field 'stream_options.{}' ignored", key);
    g.include_usage = get_bool(*so, "include_usage", false);
  }
  return g;
}

std::vector<int> token_ids(const json& a, const std::string& where) {
  std::vector<int> ids;
  for (const json& t : a) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int>::max())
      throw invalid_field(where, where + ": token ids must be non-negative integers");
    ids.push_back(t.get<int>());
  }
  return ids;
}

// prompt: a string, an array of token ids, or an array of prompts (strings or token-id arrays).
void parse_prompt(const json& j, CompletionRequest& r) {
  const json* p = field(j, "prompt");
  if (!p) throw invalid_field("prompt", "prompt is required");
  if (p->is_string()) {
    r.prompts.push_back({p->get<std::string>(), {}, false});
    return;
  }
  if (!p->is_array() || p->empty())
    throw invalid_field("prompt", "prompt must be a string, an array of token ids, or an array of prompts");
  if ((*p)[0].is_number()) {  // one prompt as token ids
    r.prompts.push_back({{}, token_ids(*p, "prompt"), true});
    return;
  }
  if (p->size() > kMaxPrompts)
    throw invalid_field("prompt", "at most " + std::to_string(kMaxPrompts) + " prompts per request");
  for (size_t i = 0; i < p->size(); ++i) {
    const json& one = (*p)[i];
    const std::string where = "prompt[" + std::to_string(i) + "]";
    if (one.is_string()) r.prompts.push_back({one.get<std::string>(), {}, false});
    else if (one.is_array() && !one.empty()) r.prompts.push_back({{}, token_ids(one, where), true});
    else throw invalid_field(where, where + " must be a string or a non-empty array of token ids");
  }
}

// Content: a string, or an array of text parts, kept as [{"type":"text","text"}] (ChatPrompt joins
// them or hands them to a template that iterates parts). Absent or null is "" for assistant messages
// (a turn with only tool calls) and an error otherwise. Other part types (images, audio, files) would
// change the answer and are not implemented: a 400 naming the part.
json message_content(const json& m, const std::string& where, const std::string& role) {
  const json* c = field(m, "content");
  if (!c) {
    if (role == "assistant") return "";
    throw invalid_field(where + ".content", where + ".content is required");
  }
  if (c->is_string()) return *c;
  if (!c->is_array()) throw invalid_field(where + ".content", where + ".content must be a string or an array of parts");
  json out = json::array();
  for (size_t i = 0; i < c->size(); ++i) {
    const json& part = (*c)[i];
    const std::string w = where + ".content[" + std::to_string(i) + "]";
    const json* type = part.is_object() ? field(part, "type") : nullptr;
    if (!type || !type->is_string() || type->get<std::string>() != "text")
      throw invalid_field(w + ".type", w + ": only text parts are supported");
    const json* text = field(part, "text");
    if (!text || !text->is_string()) throw invalid_field(w + ".text", w + ".text must be a string");
    out.push_back({{"type", "text"}, {"text", *text}});  // cache_control and the like dropped
  }
  return out;
}

std::string required_string(const json& obj, const char* key, const std::string& where) {
  const json* v = field(obj, key);
  if (!v || !v->is_string()) throw invalid_field(where + "." + key, where + "." + key + " must be a string");
  return v->get<std::string>();
}

// An assistant turn's tool_calls, as templates read them: arguments parsed into an object (the
// OpenAI wire form is a JSON string; transformers' templates expect a mapping).
json parse_tool_calls(const json& calls, const std::string& where) {
  if (!calls.is_array()) throw invalid_field(where, where + " must be an array");
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    const json& c = calls[i];
    if (!c.is_object()) throw invalid_field(w, w + " must be an object");
    if (const json* t = field(c, "type"); t && (!t->is_string() || t->get<std::string>() != "function"))
      throw invalid_field(w + ".type", w + ".type must be \"function\"");
    const json* fn = field(c, "function");
    if (!fn || !fn->is_object()) throw invalid_field(w + ".function", w + ".function must be an object");
    json args = json::object();
    if (const json* a = field(*fn, "arguments")) {
      if (a->is_string()) {
        const std::string& text = a->get_ref<const std::string&>();
        if (engine::json_nesting_depth(text, kMaxRequestDepth) > kMaxRequestDepth)
          throw invalid_field(w + ".function.arguments", w + ".function.arguments nests deeper than " +
                                                             std::to_string(kMaxRequestDepth) + " levels");
        if (!parse_json_linear(text, args))
          throw invalid_field(w + ".function.arguments", w + ".function.arguments is not valid JSON");
      } else if (a->is_object()) {
        args = *a;
      } else {
        throw invalid_field(w + ".function.arguments", w + ".function.arguments must be a JSON string");
      }
    }
    json call = {{"type", "function"},
                 {"function", {{"name", required_string(*fn, "name", w + ".function")}, {"arguments", args}}}};
    if (const json* id = field(c, "id")) {
      if (!id->is_string()) throw invalid_field(w + ".id", w + ".id must be a string");
      call["id"] = *id;
    }
    out.push_back(std::move(call));
  }
  return out;
}

json parse_message(const json& m, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) throw invalid_field(where, where + " must be an object");
  const json* role = field(m, "role");
  if (!role || !role->is_string()) throw invalid_field(where + ".role", where + ".role must be a string");
  std::string r = role->get<std::string>();
  if (r == "developer") r = "system";
  if (r != "system" && r != "user" && r != "assistant" && r != "tool")
    throw invalid_field(where + ".role", where + ".role '" + r +
                                             "' is not supported (system, developer, user, assistant, tool)");
  for (const auto& [key, value] : m.items()) {
    const bool used = key == "role" || key == "content" || key == "name" ||
                      (r == "assistant" && (key == "tool_calls" || key == "reasoning_content")) ||
                      (r == "tool" && key == "tool_call_id");
    if (used || value.is_null()) continue;
    // Audio and the deprecated function_call carry conversation content this server cannot render.
    if (key == "audio" || key == "function_call")
      throw invalid_field(where + "." + key, "'" + where + "." + key + "' is not supported");
    spdlog::debug("request field '{}.{}' ignored", where, key);  // refusal, cache_control, id, ...
  }
  json out = {{"role", r}, {"content", message_content(m, where, r)}};
  if (const json* name = field(m, "name")) {
    if (!name->is_string()) throw invalid_field(where + ".name", where + ".name must be a string");
    out["name"] = *name;
  }
  if (r == "assistant") {
    if (const json* rc = field(m, "reasoning_content")) {
      if (!rc->is_string()) throw invalid_field(where + ".reasoning_content", where + ".reasoning_content must be a string");
      out["reasoning_content"] = *rc;
    }
    if (const json* calls = field(m, "tool_calls"); calls && !calls->empty())
      out["tool_calls"] = parse_tool_calls(*calls, where + ".tool_calls");
  }
  if (r == "tool") out["tool_call_id"] = required_string(m, "tool_call_id", where);
  return out;
}

json parse_tools(const json& j) {
  const json* t = field(j, "tools");
  if (!t) return json::array();
  if (!t->is_array()) throw invalid_field("tools", "tools must be an array");
  if (t->size() > kMaxTools) throw invalid_field("tools", "at most " + std::to_string(kMaxTools) + " tools");
  json out = json::array();
  for (size_t i = 0; i < t->size(); ++i) {
    const std::string w = "tools[" + std::to_string(i) + "]";
    const json& tool = (*t)[i];
    if (!tool.is_object()) throw invalid_field(w, w + " must be an object");
    const json* type = field(tool, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "function")
      throw invalid_field(w + ".type", w + ".type must be \"function\"");
    const json* fn = field(tool, "function");
    if (!fn || !fn->is_object()) throw invalid_field(w + ".function", w + ".function must be an object");
    for (const auto& [key, value] : fn->items()) {
      if (key != "name" && key != "description" && key != "parameters" && key != "strict")
        spdlog::debug("request field '{}.function.{}' ignored", w, key);
    }
    const std::string name = required_string(*fn, "name", w + ".function");
    if (name.empty() || name.size() > 64)
      throw invalid_field(w + ".function.name", w + ".function.name must have 1 to 64 characters");
    for (const json& prev : out)
      if (prev["function"]["name"] == name) throw invalid_field(w + ".function.name", "duplicate tool name '" + name + "'");
    if (const json* p = field(*fn, "parameters"); p && !p->is_object())
      throw invalid_field(w + ".function.parameters", w + ".function.parameters must be a JSON Schema object");
    if (const json* d = field(*fn, "description"); d && !d->is_string())
      throw invalid_field(w + ".function.description", w + ".function.description must be a string");
    // What templates and the grammar read; `strict` is implied (calls are always grammar-enforced).
    json f = {{"name", name}};
    if (const json* d = field(*fn, "description")) f["description"] = *d;
    // No parameters: a function without arguments (as OpenAI documents), in the shape templates
    // and the schema compiler expect.
    const json* params = field(*fn, "parameters");
    f["parameters"] = params ? *params : json{{"type", "object"}, {"properties", json::object()}};
    out.push_back({{"type", "function"}, {"function", std::move(f)}});
  }
  return out;
}

ToolChoice parse_tool_choice(const json& j, const json& tools) {
  ToolChoice tc;
  const json* v = field(j, "tool_choice");
  if (!v) return tc;
  if (v->is_string()) {
    const std::string s = v->get<std::string>();
    if (s == "auto") tc.kind = ToolChoice::Kind::kAuto;
    else if (s == "none") tc.kind = ToolChoice::Kind::kNone;
    else if (s == "required") tc.kind = ToolChoice::Kind::kRequired;
    else throw invalid_field("tool_choice", "tool_choice must be auto, none, required or a function, got '" + s + "'");
  } else if (v->is_object()) {
    const json* fn = field(*v, "function");
    // {"type":"function","function":{"name"}}, or the Responses API's flat {"type":"function","name"}.
    if (fn && !fn->is_object()) throw invalid_field("tool_choice", "tool_choice.function must be an object");
    if (!fn && !field(*v, "name")) throw invalid_field("tool_choice", "tool_choice.function must be an object");
    tc.kind = ToolChoice::Kind::kFunction;
    tc.name = fn ? required_string(*fn, "name", "tool_choice.function") : required_string(*v, "name", "tool_choice");
    bool found = false;
    for (const json& t : tools) found = found || t["function"]["name"] == tc.name;
    if (!found) throw invalid_field("tool_choice", "tool_choice names '" + tc.name + "', which is not in tools");
  } else {
    throw invalid_field("tool_choice", "tool_choice must be a string or an object");
  }
  // auto and none without tools mean what no tools mean (SDKs send them regardless).
  if (tc.kind != ToolChoice::Kind::kNone && tc.kind != ToolChoice::Kind::kAuto && tools.empty())
    throw invalid_field("tool_choice", "tool_choice requires tools");
  return tc;
}

}  // namespace

std::vector<std::string> tool_names(const nlohmann::ordered_json& tools) {
  std::vector<std::string> out;
  for (const auto& t : tools) out.push_back(t["function"]["name"].get<std::string>());
  return out;
}

std::vector<std::string> parse_stop(const json& j, size_t max_stops) {
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
    if (v->size() > max_stops)
      throw invalid_field("stop", "at most " + std::to_string(max_stops) + " stop sequences are allowed");
    for (const json& s : *v) add(s);
  } else {
    add(*v);
  }
  return out;
}

std::string parse_grammar(const json& j) {
  const json* gr = field(j, "grammar");
  if (!gr) return {};
  if (!gr->is_string()) throw invalid_field("grammar", "grammar must be a string (GBNF)");
  if (gr->get_ref<const std::string&>().size() > kMaxGrammarBytes)
    throw invalid_field("grammar", "grammar is limited to " + std::to_string(kMaxGrammarBytes) + " bytes");
  return gr->get<std::string>();
}

CompletionRequest parse_completion_request(std::string_view body, const engine::SamplingParams& defaults) {
  json j = parse_object(body);
  check_top_level_fields(j, {"prompt", "echo", "logprobs", "best_of", "suffix", "system"});
  CompletionRequest r;
  r.gen = parse_generation_fields(j, "max_tokens", defaults);
  parse_prompt(j, r);
  if (r.prompts.size() * static_cast<size_t>(r.gen.n) > kMaxPrompts)
    throw invalid_field("n", "prompts x n is limited to " + std::to_string(kMaxPrompts) + " choices");
  r.echo = get_bool(j, "echo", false);
  if (const json* sys = field(j, "system")) {
    if (!sys->is_string()) throw invalid_field("system", "system must be a string");
    if (r.prompts.size() != 1 || r.prompts[0].is_ids)
      throw invalid_field("system", "system needs one text prompt (it is rendered as a user turn)");
    r.system = sys->get<std::string>();
  }
  if (const json* sfx = field(j, "suffix")) {
    if (!sfx->is_string()) throw invalid_field("suffix", "suffix must be a string");
    r.suffix = sfx->get<std::string>();
    if (!r.suffix.empty() && r.system)
      throw invalid_field("suffix", "suffix (fill-in-the-middle) cannot be combined with system");
  }
  if (const json* lp = field(j, "logprobs")) {
    if (lp->is_boolean()) throw invalid_field("logprobs", "logprobs must be an integer in [0, 5]");
    r.gen.top_logprobs = static_cast<int>(*get_int(j, "logprobs", 0, 5));
    r.gen.logprobs = true;
  }
  return r;
}

ChatRequest parse_chat_request(std::string_view body, const engine::SamplingParams& defaults) {
  json j = parse_object(body);
  check_top_level_fields(j, {"messages", "max_completion_tokens", "logprobs", "top_logprobs", "tools",
                             "tool_choice", "parallel_tool_calls", "chat_template_kwargs", "reasoning_effort",
                             "add_generation_prompt", "continue_final_message"});
  ChatRequest r;
  const bool new_name = field(j, "max_completion_tokens") != nullptr;
  r.gen = parse_generation_fields(j, new_name ? "max_completion_tokens" : "max_tokens", defaults);
  const json* msgs = field(j, "messages");
  if (!msgs || !msgs->is_array() || msgs->empty())
    throw invalid_field("messages", "messages must be a non-empty array");
  for (size_t i = 0; i < msgs->size(); ++i) r.messages.push_back(parse_message((*msgs)[i], i));
  r.tools = parse_tools(j);
  r.tool_choice = parse_tool_choice(j, r.tools);
  r.parallel_tool_calls = get_bool(j, "parallel_tool_calls", true);
  if (const json* kw = field(j, "chat_template_kwargs")) {
    if (!kw->is_object()) throw invalid_field("chat_template_kwargs", "chat_template_kwargs must be an object");
    for (const auto& [key, value] : kw->items()) {
      if (key == "messages" || key == "tools" || key == "add_generation_prompt" || key == "bos_token" ||
          key == "eos_token")
        throw invalid_field("chat_template_kwargs." + key, "chat_template_kwargs may not set '" + key + "'");
    }
    r.template_kwargs = *kw;
  }
  if (const json* effort = field(j, "reasoning_effort")) {
    // As the Responses API's reasoning.effort: the template's enable_thinking switch (Qwen3 and
    // the like), unless chat_template_kwargs already sets it. Templates without it ignore it.
    const std::string e = effort->is_string() ? effort->get<std::string>() : "";
    const bool off = e == "none" || e == "minimal";
    if (!off && e != "low" && e != "medium" && e != "high" && e != "xhigh")
      throw invalid_field("reasoning_effort", "reasoning_effort must be none, minimal, low, medium, high or xhigh");
    if (!r.template_kwargs.contains("enable_thinking")) r.template_kwargs["enable_thinking"] = !off;
  }
  if (field(j, "add_generation_prompt")) r.add_generation_prompt = get_bool(j, "add_generation_prompt", true);
  if (field(j, "continue_final_message")) r.continue_final_message = get_bool(j, "continue_final_message", false);
  if (r.continue_final_message.value_or(false)) {
    if (r.add_generation_prompt.value_or(false))
      throw invalid_field("continue_final_message",
                          "continue_final_message and add_generation_prompt cannot both be true");
    if (r.messages.back()["role"] != "assistant")
      throw invalid_field("continue_final_message", "continue_final_message needs a final assistant message");
  }
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
