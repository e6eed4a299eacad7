// Responses API request -> canonical input items -> the chat request (parse_chat_request validates
// it once more, as for /v1/chat/completions). Every failure names the Responses field.
#include "server/responses_api.h"

#include "engine/json_depth.h"
#include "server/json_body.h"
#include "server/json_fields.h"

namespace anelm::server {

using json = nlohmann::ordered_json;

namespace {

// Below the chat parser's 128: the translated chat body nests two levels deeper than the input.
constexpr int kMaxDepth = 120;
constexpr size_t kMaxInputItems = 4096;      // codex sends ~4 items per turn plus 2 per tool call
constexpr size_t kMaxConversationItems = 8192;  // previous response's conversation + input
constexpr size_t kMaxParts = 1024;           // content parts of one message or tool output
constexpr size_t kMaxTools = 128;            // after flattening namespaces (the chat limit)
constexpr size_t kMaxMetadataKeys = 16;      // OpenAI's metadata limits
constexpr size_t kMaxMetadataKey = 64, kMaxMetadataValue = 512;

ApiError bad(const std::string& param, const std::string& message) { return invalid_field(param, message); }

// An accepted-and-ignored field for the debug log (at most 64 named: a body of unknown keys stays cheap).
void note(ResponsesRequest& r, std::string what) {
  constexpr size_t kMaxNotes = 64;
  if (r.ignored.size() < kMaxNotes) r.ignored.push_back(std::move(what));
}

const json* get_array(const json& j, const char* key, const std::string& path, size_t max) {
  const json* v = field(j, key);
  if (!v) return nullptr;
  if (!v->is_array()) throw bad(path, path + " must be an array");
  if (v->size() > max) throw bad(path, path + " has more than " + std::to_string(max) + " entries");
  return v;
}

std::string type_of(const json& part, const std::string& where) {
  if (!part.is_object()) throw bad(where, where + " must be an object");
  return get_string(part, "type", where, /*required=*/true);
}

// ---- input items ------------------------------------------------------------------------------

// Message content: a string, or its text parts (input_text, output_text, refusal) as
// [{type: input_text, text}] — the chat request then joins them or hands them to a template that
// iterates parts, as for chat messages.
json message_content(const json& item, const std::string& where, bool assistant) {
  const json* c = field(item, "content");
  const std::string path = where + ".content";
  if (!c) {
    if (assistant) return "";
    throw bad(path, path + " is required");
  }
  if (c->is_string()) return *c;
  if (!c->is_array()) throw bad(path, path + " must be a string or an array of content parts");
  if (c->size() > kMaxParts) throw bad(path, path + " has more than " + std::to_string(kMaxParts) + " parts");
  json out = json::array();
  for (size_t k = 0; k < c->size(); ++k) {
    const std::string w = path + "[" + std::to_string(k) + "]";
    const std::string t = type_of((*c)[k], w);
    std::string text;
    if (t == "input_text" || t == "output_text" || t == "text") text = get_string((*c)[k], "text", w, true);
    else if (t == "refusal") text = get_string((*c)[k], "refusal", w, true);
    else if (t == "input_image" || t == "input_file" || t == "input_audio")
      throw bad(w + ".type", w + ".type '" + t + "' is not supported: this server takes text input only");
    else
      throw bad(w + ".type", w + ".type '" + t + "' is not a supported content part type");
    out.push_back({{"type", "input_text"}, {"text", std::move(text)}});
  }
  return out;
}

// Canonical content -> chat content (a string, or chat text parts).
json chat_content(const json& content) {
  if (content.is_string()) return content;
  json parts = json::array();
  for (const json& p : content) parts.push_back({{"type", "text"}, {"text", p["text"]}});
  return parts;
}

// function_call_output.output: a string or text parts (kept as for message content).
json tool_output(const json& item, const std::string& where) {
  const json* o = field(item, "output");
  const std::string path = where + ".output";
  if (!o) throw bad(path, path + " is required");
  if (o->is_string()) return *o;
  if (!o->is_array()) throw bad(path, path + " must be a string or an array of content parts");
  if (o->size() > kMaxParts) throw bad(path, path + " has more than " + std::to_string(kMaxParts) + " parts");
  json out = json::array();
  for (size_t k = 0; k < o->size(); ++k) {
    const std::string w = path + "[" + std::to_string(k) + "]";
    const std::string t = type_of((*o)[k], w);
    if (t != "input_text" && t != "output_text" && t != "text")
      throw bad(w + ".type", w + ".type '" + t + "' is not supported: tool output must be text");
    out.push_back({{"type", "input_text"}, {"text", get_string((*o)[k], "text", w, true)}});
  }
  return out;
}

// function_call.arguments must be JSON text (the chat request parses it for the template, which
// reads arguments as a mapping); checked here to name the item.
void check_arguments(const std::string& text, const std::string& path) {
  if (engine::json_nesting_depth(text, kMaxDepth) > kMaxDepth)
    throw bad(path, path + " nests deeper than " + std::to_string(kMaxDepth) + " levels");
  if (!json::accept(text)) throw bad(path, path + " is not valid JSON");
}

// One input item -> its canonical form (see ResponsesRequest::input).
json canonical_item(const json& item, const std::string& where) {
  if (!item.is_object()) throw bad(where, where + " must be an object");
  std::string type = get_string(item, "type", where, /*required=*/false);
  if (type.empty()) {
    if (!field(item, "role")) throw bad(where + ".type", where + ".type is required (or a message's role)");
    type = "message";
  }
  if (type == "message") {
    const std::string role = get_string(item, "role", where, true);
    if (role != "user" && role != "assistant" && role != "system" && role != "developer")
      throw bad(where + ".role", where + ".role '" + role + "' is not one of user, assistant, system, developer");
    return {{"type", "message"}, {"role", role}, {"content", message_content(item, where, role == "assistant")}};
  }
  if (type == "function_call") {
    const std::string call_id = get_string(item, "call_id", where, true);
    const std::string name = get_string(item, "name", where, true);
    const std::string args = get_string(item, "arguments", where, true);
    if (call_id.empty()) throw bad(where + ".call_id", where + ".call_id must not be empty");
    if (name.empty()) throw bad(where + ".name", where + ".name must not be empty");
    check_arguments(args, where + ".arguments");
    return {{"type", "function_call"}, {"call_id", call_id}, {"name", name}, {"arguments", args}};
  }
  if (type == "function_call_output") {
    const std::string call_id = get_string(item, "call_id", where, true);
    return {{"type", "function_call_output"}, {"call_id", call_id}, {"output", tool_output(item, where)}};
  }
  if (type == "reasoning") {
    // The reasoning text goes back into the next assistant turn; summaries and encrypted content
    // (another server's) have no local meaning.
    std::string text;
    if (const json* c = get_array(item, "content", where + ".content", kMaxParts)) {
      for (size_t k = 0; k < c->size(); ++k) {
        const std::string w = where + ".content[" + std::to_string(k) + "]";
        const std::string t = type_of((*c)[k], w);
        if (t != "reasoning_text" && t != "text")
          throw bad(w + ".type", w + ".type '" + t + "' is not reasoning_text");
        text += get_string((*c)[k], "text", w, true);
      }
    }
    (void)get_array(item, "summary", where + ".summary", kMaxParts);
    return {{"type", "reasoning"}, {"summary", json::array()},
            {"content", json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
  }
  if (type == "item_reference")
    throw bad(where + ".type", where + ".type 'item_reference' is not supported: use previous_response_id");
  throw bad(where + ".type", where + ".type '" + type + "' is not a supported input item type "
                             "(message, function_call, function_call_output, reasoning)");
}

json parse_input(const json& j) {
  const json* in = field(j, "input");
  if (!in) return json::array();
  if (in->is_string()) return json::array({{{"type", "message"}, {"role", "user"}, {"content", *in}}});
  if (!in->is_array()) throw bad("input", "input must be a string or an array of items");
  if (in->size() > kMaxInputItems) throw bad("input", "input has more than " + std::to_string(kMaxInputItems) + " items");
  json out = json::array();
  for (size_t i = 0; i < in->size(); ++i) out.push_back(canonical_item((*in)[i], "input[" + std::to_string(i) + "]"));
  return out;
}

// ---- tools ------------------------------------------------------------------------------------

struct DroppedTool {
  std::string type, name, path;
};

void add_function_tool(const json& t, const std::string& where, const std::string& ns, ResponsesRequest& r) {
  const std::string name = get_string(t, "name", where, true);
  if (name.empty() || name.size() > 64) throw bad(where + ".name", where + ".name must have 1 to 64 characters");
  for (const json& prev : r.chat["tools"])
    if (prev["function"]["name"] == name) throw bad(where + ".name", "duplicate tool name '" + name + "'");
  if (r.chat["tools"].size() >= kMaxTools) throw bad("tools", "at most " + std::to_string(kMaxTools) + " function tools");
  json fn = {{"name", name}};
  if (const json* d = field(t, "description")) {
    if (!d->is_string()) throw bad(where + ".description", where + ".description must be a string");
    fn["description"] = *d;
  }
  if (const json* p = field(t, "parameters")) {
    if (!p->is_object()) throw bad(where + ".parameters", where + ".parameters must be a JSON Schema object");
    fn["parameters"] = *p;
  }
  if (const json* s = field(t, "strict"); s && !s->is_boolean()) throw bad(where + ".strict", where + ".strict must be a boolean");
  r.chat["tools"].push_back({{"type", "function"}, {"function", std::move(fn)}});
  r.tool_paths.push_back(where);
  if (!ns.empty()) r.tool_namespace[name] = ns;
}

// Function tools are offered to the model; hosted tools (web_search, file_search, ...) and custom
// (free-form) tools cannot run here and are left out unless tool_choice forces one.
std::vector<DroppedTool> parse_tools(const json& j, ResponsesRequest& r) {
  std::vector<DroppedTool> dropped;
  r.chat["tools"] = json::array();
  const json* tools = get_array(j, "tools", "tools", kMaxTools);
  if (!tools) return dropped;
  for (size_t i = 0; i < tools->size(); ++i) {
    const std::string w = "tools[" + std::to_string(i) + "]";
    const json& t = (*tools)[i];
    const std::string type = type_of(t, w);
    if (type == "function") {
      add_function_tool(t, w, "", r);
    } else if (type == "namespace") {
      const std::string ns = get_string(t, "name", w, true);
      const json* inner = get_array(t, "tools", w + ".tools", kMaxTools);
      if (!inner) throw bad(w + ".tools", w + ".tools is required");
      for (size_t k = 0; k < inner->size(); ++k) {
        const std::string wk = w + ".tools[" + std::to_string(k) + "]";
        const std::string it = type_of((*inner)[k], wk);
        if (it == "function") add_function_tool((*inner)[k], wk, ns, r);
        else dropped.push_back({it, get_string((*inner)[k], "name", wk, false), wk});
      }
    } else {
      dropped.push_back({type, t.contains("name") && t["name"].is_string() ? t["name"].get<std::string>() : "", w});
    }
  }
  for (const DroppedTool& d : dropped) note(r, d.path + " (a '" + d.type + "' tool: not available here)");
  return dropped;
}

// tool_choice -> the chat form. Forcing a tool that was left out is a 400 naming that tool's type.
void parse_tool_choice(const json& j, const std::vector<DroppedTool>& dropped, ResponsesRequest& r) {
  const json* v = field(j, "tool_choice");
  const bool have_functions = !r.chat["tools"].empty();
  auto forced_dropped = [&](const std::string& type, const std::string& name) {
    for (const DroppedTool& d : dropped)
      if ((type.empty() || d.type == type || d.type.rfind(type, 0) == 0 || type.rfind(d.type, 0) == 0) &&
          (name.empty() || d.name == name))
        throw bad(d.path + ".type", "tool_choice forces " + d.path + ", a '" + d.type +
                                        "' tool, which this server cannot run (only function tools)");
  };
  if (!v) return;
  if (v->is_string()) {
    const std::string s = v->get<std::string>();
    if (s != "auto" && s != "none" && s != "required")
      throw bad("tool_choice", "tool_choice must be auto, none, required or an object, got '" + s + "'");
    if (s == "required" && !have_functions) {
      forced_dropped("", "");
      throw bad("tool_choice", "tool_choice 'required' needs function tools");
    }
    if (have_functions) r.chat["tool_choice"] = s;
    return;
  }
  if (!v->is_object()) throw bad("tool_choice", "tool_choice must be a string or an object");
  const std::string type = get_string(*v, "type", "tool_choice", true);
  if (type == "function") {
    const std::string name = get_string(*v, "name", "tool_choice", true);
    for (const json& t : r.chat["tools"])
      if (t["function"]["name"] == name) {
        r.chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
        return;
      }
    forced_dropped("", name);
    throw bad("tool_choice.name", "tool_choice names '" + name + "', which is not a function in tools");
  }
  if (type == "allowed_tools")
    throw bad("tool_choice.type", "tool_choice.type 'allowed_tools' is not supported");
  forced_dropped(type == "custom" ? "custom" : type, field(*v, "name") && (*v)["name"].is_string() ? (*v)["name"].get<std::string>() : "");
  throw bad("tool_choice.type", "tool_choice.type '" + type + "' forces a tool this server cannot run");
}

// ---- other fields -----------------------------------------------------------------------------

void parse_text_format(const json& j, ResponsesRequest& r) {
  const json* text = field(j, "text");
  if (!text) return;
  if (!text->is_object()) throw bad("text", "text must be an object");
  for (const auto& [key, value] : text->items())
    if (key != "format") note(r, "text." + key);
  const json* f = field(*text, "format");
  if (!f) return;
  const std::string type = type_of(*f, "text.format");
  if (type == "text") return;
  if (type == "json_object") {
    r.chat["response_format"] = {{"type", "json_object"}};
    return;
  }
  if (type != "json_schema")
    throw bad("text.format.type", "text.format.type must be text, json_object or json_schema, got '" + type + "'");
  json js = {{"name", get_string(*f, "name", "text.format", false)}};
  const json* schema = field(*f, "schema");
  if (!schema || !(schema->is_object() || schema->is_boolean()))
    throw bad("text.format.schema", "text.format.schema must be a JSON Schema object");
  js["schema"] = *schema;
  if (const json* s = field(*f, "strict")) {
    if (!s->is_boolean()) throw bad("text.format.strict", "text.format.strict must be a boolean");
    js["strict"] = *s;
  }
  if (const json* d = field(*f, "description")) {
    if (!d->is_string()) throw bad("text.format.description", "text.format.description must be a string");
    js["description"] = *d;
  }
  r.chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
}

// reasoning.effort is chat's reasoning_effort (enable_thinking for templates that read it: none /
// minimal off, any other effort on). Summaries are not produced (summary is ignored).
void parse_reasoning(const json& j, ResponsesRequest& r) {
  const json* v = field(j, "reasoning");
  if (!v) return;
  if (!v->is_object()) throw bad("reasoning", "reasoning must be an object");
  for (const auto& [key, value] : v->items())
    if (key != "effort") note(r, "reasoning." + key);
  if (field(*v, "effort")) r.chat["reasoning_effort"] = get_string(*v, "effort", "reasoning", false);
}

void parse_metadata(const json& j) {
  const json* m = field(j, "metadata");
  if (!m) return;
  if (!m->is_object()) throw bad("metadata", "metadata must be an object of strings");
  if (m->size() > kMaxMetadataKeys) throw bad("metadata", "metadata has more than 16 keys");
  for (const auto& [key, value] : m->items()) {
    if (key.size() > kMaxMetadataKey) throw bad("metadata", "metadata keys are limited to 64 characters");
    if (!value.is_string() || value.get<std::string>().size() > kMaxMetadataValue)
      throw bad("metadata." + key, "metadata." + key + " must be a string of at most 512 characters");
  }
}

// Sampling fields: type-checked here, ranges checked by the chat parser (same names).
void copy_number(const json& j, const char* key, ResponsesRequest& r) {
  const json* v = field(j, key);
  if (!v) return;
  if (!v->is_number()) throw bad(key, std::string(key) + " must be a number");
  r.chat[key] = *v;
}

// Fields with no meaning for a local server, or whose effect is only on OpenAI's side.
constexpr const char* kIgnoredFields[] = {
    "user", "prompt_cache_key", "prompt_cache_retention", "include", "client_metadata", "safety_identifier",
    "service_tier", "truncation", "stream_options", "max_tool_calls", "context_management", "moderation",
    // openai 7.x: OpenAI's access programs, background queueing (background: true is a 400 anyway) and
    // request-level image options (image input is a 400).
    "access_programs", "background_options", "image"};

// The fields this file handles (anything else is unknown: accepted and logged).
constexpr const char* kKnownFields[] = {
    "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "max_output_tokens",
    "temperature", "top_p", "seed", "text", "reasoning", "store", "previous_response_id", "stream", "metadata",
    "background", "conversation", "prompt", "top_logprobs"};

void check_unsupported(const json& j) {
  if (get_bool(j, "background", false)) throw bad("background", "background responses are not supported");
  if (field(j, "conversation")) throw bad("conversation", "conversation is not supported: use previous_response_id");
  if (field(j, "prompt")) throw bad("prompt", "prompt templates are not supported");
  if (const json* t = field(j, "top_logprobs"); t && !(t->is_number_integer() && t->get<int64_t>() == 0))
    throw bad("top_logprobs", "top_logprobs is not supported on /v1/responses");
  if (const json* m = field(j, "model"); m && !m->is_string()) throw bad("model", "model must be a string");
}

void fill_echo(const json& j, ResponsesRequest& r) {
  auto or_null = [&](const char* key) { const json* v = field(j, key); return v ? *v : json(nullptr); };
  json& e = r.echo;
  e["instructions"] = r.instructions.empty() ? json(nullptr) : json(r.instructions);
  e["max_output_tokens"] = or_null("max_output_tokens");
  e["parallel_tool_calls"] = get_bool(j, "parallel_tool_calls", true);
  e["previous_response_id"] = r.previous_response_id.empty() ? json(nullptr) : json(r.previous_response_id);
  e["prompt_cache_key"] = or_null("prompt_cache_key");
  const json* reasoning = field(j, "reasoning");
  e["reasoning"] = {{"effort", reasoning ? or_null("reasoning").value("effort", json(nullptr)) : json(nullptr)},
                    {"summary", reasoning ? or_null("reasoning").value("summary", json(nullptr)) : json(nullptr)}};
  e["safety_identifier"] = or_null("safety_identifier");
  e["service_tier"] = field(j, "service_tier") ? or_null("service_tier") : json("default");
  e["store"] = r.store;
  e["temperature"] = or_null("temperature");
  const json* text = field(j, "text");
  e["text"] = {{"format", text && text->is_object() && field(*text, "format") ? (*text)["format"] : json{{"type", "text"}}}};
  e["tool_choice"] = field(j, "tool_choice") ? (*field(j, "tool_choice")) : json("auto");
  e["tools"] = field(j, "tools") ? (*field(j, "tools")) : json::array();
  e["top_p"] = or_null("top_p");
  e["truncation"] = field(j, "truncation") ? or_null("truncation") : json("disabled");
  e["user"] = or_null("user");
  e["metadata"] = field(j, "metadata") ? or_null("metadata") : json::object();
}

// ---- items -> chat messages -------------------------------------------------------------------

// Canonical items in order -> chat messages. An assistant message and the function calls right
// after it are one assistant turn (the Responses API splits a turn into items); a reasoning item
// becomes the next assistant turn's reasoning_content; developer is system.
json items_to_messages(const json& items) {
  json msgs = json::array();
  std::string reasoning;
  bool turn_open = false;  // the last message is an assistant turn that function calls may extend
  auto assistant_turn = [&](json content) {
    json m = {{"role", "assistant"}, {"content", std::move(content)}};
    if (!reasoning.empty()) m["reasoning_content"] = reasoning;
    reasoning.clear();
    msgs.push_back(std::move(m));
    turn_open = true;
  };
  for (const json& it : items) {
    const std::string type = it["type"];
    if (type == "reasoning") {
      for (const json& c : it["content"]) reasoning += c["text"].get<std::string>();
      continue;
    }
    if (type == "function_call") {
      if (!turn_open) assistant_turn("");
      json& turn = msgs.back();
      if (!turn.contains("tool_calls")) turn["tool_calls"] = json::array();
      turn["tool_calls"].push_back({{"id", it["call_id"]},
                                    {"type", "function"},
                                    {"function", {{"name", it["name"]}, {"arguments", it["arguments"]}}}});
      continue;
    }
    if (type == "function_call_output") {
      msgs.push_back({{"role", "tool"}, {"tool_call_id", it["call_id"]}, {"content", chat_content(it["output"])}});
      turn_open = false;
      continue;
    }
    const std::string role = it["role"];
    if (role == "assistant") {
      assistant_turn(chat_content(it["content"]));
      continue;
    }
    reasoning.clear();  // reasoning not followed by an assistant turn has nowhere to go
    msgs.push_back({{"role", role == "developer" ? "system" : role}, {"content", chat_content(it["content"])}});
    turn_open = false;
  }
  return msgs;
}

// instructions and the system / developer messages before the first other message become one
// system message: many chat templates accept a system message only first, and only one. Messages
// are joined with a blank line, a message's parts with "\n" (as chat joins parts).
json merge_leading_system(const std::string& instructions, json msgs) {
  std::string system = instructions;
  bool any = !instructions.empty();
  size_t n = 0;
  while (n < msgs.size() && msgs[n]["role"] == "system") {
    if (any) system += "\n\n";
    const json& c = msgs[n]["content"];
    if (c.is_string()) {
      system += c.get<std::string>();
    } else {
      for (size_t k = 0; k < c.size(); ++k) system += (k ? "\n" : "") + c[k]["text"].get<std::string>();
    }
    any = true;
    ++n;
  }
  if (!any) return msgs;
  json out = json::array({{{"role", "system"}, {"content", system}}});
  for (size_t i = n; i < msgs.size(); ++i) out.push_back(std::move(msgs[i]));
  return out;
}

}  // namespace

ResponsesRequest parse_responses_request(std::string_view body) {
  const json j = parse_json_body(body, kMaxDepth);
  check_unsupported(j);

  ResponsesRequest r;
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : kKnownFields) known = known || key == k;
    bool ignored = false;
    for (const char* k : kIgnoredFields) ignored = ignored || key == k;
    if (ignored) note(r, key);
    else if (!known) note(r, key + " (unknown field)");
  }
  r.input = parse_input(j);
  r.instructions = get_string(j, "instructions", "", false);
  r.previous_response_id = get_string(j, "previous_response_id", "", false);
  if (r.input.empty() && r.previous_response_id.empty()) throw bad("input", "input is required");
  r.store = get_bool(j, "store", true);
  r.stream = get_bool(j, "stream", false);
  parse_metadata(j);
  if (const json* u = field(j, "user"); u && !u->is_string()) throw bad("user", "user must be a string");

  const std::vector<DroppedTool> dropped = parse_tools(j, r);
  parse_tool_choice(j, dropped, r);
  if (r.chat["tools"].empty()) r.chat.erase("tools");
  if (field(j, "parallel_tool_calls")) r.chat["parallel_tool_calls"] = get_bool(j, "parallel_tool_calls", true);
  if (const json* m = field(j, "max_output_tokens")) {
    if (!m->is_number_integer() || m->get<int64_t>() < 1 || m->get<int64_t>() > (1 << 20))
      throw bad("max_output_tokens", "max_output_tokens must be an integer in [1, 1048576]");
    r.chat["max_tokens"] = *m;
  }
  copy_number(j, "temperature", r);
  copy_number(j, "top_p", r);
  if (const json* s = field(j, "seed")) {  // an anelm extension, as on the chat endpoint
    if (!s->is_number_integer()) throw bad("seed", "seed must be an integer");
    r.chat["seed"] = *s;
  }
  parse_text_format(j, r);
  parse_reasoning(j, r);
  r.chat["stream"] = r.stream;
  fill_echo(j, r);
  return r;
}

ChatRequest responses_to_chat(const ResponsesRequest& r, const json& history, const engine::SamplingParams& defaults) {
  if (history.size() + r.input.size() > kMaxConversationItems)
    throw bad("previous_response_id", "the conversation would have more than " +
                                          std::to_string(kMaxConversationItems) + " items");
  json items = json::array();
  for (size_t i = 0; i < history.size(); ++i)  // our own items, re-checked (cheap) as any input
    items.push_back(canonical_item(history[i], "previous_response_id"));
  for (const json& it : r.input) items.push_back(it);
  json msgs = merge_leading_system(r.instructions, items_to_messages(items));
  if (msgs.empty()) throw bad("input", "input has no messages");
  json chat = r.chat;
  chat["messages"] = std::move(msgs);
  // A new assistant turn even after a final assistant item (chat would continue it as a prefill).
  chat["add_generation_prompt"] = true;
  try {
    return parse_chat_request(chat.dump(-1, ' ', false, json::error_handler_t::replace), defaults);
  } catch (const ApiError& e) {
    throw responses_error(e, r);
  }
}

ApiError responses_error(const ApiError& e, const ResponsesRequest& r) {
  const std::string& p = e.param();
  std::string renamed = p;
  auto starts = [&](const char* prefix) { return p.rfind(prefix, 0) == 0; };
  if (starts("max_tokens")) {
    renamed = "max_output_tokens";
  } else if (starts("response_format.json_schema.")) {
    renamed = "text.format." + p.substr(sizeof("response_format.json_schema.") - 1);
  } else if (starts("response_format")) {
    renamed = "text.format" + p.substr(sizeof("response_format") - 1);
  } else if (starts("reasoning_effort")) {
    renamed = "reasoning.effort";
  } else if (starts("messages")) {
    renamed = "input";
  } else if (starts("tools[")) {
    const size_t close = p.find(']');
    size_t k = 0;
    bool ok = close != std::string::npos && close > 6;
    for (size_t i = 6; ok && i < close; ++i) {
      ok = p[i] >= '0' && p[i] <= '9';
      k = k * 10 + static_cast<size_t>(p[i] - '0');
      ok = ok && k < r.tool_paths.size();
    }
    if (ok) {
      std::string rest = p.substr(close + 1);
      if (rest.rfind(".function", 0) == 0) rest = rest.substr(sizeof(".function") - 1);
      renamed = r.tool_paths[k] + rest;
    }
  }
  if (renamed == p) return e;
  return ApiError(e.status(), e.type(), e.what(), renamed, e.code(), e.retry_after_s());
}

}  // namespace anelm::server
