// Constrained decoding support: a call's literal shape per syntax and the JSON Schema of its
// payload.
#include <stdexcept>

#include "chat/chat_format.h"

namespace anelm::chat {
namespace {

using json = nlohmann::ordered_json;  // schemas keep their key order: properties are generated in it

// The function object of one tools-array entry: {"type":"function","function":{...}} or bare {...}.
const json* function_of(const json& tool) {
  if (!tool.is_object()) return nullptr;
  auto it = tool.find("function");
  const json* fn = (it != tool.end() && it->is_object()) ? &*it : &tool;
  auto name = fn->find("name");
  if (name == fn->end() || !name->is_string()) return nullptr;
  return fn;
}

json parameters_of(const json& fn) {
  auto it = fn.find("parameters");
  if (it == fn.end() || it->is_null()) return json{{"type", "object"}};
  return *it;
}

constexpr std::string_view kArgsMarker = "[ARGS]";

ToolCallShape make_shape(std::string trigger, std::string prefix, std::string suffix,
                         std::string separator) {
  ToolCallShape s;
  s.trigger = std::move(trigger);
  s.prefix = std::move(prefix);
  s.suffix = std::move(suffix);
  s.separator = std::move(separator);
  return s;
}

}  // namespace

ToolCallShape tool_call_shape(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kNone: {
      ToolCallShape s;
      s.supports_parallel = false;
      return s;
    }
    case ToolSyntax::kHermes:
      return make_shape("<tool_call>", "<tool_call>\n", "\n</tool_call>", "\n");
    case ToolSyntax::kLlama3: {
      ToolCallShape s = make_shape("{", "", "", "");
      s.trigger_at_start = true;
      s.supports_parallel = false;  // the Llama 3.x templates raise on more than one call per turn
      return s;
    }
    case ToolSyntax::kMistral: {
      ToolCallShape s = make_shape("[TOOL_CALLS]", "[TOOL_CALLS][", "]", ", ");
      s.parallel_in_one_json = true;
      return s;
    }
    case ToolSyntax::kQwenXml: {
      ToolCallShape s = make_shape("<tool_call>", "<tool_call>\n", "</tool_call>", "\n");
      s.xml_parameters = true;
      return s;
    }
    case ToolSyntax::kGranite: {  // one JSON array after the token, no closing marker
      ToolCallShape s = make_shape("<|tool_call|>", "<|tool_call|>[", "]", ", ");
      s.parallel_in_one_json = true;
      return s;
    }
    case ToolSyntax::kPhi4: {
      ToolCallShape s = make_shape("<|tool_call|>", "<|tool_call|>[", "]<|/tool_call|>", ", ");
      s.parallel_in_one_json = true;
      return s;
    }
    case ToolSyntax::kGeneric: {
      ToolCallShape s = make_shape("", "{\"tool_calls\": [", "]}", ", ");
      s.parallel_in_one_json = true;
      s.whole_output_json = true;
      return s;
    }
  }
  return ToolCallShape{};
}

ToolCallShape tool_call_shape(const ChatFormat& format) {
  if (format.tools == ToolSyntax::kMistral && format.mistral_form == MistralForm::kNameArgs) {
    ToolCallShape s = make_shape("[TOOL_CALLS]", "[TOOL_CALLS]", "", "");
    s.name_outside_json = true;
    s.name_suffix = std::string(kArgsMarker);
    return s;
  }
  return tool_call_shape(format.tools);
}

json tool_call_payload_schema(ToolSyntax syntax, const json& tools, const std::string& only_name) {
  const char* args_key = syntax == ToolSyntax::kLlama3 ? "parameters" : "arguments";
  json alternatives = json::array();
  if (tools.is_array()) {
    for (const json& tool : tools) {
      const json* fn = function_of(tool);
      if (!fn) continue;
      const std::string name = (*fn)["name"].get<std::string>();
      if (!only_name.empty() && name != only_name) continue;
      json properties = json::object();
      properties["name"] = json{{"const", name}};
      properties[args_key] = parameters_of(*fn);
      alternatives.push_back(json{{"type", "object"},
                                  {"properties", properties},
                                  {"required", json::array({"name", args_key})},
                                  {"additionalProperties", false}});
    }
  }
  if (alternatives.empty()) {
    throw std::invalid_argument(only_name.empty()
                                    ? "no function tools to call"
                                    : "tool_choice names an unknown function: " + only_name);
  }
  if (alternatives.size() == 1) return alternatives[0];
  return json{{"anyOf", alternatives}};
}

json tool_arguments_schema(const json& tools, const std::string& name) {
  if (tools.is_array()) {
    for (const json& tool : tools) {
      const json* fn = function_of(tool);
      if (fn && (*fn)["name"] == name) return parameters_of(*fn);
    }
  }
  throw std::invalid_argument("unknown function: " + name);
}

json generic_envelope_schema(const json& tools, const std::string& only_name, bool allow_response,
                             bool parallel) {
  json calls = {{"type", "array"},
                {"items", tool_call_payload_schema(ToolSyntax::kGeneric, tools, only_name)},
                {"minItems", 1}};
  if (!parallel) calls["maxItems"] = 1;
  json call_branch = {{"type", "object"},
                      {"properties", {{"tool_calls", calls}}},
                      {"required", json::array({"tool_calls"})},
                      {"additionalProperties", false}};
  if (!allow_response) return call_branch;
  json response_branch = {{"type", "object"},
                          {"properties", {{"response", {{"type", "string"}}}}},
                          {"required", json::array({"response"})},
                          {"additionalProperties", false}};
  return json{{"anyOf", json::array({call_branch, response_branch})}};
}

}  // namespace anelm::chat
