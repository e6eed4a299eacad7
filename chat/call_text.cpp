// tool_calls_text: an assistant's earlier calls written back in the model's own call syntax, for
// the templates that render only a message's content (Granite 3.x, Phi-4-mini; chat_format.h).
#include <stdexcept>

#include "chat/chat_format.h"
#include "chat/json_text.h"
#include "chat/stream_markers.h"

namespace anelm::chat {
namespace {

using json = nlohmann::ordered_json;

// The arguments as the model would write them: the text itself when it is a JSON object (kept
// byte for byte, so a history round-trips exactly), else as a JSON value.
std::string arguments_text(const json& args) {
  if (args.is_string()) {
    const std::string& s = args.get_ref<const std::string&>();
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && s[first] == '{' && detail::is_json_text(s, kMaxJsonDepth + 1)) return s;
    return args.dump();
  }
  if (args.is_null()) return "{}";
  return args.dump();
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
