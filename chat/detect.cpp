// detect_chat_format: a template's tool-call syntax and reasoning markers, from its source text.
#include <cctype>

#include "chat/chat_format.h"
#include "chat/stream_markers.h"

namespace anelm::chat {
namespace {

bool has(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether the Jinja code of the template (inside {{ }} and {% %}, outside string literals and
// comments) names the identifier `id`.
bool code_references(std::string_view src, std::string_view id) {
  std::size_t i = 0;
  const std::size_t n = src.size();
  while (i + 1 < n) {
    if (src[i] != '{' || (src[i + 1] != '{' && src[i + 1] != '%' && src[i + 1] != '#')) {
      ++i;
      continue;
    }
    const char kind = src[i + 1];
    i += 2;
    if (kind == '#') {
      const std::size_t end = src.find("#}", i);
      if (end == std::string_view::npos) return false;
      i = end + 2;
      continue;
    }
    const char close = kind == '{' ? '}' : '%';
    while (i < n) {
      const char c = src[i];
      if (c == close && i + 1 < n && src[i + 1] == '}') {
        i += 2;
        break;
      }
      if (c == '\'' || c == '"') {  // string literal
        ++i;
        while (i < n && src[i] != c) i += (src[i] == '\\') ? 2 : 1;
        ++i;
        continue;
      }
      if (ident_char(c)) {
        const std::size_t start = i;
        while (i < n && ident_char(src[i])) ++i;
        if (src.substr(start, i - start) == id) return true;
        continue;
      }
      ++i;
    }
  }
  return false;
}

}  // namespace

ChatFormat detect_chat_format(std::string_view src) {
  ChatFormat f;
  f.template_accepts_tools = code_references(src, "tools");
  f.template_renders_calls = code_references(src, "tool_calls");

  const bool xml_arguments = has(src, "<function=") || has(src, "<parameter=") ||
                             has(src, "<arg_key>") || has(src, "<invoke") ||
                             has(src, "<tool_calls>");
  const bool json_arguments = has(src, "\"arguments\"") || has(src, "\\\"arguments\\\"");
  if (has(src, "[TOOL_CALLS]")) {
    f.tools = ToolSyntax::kMistral;
    f.mistral_form = has(src, "[ARGS]") ? MistralForm::kNameArgs : MistralForm::kJsonArray;
  } else if (has(src, "<tool_call>") && has(src, "<function=") && has(src, "<parameter=")) {
    f.tools = ToolSyntax::kQwenXml;
  } else if (has(src, "<tool_call>") && json_arguments && !xml_arguments) {
    f.tools = ToolSyntax::kHermes;
  } else if (has(src, "<|/tool_call|>") || (has(src, "<|tool|>") && has(src, "<|/tool|>"))) {
    f.tools = ToolSyntax::kPhi4;
  } else if (has(src, "<|tool_call|>")) {
    f.tools = ToolSyntax::kGranite;
  } else if (has(src, "<|start_header_id|>") &&
             (has(src, "<|python_tag|>") || has(src, "\"parameters\"")) &&
             !has(src, "<function=") && f.template_accepts_tools) {
    f.tools = ToolSyntax::kLlama3;
  } else if (f.template_accepts_tools) {
    f.tools = ToolSyntax::kGeneric;
  }

  if (has(src, "<think>")) {
    f.reasoning = ReasoningSyntax::kThinkTags;
  } else if (has(src, "[THINK]")) {
    f.reasoning = ReasoningSyntax::kThinkBrackets;
  }
  return f;
}

bool prompt_opens_reasoning(std::string_view prompt, const ChatFormat& format) {
  std::string_view open;
  switch (format.reasoning) {
    case ReasoningSyntax::kNone:
      return false;
    case ReasoningSyntax::kThinkTags:
      open = "<think>";
      break;
    case ReasoningSyntax::kThinkBrackets:
      open = "[THINK]";
      break;
  }
  while (!prompt.empty() && std::isspace(static_cast<unsigned char>(prompt.back())))
    prompt.remove_suffix(1);
  return prompt.size() >= open.size() && prompt.substr(prompt.size() - open.size()) == open;
}

std::vector<std::string_view> format_markers(const ChatFormat& format) {
  using namespace detail;
  std::vector<std::string_view> out;
  auto add = [&](std::string_view m) {
    if (!m.empty()) out.push_back(m);
  };
  add(tool_trigger(format.tools));
  add(tool_close(format.tools));
  if (format.tools == ToolSyntax::kMistral) {
    add(kArgsMarker);
    add(kCallIdMarker);
  }
  if (format.tools == ToolSyntax::kLlama3) add(kPythonTag);
  if (format.reasoning != ReasoningSyntax::kNone) {
    const ThinkMarkers t = think_markers(format.reasoning);
    add(t.open);
    add(t.close);
  }
  return out;
}

const char* to_string(ToolSyntax s) {
  switch (s) {
    case ToolSyntax::kNone:
      return "none";
    case ToolSyntax::kHermes:
      return "hermes";
    case ToolSyntax::kLlama3:
      return "llama3";
    case ToolSyntax::kMistral:
      return "mistral";
    case ToolSyntax::kGeneric:
      return "generic";
    case ToolSyntax::kQwenXml:
      return "qwen_xml";
    case ToolSyntax::kGranite:
      return "granite";
    case ToolSyntax::kPhi4:
      return "phi4";
  }
  return "?";
}

const char* to_string(ReasoningSyntax s) {
  switch (s) {
    case ReasoningSyntax::kNone:
      return "none";
    case ReasoningSyntax::kThinkTags:
      return "think_tags";
    case ReasoningSyntax::kThinkBrackets:
      return "think_brackets";
  }
  return "?";
}

}  // namespace anelm::chat
