// The marker table of the output parser: the literal text each model format writes around its
// reasoning and its tool calls, and which marker opens a call block in free content. It exists so
// that the stream machine (stream_machine.cpp, stream_block.cpp) spells no marker itself and a new
// format's markers are added in one place. The syntaxes are described in chat_format.h. Internal:
// not part of the public API.
#pragma once

#include <string_view>

#include "chat/chat_format.h"

namespace anelm::chat::detail {

// Tool-call markup.
inline constexpr std::string_view kHermesOpen = "<tool_call>";
inline constexpr std::string_view kHermesClose = "</tool_call>";
inline constexpr std::string_view kMistralOpen = "[TOOL_CALLS]";
inline constexpr std::string_view kArgsMarker = "[ARGS]";         // Mistral: name[ARGS]{...}
inline constexpr std::string_view kCallIdMarker = "[CALL_ID]";    // Mistral: name[CALL_ID]id[ARGS]
// Granite 3.x and Phi-4-mini: <|tool_call|>[...] (Phi-4: closed by <|/tool_call|>).
inline constexpr std::string_view kToolCallToken = "<|tool_call|>";
inline constexpr std::string_view kPhi4Close = "<|/tool_call|>";
inline constexpr std::string_view kPythonTag = "<|python_tag|>";  // Llama 3: before a bare call
// Qwen XML, inside <tool_call>: <function=NAME> (<parameter=ARG> VALUE </parameter>)* </function>
inline constexpr std::string_view kXmlFunctionOpen = "<function=";
inline constexpr std::string_view kXmlFunctionClose = "</function>";
inline constexpr std::string_view kXmlParamOpen = "<parameter=";
inline constexpr std::string_view kXmlParamClose = "</parameter>";

// The marker that opens a call block inside content (Hermes, Qwen XML, Mistral, Granite, Phi-4); empty for the syntaxes
// whose calls are recognised otherwise (Llama 3 and generic: a reply that begins with '{').
inline std::string_view tool_trigger(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kHermes:
    case ToolSyntax::kQwenXml:
      return kHermesOpen;
    case ToolSyntax::kMistral:
      return kMistralOpen;
    case ToolSyntax::kGranite:
    case ToolSyntax::kPhi4:
      return kToolCallToken;
    default:
      return {};
  }
}

// The marker that closes a call block (read by the trailer state after its calls); empty when the
// block ends with its JSON (Granite, Mistral).
inline std::string_view tool_close(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kHermes:
    case ToolSyntax::kQwenXml:
      return kHermesClose;
    case ToolSyntax::kPhi4:
      return kPhi4Close;
    default:
      return {};
  }
}

// Reasoning block markers: [THINK]...[/THINK] for kThinkBrackets, <think>...</think> otherwise.
struct ThinkMarkers {
  std::string_view open, close;
};
inline ThinkMarkers think_markers(ReasoningSyntax syntax) {
  if (syntax == ReasoningSyntax::kThinkBrackets) return {"[THINK]", "[/THINK]"};
  return {"<think>", "</think>"};
}

}  // namespace anelm::chat::detail
