// The model's chat template through the jinja engine; errors become 400s that name the cause.
#include "server/chat_prompt.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "server/api_error.h"

namespace anelm::server {

namespace {

using json = nlohmann::ordered_json;

// The generic JSON tool-call convention (chat::ToolSyntax::kGeneric, enforced by a grammar) as
// instructions to the model; `tools` holds the OpenAI tools.
constexpr const char* kGenericToolsJinja = R"JINJA({{- 'You may call these tools (JSON schemas):\n' }}
{%- for tool in tools %}{{- (tool.function if tool.function is defined else tool) | tojson + '\n' }}{%- endfor %}
{{- 'To call tools, reply with only {"tool_calls": [{"name": NAME, "arguments": {...}}]}. Otherwise reply with only {"response": TEXT}.' }})JINJA";

// For models without a (usable) template: ChatML. It reads `tools`, so tool requests use the
// generic JSON convention (chat::ToolSyntax::kGeneric), which the server enforces with a grammar.
std::string chatml_fallback() {
  return std::string(R"JINJA({%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages and messages[0].role == 'system' %}{{- messages[0].content + '\n\n' }}{%- endif %}
)JINJA") + kGenericToolsJinja + R"JINJA(
{{- '<|im_end|>\n' }}
{%- elif messages and messages[0].role == 'system' %}
{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'assistant' and message.tool_calls %}
{{- '<|im_start|>assistant\n{"tool_calls": [' }}
{%- for call in message.tool_calls %}{{- ', ' if not loop.first else '' }}{{- {'name': call.function.name, 'arguments': call.function.arguments} | tojson }}{%- endfor %}
{{- ']}<|im_end|>\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\n' + (message.content if message.content is string else '') + '<|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %})JINJA";
}

// Earlier tool turns as text, for a template that knows nothing of tools: an assistant's calls as
// the generic JSON reply, a tool result as {"tool_response": ...} (as tojson prints them).
constexpr const char* kToolCallsJinja = R"JINJA({{- {'tool_calls': calls} | tojson }})JINJA";
constexpr const char* kToolResponseJinja = R"JINJA({{- {'tool_response': {'tool_call_id': id, 'content': content}} | tojson }})JINJA";
// Phi-4-mini's tool list as its template takes it: a JSON string in the system message's "tools"
// field (json.dumps of the function objects, as Microsoft's example passes it).
constexpr const char* kPhi4ToolsJinja = R"JINJA({{- functions | tojson }})JINJA";


// The helpers above, parsed once (they are constants that parse).
const jinja::Template& parsed(const char* source) {
  static const jinja::Template tools = jinja::Template::parse(kGenericToolsJinja);
  static const jinja::Template calls = jinja::Template::parse(kToolCallsJinja);
  static const jinja::Template response = jinja::Template::parse(kToolResponseJinja);
  static const jinja::Template phi4_tools = jinja::Template::parse(kPhi4ToolsJinja);
  if (source == kGenericToolsJinja) return tools;
  if (source == kPhi4ToolsJinja) return phi4_tools;
  return source == kToolCallsJinja ? calls : response;
}

std::string render_helper(const char* source, const json& ctx) {
  try {
    return parsed(source).render(ctx, std::chrono::system_clock::now());
  } catch (const jinja::Error& e) {  // limits (a huge tool list): the request's fault
    throw invalid_field("tools", std::string("cannot describe the tools: ") + e.what());
  }
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether the template loops over a message's content (`for x in message['content']`,
// `for x in m.content`, `for x in content`): such templates expect the parts list, as transformers
// passes it (vLLM calls this the "openai" content format).
bool iterates_content(std::string_view src) {
  auto skip_space = [&](size_t i) {
    while (i < src.size() && std::isspace(static_cast<unsigned char>(src[i]))) ++i;
    return i;
  };
  for (size_t at = src.find("for"); at != std::string_view::npos; at = src.find("for", at + 3)) {
    if ((at > 0 && ident_char(src[at - 1])) || at + 3 >= src.size() || !std::isspace(static_cast<unsigned char>(src[at + 3])))
      continue;
    size_t i = skip_space(at + 3);
    while (i < src.size() && (ident_char(src[i]) || src[i] == ',' || src[i] == ' ')) {
      if (src.compare(i, 3, "in ") == 0 && (i == 0 || !ident_char(src[i - 1]))) break;
      ++i;
    }
    if (src.compare(i, 3, "in ") != 0) continue;
    i = skip_space(i + 3);
    size_t j = i;
    while (j < src.size() && ident_char(src[j])) ++j;
    std::string_view word = src.substr(i, j - i);
    if (word != "content") {  // message.content / message['content'] / message["content"]
      if (j < src.size() && src[j] == '.') ++j;
      else if (j + 1 < src.size() && src[j] == '[' && (src[j + 1] == '\'' || src[j + 1] == '"')) j += 2;
      else continue;
      i = j;
      while (j < src.size() && ident_char(src[j])) ++j;
      word = src.substr(i, j - i);
    }
    if (word == "content") return true;
  }
  return false;
}

// A message's content as one text: parts joined with "\n" (vLLM's and llama-server's rule).
std::string content_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (!content.is_array()) return out;
  for (const json& part : content) {
    if (!out.empty()) out += '\n';
    if (part.is_object() && part.contains("text") && part["text"].is_string()) out += part["text"].get<std::string>();
  }
  return out;
}

// Messages with content parts joined into strings, unless `keep_parts`.
json normalized(const json& messages, bool keep_parts) {
  json out = messages;
  if (keep_parts) return out;
  for (json& m : out)
    if (m.is_object() && m.contains("content") && m["content"].is_array()) m["content"] = content_text(m["content"]);
  return out;
}

// Tool calls and results as plain turns (see kToolCallsJinja); consecutive results become one
// user turn so that templates insisting on user/assistant alternation accept them.
json tool_turns_as_text(const json& messages) {
  json out = json::array();
  bool prev_result = false;
  for (const json& m : messages) {
    const std::string role = m.value("role", "");
    if (role == "assistant" && m.contains("tool_calls")) {
      json calls = json::array();
      for (const json& c : m["tool_calls"])
        calls.push_back({{"name", c["function"]["name"]}, {"arguments", c["function"]["arguments"]}});
      out.push_back({{"role", "assistant"}, {"content", render_helper(kToolCallsJinja, {{"calls", calls}})}});
      prev_result = false;
    } else if (role == "tool") {
      const std::string text = render_helper(
          kToolResponseJinja, {{"id", m.value("tool_call_id", "")}, {"content", content_text(m["content"])}});
      if (prev_result) out.back()["content"] = out.back()["content"].get<std::string>() + "\n" + text;
      else out.push_back({{"role", "user"}, {"content", text}});
      prev_result = true;
    } else {
      out.push_back(m);
      prev_result = false;
    }
  }
  return out;
}

// The templates of kGranite and kPhi4 render only a message's content: an assistant's earlier calls
// become its content in the model's own syntax (chat::tool_calls_text), and Phi-4-mini's template,
// which does not read `tools`, gets them in the system message (a default one when there is none,
// as in its model card).
json native_tool_turns(json messages, const json& tools, const chat::ChatFormat& format) {
  if (format.tools != chat::ToolSyntax::kGranite && format.tools != chat::ToolSyntax::kPhi4) return messages;
  if (!format.template_renders_calls) {
    for (json& m : messages) {
      if (m.value("role", "") != "assistant" || !m.contains("tool_calls") || !m["tool_calls"].is_array() ||
          m["tool_calls"].empty())
        continue;
      const json content = m.contains("content") ? m["content"] : json();
      std::string text = content.is_null() ? std::string() : content_text(content);
      try {
        text += chat::tool_calls_text(format.tools, m["tool_calls"]);
      } catch (const std::invalid_argument& e) {
        throw invalid_field("messages", e.what());
      }
      m["content"] = text;
    }
  }
  if (format.tools == chat::ToolSyntax::kPhi4 && !format.template_accepts_tools && tools.is_array() && !tools.empty()) {
    json functions = json::array();
    for (const json& t : tools) functions.push_back(t.is_object() && t.contains("function") ? t["function"] : t);
    if (messages.empty() || messages[0].value("role", "") != "system")
      messages.insert(messages.begin(), json{{"role", "system"}, {"content", "You are a helpful assistant with some tools."}});
    messages[0]["tools"] = render_helper(kPhi4ToolsJinja, {{"functions", functions}});
  }
  return messages;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("--chat-template: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string token_text(const tok::VocabData& v, int id) {
  return id >= 0 && id < static_cast<int>(v.tokens.size()) ? v.tokens[static_cast<size_t>(id)] : std::string();
}

}  // namespace

ChatPrompt::ChatPrompt(const std::string& source, std::string origin, const tok::VocabData& vocab)
    : template_(jinja::Template::parse(source.empty() ? chatml_fallback() : source)),
      format_(chat::detect_chat_format(source.empty() ? chatml_fallback() : source)),
      origin_(std::move(origin)),
      source_(source.empty() ? chatml_fallback() : source),
      content_as_parts_(iterates_content(source)) {
  if (format_.tools == chat::ToolSyntax::kNone) {
    // As llama-server: tools still work, described in the system prompt, the reply forced to the
    // generic JSON form by a grammar.
    format_.tools = chat::ToolSyntax::kGeneric;
    tools_in_system_prompt_ = true;
    spdlog::info("the chat template ({}) does not render tools: requests with tools describe them in the system "
                 "prompt and use the generic JSON tool-call format",
                 origin_);
  }
  // transformers passes the tokenizer's special tokens; an absent one (Qwen's BOS) stays undefined.
  if (const std::string bos = token_text(vocab, vocab.bos_id); !bos.empty()) specials_["bos_token"] = bos;
  if (const std::string eos = token_text(vocab, vocab.eos_id); !eos.empty()) specials_["eos_token"] = eos;
}

std::shared_ptr<const ChatPrompt> ChatPrompt::for_model(const tok::VocabData& vocab, const std::string& override_file) {
  if (!override_file.empty()) {
    try {
      return std::make_shared<const ChatPrompt>(read_text(override_file), "file " + override_file, vocab);
    } catch (const jinja::Error& e) {
      throw std::runtime_error("--chat-template " + override_file + ": " + e.what());
    }
  }
  if (!vocab.chat_template.empty()) {
    try {
      return std::make_shared<const ChatPrompt>(vocab.chat_template, "model", vocab);
    } catch (const jinja::Error& e) {
      spdlog::warn("the model's chat template does not parse ({}); using ChatML", e.what());
    }
  }
  return std::make_shared<const ChatPrompt>("", "chatml fallback", vocab);
}

std::string ChatPrompt::render(const json& messages, const json& tools, bool add_generation_prompt,
                               const json& kwargs) const {
  if (tools_in_system_prompt_ && !tools.empty())
    return render_generic_tools(normalized(messages, false), tools, add_generation_prompt, kwargs);
  // No tools offered (tool_choice none) to a template without tools: earlier tool turns still become
  // the text turns it can render.
  json msgs = normalized(messages, content_as_parts_);
  if (tools_in_system_prompt_) msgs = tool_turns_as_text(msgs);
  return render_template(native_tool_turns(std::move(msgs), tools, format_), tools, add_generation_prompt, kwargs);
}

std::string ChatPrompt::render_generic_tools(json messages, const json& tools, bool add_generation_prompt,
                                             const json& kwargs) const {
  messages = tool_turns_as_text(messages);
  const std::string instructions = render_helper(kGenericToolsJinja, {{"tools", tools}});
  const bool had_system = !messages.empty() && messages[0].value("role", "") == "system";
  json with_system = messages;
  if (had_system) with_system[0]["content"] = with_system[0]["content"].get<std::string>() + "\n\n" + instructions;
  else with_system.insert(with_system.begin(), json{{"role", "system"}, {"content", instructions}});
  try {
    return render_template(with_system, json(), add_generation_prompt, kwargs);
  } catch (const ApiError&) {
    if (had_system) throw;
    // A template without a system role (gemma): the instructions open the first user turn.
    for (json& m : messages) {
      if (m.value("role", "") != "user") continue;
      m["content"] = instructions + "\n\n" + m["content"].get<std::string>();
      return render_template(messages, json(), add_generation_prompt, kwargs);
    }
    throw;
  }
}

std::string ChatPrompt::render_request(const ChatRequest& r) const {
  static const json kNoTools = json::array();
  const json& tools = tools_in_system_prompt_ && r.tool_choice.kind == ToolChoice::Kind::kNone ? kNoTools : r.tools;
  const json& last = r.messages.back();
  const bool last_assistant = last.value("role", "") == "assistant";
  const json content = last.contains("content") ? last["content"] : json("");
  // The end of the message's text as the template prints it: its last part when it has parts.
  const std::string tail = content.is_array() && !content.empty() ? content.back().value("text", "") : content_text(content);
  const bool defaults = !r.add_generation_prompt && !r.continue_final_message;
  const bool cont = last_assistant && (r.continue_final_message.value_or(false) ||
                                       (r.add_generation_prompt && !*r.add_generation_prompt) ||
                                       (defaults && !last.contains("tool_calls") && !tail.empty()));
  if (!cont) return render(r.messages, tools, r.add_generation_prompt.value_or(true), r.template_kwargs);
  const std::string where = "messages[" + std::to_string(r.messages.size() - 1) + "]";
  if (last.contains("tool_calls"))
    throw invalid_field(where, "a final assistant message with tool_calls cannot be continued");
  if (tail.empty()) {  // nothing to continue: the same as a new assistant turn
    json head = r.messages;
    head.erase(head.size() - 1);
    if (head.empty()) throw invalid_field(where, "an empty assistant message alone cannot be continued");
    return render(head, tools, true, r.template_kwargs);
  }
  const std::string full = render(r.messages, tools, false, r.template_kwargs);
  const size_t at = full.rfind(tail);
  if (at == std::string::npos)
    throw invalid_field(where, "the chat template does not render this assistant message's text verbatim, so it "
                               "cannot be continued");
  spdlog::debug("continuing the final assistant message ({} bytes of template markup after it dropped)",
                full.size() - at - tail.size());
  return full.substr(0, at + tail.size());
}

std::string ChatPrompt::render_template(const json& messages, const json& tools, bool add_generation_prompt,
                                        const json& kwargs) const {
  nlohmann::ordered_json ctx = specials_;
  for (const auto& [k, v] : kwargs.items()) ctx[k] = v;  // reserved names were refused by the request parser
  ctx["messages"] = messages;
  // transformers passes tools=None when the request has none.
  ctx["tools"] = tools.empty() ? nlohmann::ordered_json() : tools;
  ctx["add_generation_prompt"] = add_generation_prompt;
  try {
    return template_.render(ctx, std::chrono::system_clock::now());
  } catch (const jinja::Raised& e) {
    throw invalid_field("messages", std::string("the chat template refused the conversation: ") + e.what());
  } catch (const jinja::Error& e) {
    throw invalid_field("messages", std::string("the chat template failed: ") + e.what());
  }
}

std::vector<int> preserved_token_ids(const tok::Tokenizer& tk, const chat::ChatFormat& format,
                                     const std::vector<int>* candidates) {
  const std::vector<std::string_view> markers = chat::format_markers(format);
  std::vector<int> ids;
  auto consider = [&](int id) {
    if (!tk.is_special(id)) return;
    const std::string text = tk.token_bytes(id);
    if (std::find(markers.begin(), markers.end(), text) != markers.end()) ids.push_back(id);
  };
  if (markers.empty()) return ids;
  if (candidates) {
    for (int id : *candidates) consider(id);
  } else {
    for (int id = 0; id < tk.vocab_size(); ++id) consider(id);
  }
  return ids;
}

}  // namespace anelm::server
