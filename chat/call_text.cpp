// tool_calls_text: an assistant's earlier calls written back in the model's own call syntax, for
// the templates that render only a message's content (Granite 3.x, Phi-4-mini; chat_format.h).
#include <stdexcept>

#include "chat/chat_format.h"
#include "chat/json_text.h"
#include "chat/stream_markers.h"

namespace anelm::chat {
namespace {

using json = nlohmann::ordered_json;

// A JSON value as Python's json.dumps writes it (", " and ": " separators, non-ASCII kept): how the
// models' documented usage (and transformers' tojson) prints arguments.
void append_py_json(std::string& out, const json& v) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      if (!first) out += ", ";
      first = false;
      out += json(k).dump() + ": ";
      append_py_json(out, x);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      append_py_json(out, v[i]);
    }
    out += ']';
  } else {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

// The arguments as the model would write them: a JSON-object text is kept byte for byte (a history
// round-trips exactly), an object (the request parser's form) is printed as json.dumps does, any
// other value is a JSON value.
std::string arguments_text(const json& args) {
  if (args.is_string()) {
    const std::string& s = args.get_ref<const std::string&>();
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && s[first] == '{' && detail::is_json_text(s, kMaxJsonDepth + 1)) return s;
  }
  if (args.is_null()) return "{}";
  std::string out;
  append_py_json(out, args);
  return out;
}

}  // namespace

std::string tool_calls_text(ToolSyntax syntax, const json& tool_calls) {
  if (syntax != ToolSyntax::kGranite && syntax != ToolSyntax::kPhi4) return "";
  std::string out(detail::kToolCallToken);
  out += '[';
  bool first = true;
  for (const json& call : tool_calls.is_array() ? tool_calls : json::array()) {
    const json* fn = call.is_object() && call.contains("function") ? &call["function"] : &call;
    if (!fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
      throw std::invalid_argument("a tool call without a function name");
    if (!first) out += ", ";
    first = false;
    out += "{\"name\": " + (*fn)["name"].dump() + ", \"arguments\": ";
    out += arguments_text(fn->contains("arguments") ? (*fn)["arguments"] : json());
    out += '}';
  }
  out += ']';
  if (syntax == ToolSyntax::kPhi4) out += detail::kPhi4Close;
  return out;
}

}  // namespace anelm::chat
