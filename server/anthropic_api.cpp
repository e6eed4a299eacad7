// Anthropic Messages requests -> the normalized ChatRequest (the answer side: anthropic_response.cpp).
#include "server/anthropic_api.h"

#include <cmath>
#include <limits>
#include <map>

#include <spdlog/spdlog.h>

#include "server/api_error.h"
#include "server/json_body.h"
#include "server/json_fields.h"
#include "server/http_policy.h"

namespace anelm::server {

using json = nlohmann::ordered_json;  // tools and tool inputs keep the client's key order

namespace {

// ---- bounds -----------------------------------------------------------------------------------

constexpr int kMaxRequestDepth = 128;     // as the chat parser: tool schemas nest a few dozen levels
constexpr size_t kMaxMessages = 100000;   // Anthropic's own limit per request
constexpr size_t kMaxBlocks = 10000;      // content blocks per message (and per tool_result)
constexpr size_t kMaxTools = 128;         // as chat completions
constexpr size_t kMaxStops = 16;          // StopMatcher checks every stop per emitted piece
constexpr size_t kMaxStopBytes = 256;
constexpr size_t kMaxToolName = 128;
constexpr int kMaxTokensCap = 1 << 20;

// ---- field access -----------------------------------------------------------------------------

std::string at(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

const std::string& block_type(const json& block, const std::string& where) {
  if (!block.is_object()) throw invalid_field(where, where + " must be an object");
  const json* t = field(block, "type");
  if (!t || !t->is_string()) throw invalid_field(field_path(where, "type"), field_path(where, "type") + " must be a string");
  return t->get_ref<const std::string&>();
}

[[noreturn]] void unsupported_block(const std::string& type, const std::string& where) {
  if (type == "image" || type == "document" || type == "search_result" || type == "container_upload")
    throw invalid_field(field_path(where, "type"), field_path(where, "type") + ": '" + type +
                                               "' content is not supported by this server (text only)");
  throw invalid_field(field_path(where, "type"), field_path(where, "type") + ": unsupported content block type '" + type + "'");
}

// Joins non-empty texts with `sep`.
void append(std::string& out, const std::string& text, const char* sep) {
  if (text.empty()) return;
  if (!out.empty()) out += sep;
  out += text;
}

// A string, or an array of text blocks (joined by blank lines: separate blocks are separate
// paragraphs to the model). Used for system, system turns and tool_result content.
std::string text_content(const json& c, const std::string& where) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) throw invalid_field(where, where + " must be a string or an array of text blocks");
  if (c.size() > kMaxBlocks) throw invalid_field(where, where + ": at most " + std::to_string(kMaxBlocks) + " blocks");
  std::string out;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string w = at(where, i);
    const std::string& type = block_type(c[i], w);
    if (type != "text") unsupported_block(type, w);
    append(out, get_string(c[i], "text", w, true), "\n\n");
  }
  return out;
}

// ---- messages ---------------------------------------------------------------------------------

class Conversation {
 public:
  json messages = json::array();
  bool system_in_place = false;

  void add_system(const std::string& text) {
    if (!messages.empty()) system_in_place = true;
    messages.push_back({{"role", "system"}, {"content", text}});
  }

  void add(const json& m, size_t index) {
    const std::string where = at("messages", index);
    if (!m.is_object()) throw invalid_field(where, where + " must be an object");
    const std::string role = get_string(m, "role", where, true);
    const json* content = field(m, "content");
    if (!content) throw invalid_field(field_path(where, "content"), field_path(where, "content") + " is required");
    if (role == "system") add_system(text_content(*content, field_path(where, "content")));
    else if (role == "user") add_user(*content, field_path(where, "content"));
    else if (role == "assistant") add_assistant(*content, field_path(where, "content"));
    else throw invalid_field(field_path(where, "role"), field_path(where, "role") + " must be user, assistant or system, got '" + role + "'");
  }

 private:
  // Tool results become role "tool" messages right after the assistant's calls (where templates
  // expect them), then the turn's text as one user message.
  void add_user(const json& c, const std::string& where) {
    if (c.is_string()) {
      messages.push_back({{"role", "user"}, {"content", c}});
      return;
    }
    if (!c.is_array()) throw invalid_field(where, where + " must be a string or an array of content blocks");
    if (c.size() > kMaxBlocks) throw invalid_field(where, where + ": at most " + std::to_string(kMaxBlocks) + " blocks");
    std::string text;
    bool has_text = false;
    for (size_t i = 0; i < c.size(); ++i) {
      const std::string w = at(where, i);
      const std::string& type = block_type(c[i], w);
      if (type == "text") {
        append(text, get_string(c[i], "text", w, true), "\n\n");
        has_text = true;
      } else if (type == "tool_result") {
        messages.push_back(tool_result(c[i], w));
      } else {
        unsupported_block(type, w);
      }
    }
    if (has_text || c.empty()) messages.push_back({{"role", "user"}, {"content", text}});
  }

  json tool_result(const json& b, const std::string& where) {
    const std::string id = get_string(b, "tool_use_id", where, true);
    std::string text;
    if (const json* content = field(b, "content")) text = text_content(*content, field_path(where, "content"));
    // The model would otherwise not know the call failed.
    if (get_bool(b, "is_error", false, where)) text = "Error: " + text;
    // Keys in the chat parser's order (role, content, name, tool_call_id): the same prompt either way.
    json out = {{"role", "tool"}, {"content", text}};
    if (auto it = tool_names_.find(id); it != tool_names_.end()) out["name"] = it->second;
    out["tool_call_id"] = id;
    return out;
  }

  void add_assistant(const json& c, const std::string& where) {
    json out = {{"role", "assistant"}, {"content", ""}};
    if (c.is_string()) {
      out["content"] = c;
      messages.push_back(std::move(out));
      return;
    }
    if (!c.is_array()) throw invalid_field(where, where + " must be a string or an array of content blocks");
    if (c.size() > kMaxBlocks) throw invalid_field(where, where + ": at most " + std::to_string(kMaxBlocks) + " blocks");
    std::string text, reasoning;
    json calls = json::array();
    for (size_t i = 0; i < c.size(); ++i) {
      const std::string w = at(where, i);
      const std::string& type = block_type(c[i], w);
      if (type == "text") {
        text += get_string(c[i], "text", w, true);  // one reply split in blocks: no separator
      } else if (type == "thinking") {
        reasoning += get_string(c[i], "thinking", w, true);
      } else if (type == "redacted_thinking") {
        spdlog::debug("{}: redacted_thinking block dropped (encrypted for another model)", w);
      } else if (type == "tool_use") {
        const std::string id = get_string(c[i], "id", w, true);
        const std::string name = get_string(c[i], "name", w, true);
        const json* input = field(c[i], "input");
        if (input && !input->is_object()) throw invalid_field(field_path(w, "input"), field_path(w, "input") + " must be an object");
        calls.push_back({{"type", "function"},
                         {"function", {{"name", name}, {"arguments", input ? *input : json::object()}}},
                         {"id", id}});
        if (tool_names_.size() < kMaxMessages) tool_names_[id] = name;
      } else {
        unsupported_block(type, w);
      }
    }
    out["content"] = text;
    if (!reasoning.empty()) out["reasoning_content"] = reasoning;
    if (!calls.empty()) out["tool_calls"] = std::move(calls);
    messages.push_back(std::move(out));
  }

  std::map<std::string, std::string> tool_names_;  // tool_use id -> tool name (for tool messages)
};

// ---- tools ------------------------------------------------------------------------------------

struct Tools {
  json openai = json::array();           // function tools in the chat layer's shape
  std::vector<std::string> dropped;      // server tools (web search, bash, ...) this server cannot run
};

Tools parse_tools(const json& j) {
  Tools out;
  const json* t = field(j, "tools");
  if (!t) return out;
  if (!t->is_array()) throw invalid_field("tools", "tools must be an array");
  if (t->size() > kMaxTools) throw invalid_field("tools", "at most " + std::to_string(kMaxTools) + " tools");
  for (size_t i = 0; i < t->size(); ++i) {
    const std::string w = at("tools", i);
    const json& tool = (*t)[i];
    if (!tool.is_object()) throw invalid_field(w, w + " must be an object");
    const std::string name = get_string(tool, "name", w, true);
    const std::string type = get_string(tool, "type", w, false);
    if (!type.empty() && type != "custom") {
      // Anthropic-hosted tools (web_search_20250305, bash_20250124, ...) run on Anthropic's side.
      spdlog::debug("{}: server tool '{}' ({}) is not available here: dropped", w, name, type);
      out.dropped.push_back(name);
      continue;
    }
    if (name.empty() || name.size() > kMaxToolName)
      throw invalid_field(field_path(w, "name"), field_path(w, "name") + " must have 1 to " + std::to_string(kMaxToolName) + " characters");
    for (const json& prev : out.openai)
      if (prev["function"]["name"] == name) throw invalid_field(field_path(w, "name"), "duplicate tool name '" + name + "'");
    json fn = {{"name", name}};
    if (const json* d = field(tool, "description")) {
      if (!d->is_string()) throw invalid_field(field_path(w, "description"), field_path(w, "description") + " must be a string");
      fn["description"] = *d;
    }
    const json* schema = field(tool, "input_schema");
    if (schema && !schema->is_object())
      throw invalid_field(field_path(w, "input_schema"), field_path(w, "input_schema") + " must be a JSON Schema object");
    fn["parameters"] = schema ? *schema : json{{"type", "object"}, {"properties", json::object()}};
    out.openai.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

ToolChoice parse_tool_choice(const json& j, const Tools& tools, bool& parallel) {
  ToolChoice tc;
  const json* v = field(j, "tool_choice");
  if (!v) return tc;
  if (!v->is_object()) throw invalid_field("tool_choice", "tool_choice must be an object");
  const std::string type = get_string(*v, "type", "tool_choice", true);
  parallel = !get_bool(*v, "disable_parallel_tool_use", false, "tool_choice");
  if (type == "auto") {
    tc.kind = ToolChoice::Kind::kAuto;
  } else if (type == "none") {
    tc.kind = ToolChoice::Kind::kNone;
  } else if (type == "any") {
    tc.kind = ToolChoice::Kind::kRequired;
  } else if (type == "tool") {
    tc.kind = ToolChoice::Kind::kFunction;
    tc.name = get_string(*v, "name", "tool_choice", true);
    for (const std::string& d : tools.dropped)
      if (d == tc.name) throw invalid_field("tool_choice.name", "tool_choice names '" + d + "', a server tool this server cannot run");
    bool found = false;
    for (const json& t : tools.openai) found = found || t["function"]["name"] == tc.name;
    if (!found) throw invalid_field("tool_choice.name", "tool_choice names '" + tc.name + "', which is not in tools");
  } else {
    throw invalid_field("tool_choice.type", "tool_choice.type must be auto, any, tool or none, got '" + type + "'");
  }
  if (tools.openai.empty() && tc.kind != ToolChoice::Kind::kNone && tc.kind != ToolChoice::Kind::kAuto)
    throw invalid_field("tool_choice", "tool_choice requires tools");
  if (tools.openai.empty()) tc.kind = ToolChoice::Kind::kAuto;  // nothing to call: plain text
  return tc;
}

// ---- generation fields ------------------------------------------------------------------------

std::vector<std::string> parse_stop_sequences(const json& j) {
  std::vector<std::string> out;
  const json* v = field(j, "stop_sequences");
  if (!v) return out;
  if (!v->is_array()) throw invalid_field("stop_sequences", "stop_sequences must be an array of strings");
  if (v->size() > kMaxStops) throw invalid_field("stop_sequences", "at most " + std::to_string(kMaxStops) + " stop_sequences");
  for (size_t i = 0; i < v->size(); ++i) {
    const json& s = (*v)[i];
    if (!s.is_string()) throw invalid_field(at("stop_sequences", i), at("stop_sequences", i) + " must be a string");
    const std::string& str = s.get_ref<const std::string&>();
    if (str.size() > kMaxStopBytes)
      throw invalid_field(at("stop_sequences", i), "stop sequences are limited to " + std::to_string(kMaxStopBytes) + " bytes");
    if (!str.empty()) out.push_back(str);  // an empty one would match everywhere
  }
  return out;
}

// thinking: the template's thinking switch (enable_thinking); the budget is not enforced.
void parse_thinking(const json& j, ChatRequest& r) {
  const json* v = field(j, "thinking");
  if (!v) return;
  if (!v->is_object()) throw invalid_field("thinking", "thinking must be an object");
  const std::string type = get_string(*v, "type", "thinking", true);
  if (type == "enabled") {
    if (const json* b = field(*v, "budget_tokens"); b && !b->is_number_integer())
      throw invalid_field("thinking.budget_tokens", "thinking.budget_tokens must be an integer");
    r.template_kwargs["enable_thinking"] = true;
  } else if (type == "adaptive") {
    r.template_kwargs["enable_thinking"] = true;
  } else if (type == "disabled") {
    r.template_kwargs["enable_thinking"] = false;
  } else {
    throw invalid_field("thinking.type", "thinking.type must be enabled, adaptive or disabled, got '" + type + "'");
  }
}

// output_config: effort is a hint (ignored); format {type: json_schema, schema} is enforced as the
// chat layer's response_format.
void parse_output_config(const json& j, GenerationFields& g) {
  const json* v = field(j, "output_config");
  if (!v) return;
  if (!v->is_object()) throw invalid_field("output_config", "output_config must be an object");
  if (field(*v, "effort")) spdlog::debug("output_config.effort ignored");
  const json* f = field(*v, "format");
  if (!f) return;
  if (!f->is_object()) throw invalid_field("output_config.format", "output_config.format must be an object");
  const std::string type = get_string(*f, "type", "output_config.format", true);
  if (type != "json_schema")
    throw invalid_field("output_config.format.type", "output_config.format.type must be json_schema, got '" + type + "'");
  const json* schema = field(*f, "schema");
  if (!schema || !schema->is_object())
    throw invalid_field("output_config.format.schema", "output_config.format.schema must be a JSON Schema object");
  g.response_format.kind = ResponseFormat::Kind::kJsonSchema;
  g.response_format.schema = *schema;
  g.response_format.strict = true;  // Anthropic guarantees the schema: an unenforceable keyword is a 400
}

GenerationFields parse_generation(const json& j, const engine::SamplingParams& defaults) {
  GenerationFields g;
  g.sampling = defaults;
  if (const json* m = field(j, "model"); m && !m->is_string()) throw invalid_field("model", "model must be a string");
  // Required by Anthropic; missing: up to the context end, as chat completions.
  if (auto mt = get_int(j, "max_tokens", 1, kMaxTokensCap)) g.max_tokens = static_cast<int>(*mt);
  if (auto v = get_number(j, "temperature", 0.0, 1.0)) g.sampling.temperature = *v;
  if (auto v = get_number(j, "top_p", 0.0, 1.0)) {
    if (*v <= 0.0f) throw invalid_field("top_p", "top_p must be in (0, 1]");
    g.sampling.top_p = *v;
  }
  if (auto v = get_int(j, "top_k", 0, 1 << 20)) g.sampling.top_k = static_cast<int>(*v);
  g.stop = parse_stop_sequences(j);
  g.stream = get_bool(j, "stream", false);
  parse_output_config(j, g);
  return g;
}

// Fields that cannot change a local answer (billing, caching, hosted features), and every unknown
// field: accepted, logged at debug (listed in http-api.md).
constexpr const char* kParsed[] = {"model", "max_tokens", "system", "messages", "tools", "tool_choice",
                                   "stop_sequences", "temperature", "top_p", "top_k", "thinking", "stream",
                                   "output_config", "mcp_servers"};

void log_ignored_fields(const json& j) {
  for (const auto& [key, value] : j.items()) {
    bool parsed = false;
    for (const char* k : kParsed) parsed = parsed || key == k;
    if (!parsed) spdlog::debug("messages request: field '{}' ignored", log_escape(key, 64));
  }
}

json parse_body(std::string_view body) { return parse_json_body(body, kMaxRequestDepth); }

}  // namespace

MessagesRequest parse_messages_request(std::string_view body, const engine::SamplingParams& defaults) {
  const json j = parse_body(body);
  log_ignored_fields(j);
  MessagesRequest out;
  ChatRequest& r = out.chat;
  r.gen = parse_generation(j, defaults);
  if (const json* mcp = field(j, "mcp_servers"); mcp && !(mcp->is_array() && mcp->empty()))
    throw invalid_field("mcp_servers", "mcp_servers is not supported (remote MCP tools run on Anthropic's side)");

  Conversation conv;
  if (const json* system = field(j, "system")) {
    const std::string text = text_content(*system, "system");
    if (!text.empty()) conv.add_system(text);
  }
  const json* msgs = field(j, "messages");
  if (!msgs || !msgs->is_array() || msgs->empty()) throw invalid_field("messages", "messages must be a non-empty array");
  if (msgs->size() > kMaxMessages) throw invalid_field("messages", "at most " + std::to_string(kMaxMessages) + " messages");
  for (size_t i = 0; i < msgs->size(); ++i) conv.add((*msgs)[i], i);
  r.messages = std::move(conv.messages);
  out.system_in_place = conv.system_in_place;

  const Tools tools = parse_tools(j);
  r.tools = tools.openai;
  r.tool_choice = parse_tool_choice(j, tools, r.parallel_tool_calls);
  parse_thinking(j, r);
  return out;
}

json merge_system_messages(const json& messages) {
  std::string system;
  json rest = json::array();
  for (const json& m : messages) {
    if (m["role"] == "system") append(system, m["content"].get<std::string>(), "\n\n");
    else rest.push_back(m);
  }
  if (system.empty()) return rest;
  json out = json::array({{{"role", "system"}, {"content", system}}});
  for (json& m : rest) out.push_back(std::move(m));
  return out;
}

}  // namespace anelm::server
