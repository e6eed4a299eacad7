// Fixed renderers transcribing the Jinja templates of Qwen2/2.5/3, Llama-2 and Llama-3/3.1 line by line.
#include "tokenizer/chat_template.h"

#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tokenizer/unicode.h"

namespace anelm::tok {
namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

[[noreturn]] void bad_role(const std::string& role, std::string_view format) {
  throw std::invalid_argument("chat message role \"" + role + "\" is not supported by the " +
                              std::string(format) + " chat template");
}

// Python str.isspace() (what Jinja's trim filter and str.strip() remove).
bool py_space(uint32_t cp) {
  return (cp >= 0x1C && cp <= 0x1F) || (unicode::classify(cp) & unicode::kWhitespace);
}

// Python str.strip()/lstrip()/rstrip() without arguments.
std::string py_strip(std::string_view s, bool left = true, bool right = true) {
  size_t b = 0, e = s.size();
  while (left && b < e) {
    size_t len = 0;
    if (!py_space(unicode::decode_at(s, b, &len))) break;
    b += len;
  }
  while (right && e > b) {
    size_t k = e - 1;  // step back to the start of the last character
    while (k > b && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
    size_t len = 0;
    if (!py_space(unicode::decode_at(s, k, &len)) || k + len != e) break;
    e = k;
  }
  return std::string(s.substr(b, e - b));
}

// Python str.strip('\n') variants.
std::string strip_newlines(std::string_view s, bool left, bool right) {
  size_t b = 0, e = s.size();
  while (left && b < e && s[b] == '\n') ++b;
  while (right && e > b && s[e - 1] == '\n') --e;
  return std::string(s.substr(b, e - b));
}

// The literal text after '<|im_start|>system\n' in a Jinja string literal, up to <|im_end|>:
// the default system prompt (Qwen2 "You are a helpful assistant", Qwen2.5 "You are Qwen, ...").
// The newline is the escape "\n" inside the literal, or a raw newline (some GGUF conversions).
std::string find_default_system(std::string_view src, size_t* at) {
  const std::string_view marker = "<|im_start|>system";
  for (size_t pos = src.find(marker); pos != std::string_view::npos; pos = src.find(marker, pos + 1)) {
    size_t start = pos + marker.size();
    if (src.substr(start, 2) == "\\n") start += 2;
    else if (src.substr(start, 1) == "\n") start += 1;
    else continue;
    const size_t end = src.find("<|im_end|>", start);
    if (end == std::string_view::npos) break;
    const std::string_view text = src.substr(start, end - start);
    if (!text.empty() && text.find_first_of("'\"{}") == std::string_view::npos) {
      *at = pos;
      return std::string(text);
    }
  }
  return {};
}

std::string today_string() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%d %b %Y", &tm);  // as HF's strftime_now("%d %b %Y")
  return buf;
}

}  // namespace

ChatTemplate ChatTemplate::from_vocab(const VocabData& vocab) {
  auto text = [&](int id, const char* fallback) {
    return (id >= 0 && id < static_cast<int>(vocab.tokens.size())) ? vocab.tokens[id] : std::string(fallback);
  };
  return from_source(vocab.chat_template, text(vocab.bos_id, "<s>"), text(vocab.eos_id, "</s>"));
}

ChatTemplate ChatTemplate::from_source(std::string_view src, std::string bos_text, std::string eos_text) {
  ChatTemplate t;
  t.bos_ = std::move(bos_text);
  t.eos_ = std::move(eos_text);
  if (contains(src, "<|im_start|>")) {
    t.format_ = contains(src, "reasoning_content") ? ChatFormat::kQwen3 : ChatFormat::kChatMl;
    t.qwen_tool_responses_ = contains(src, "<tool_response>");
    if (t.format_ == ChatFormat::kChatMl) {
      size_t at = 0;
      t.default_system_ = find_default_system(src, &at);
      // Qwen2 emits it inside the message loop (so not for an empty list); Qwen2.5 before it.
      const size_t loop = src.find("for message in messages");
      t.default_system_always_ = loop == std::string_view::npos || at < loop;
    }
  } else if (contains(src, "<|start_header_id|>")) {
    t.format_ = contains(src, "Cutting Knowledge Date") ? ChatFormat::kLlama31 : ChatFormat::kLlama3;
    t.strftime_date_ = contains(src, "strftime_now");
  } else if (contains(src, "[INST]") && contains(src, "<<SYS>>")) {
    t.format_ = ChatFormat::kLlama2;
  }
  return t;
}

std::string_view ChatTemplate::format_name() const {
  switch (format_) {
    case ChatFormat::kChatMl: return "chatml";
    case ChatFormat::kQwen3: return "qwen3";
    case ChatFormat::kLlama2: return "llama2";
    case ChatFormat::kLlama3: return "llama3";
    case ChatFormat::kLlama31: return "llama3.1";
    case ChatFormat::kChatMlFallback: break;
  }
  return "chatml-fallback";
}

bool ChatTemplate::renders_bos() const {
  return format_ == ChatFormat::kLlama2 || format_ == ChatFormat::kLlama3 || format_ == ChatFormat::kLlama31;
}

namespace {

// ---- ChatML family ------------------------------------------------------------------------------

// Qwen2.5/Qwen3 "tool" turns: consecutive tool messages share one user turn.
void render_tool_turn(const std::vector<ChatMessage>& m, size_t i, std::string& out) {
  if (i == 0 || m[i - 1].role != "tool") out += "<|im_start|>user";
  out += "\n<tool_response>\n" + m[i].content + "\n</tool_response>";
  if (i + 1 == m.size() || m[i + 1].role != "tool") out += "<|im_end|>\n";
}

void check_chatml_role(const std::string& role, std::string_view name) {
  if (role != "system" && role != "user" && role != "assistant" && role != "tool") bad_role(role, name);
}

// Qwen3: index of the last real user query (not a wrapped tool response), else the last index.
size_t last_query_index(const std::vector<ChatMessage>& m) {
  for (size_t k = m.size(); k-- > 0;) {
    const std::string& c = m[k].content;
    const bool wrapped = c.rfind("<tool_response>", 0) == 0 && c.size() >= 16 &&
                         c.compare(c.size() - 16, 16, "</tool_response>") == 0;
    if (m[k].role == "user" && !wrapped) return k;
  }
  return m.empty() ? 0 : m.size() - 1;
}

// Qwen3 assistant turn: reasoning split out of "<think>...</think>" and shown only after the last query.
std::string qwen3_assistant(const std::vector<ChatMessage>& m, size_t i, size_t last_query) {
  std::string content = m[i].content, reasoning;
  const size_t close = content.find("</think>");
  if (close != std::string::npos) {
    const size_t last_close = content.rfind("</think>");
    std::string before = strip_newlines(std::string_view(content).substr(0, close), false, true);
    const size_t open = before.rfind("<think>");
    if (open != std::string::npos) before = before.substr(open + 7);
    reasoning = strip_newlines(before, true, false);
    content = strip_newlines(std::string_view(content).substr(last_close + 8), true, false);
  }
  std::string out = "<|im_start|>assistant\n";
  const bool after_query = static_cast<long>(i) > static_cast<long>(last_query);
  if (after_query && (i + 1 == m.size() || !reasoning.empty())) {
    out.append("<think>\n").append(strip_newlines(reasoning, true, true)).append("\n</think>\n\n");
    out.append(strip_newlines(content, true, false));
  } else {
    out += content;
  }
  return out + "<|im_end|>\n";
}

}  // namespace

std::string ChatTemplate::render(const std::vector<ChatMessage>& m, const ChatOptions& opt) const {
  // These templates read messages[0] unconditionally, which fails in Jinja for an empty list.
  const bool needs_message = format_ == ChatFormat::kQwen3 || format_ == ChatFormat::kLlama2 ||
                             format_ == ChatFormat::kLlama31 ||
                             (format_ == ChatFormat::kChatMl && !default_system_.empty() && default_system_always_);
  if (m.empty() && needs_message) {
    throw std::invalid_argument("the " + std::string(format_name()) + " chat template needs at least one message");
  }
  switch (format_) {
    case ChatFormat::kLlama2: return render_llama2(m);
    case ChatFormat::kLlama3: return render_llama3(m, opt);
    case ChatFormat::kLlama31: return render_llama31(m, opt);
    case ChatFormat::kChatMl:
    case ChatFormat::kQwen3:
    case ChatFormat::kChatMlFallback: break;
  }
  return render_chatml(m, opt);
}

// Qwen2/Qwen2.5/Qwen3 and plain ChatML.
std::string ChatTemplate::render_chatml(const std::vector<ChatMessage>& m, const ChatOptions& opt) const {
  for (const auto& msg : m) check_chatml_role(msg.role, format_name());
  std::string out;
  const bool first_is_system = !m.empty() && m[0].role == "system";
  if (first_is_system) {
    out += "<|im_start|>system\n" + m[0].content + "<|im_end|>\n";
  } else if (!default_system_.empty() && !m.empty()) {
    out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
  }
  const size_t last_query = last_query_index(m);
  for (size_t i = first_is_system ? 1 : 0; i < m.size(); ++i) {
    if (m[i].role == "tool" && (qwen_tool_responses_ || format_ == ChatFormat::kQwen3)) {
      render_tool_turn(m, i, out);
    } else if (m[i].role == "assistant" && format_ == ChatFormat::kQwen3) {
      out += qwen3_assistant(m, i, last_query);
    } else {
      out += "<|im_start|>" + m[i].role + "\n" + m[i].content + "<|im_end|>\n";
    }
  }
  if (opt.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (format_ == ChatFormat::kQwen3 && !opt.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

// Llama-2-chat: the system prompt is folded into the first user turn; the template ignores
// add_generation_prompt.
std::string ChatTemplate::render_llama2(const std::vector<ChatMessage>& m) const {
  std::string out;
  const bool has_system = !m.empty() && m[0].role == "system";
  for (size_t i = has_system ? 1 : 0, k = 0; i < m.size(); ++i, ++k) {
    const std::string& role = m[i].role;
    if (role != "user" && role != "assistant" && role != "system") bad_role(role, format_name());
    if ((role == "user") != (k % 2 == 0)) {
      throw std::invalid_argument("llama2 chat template: Conversation roles must alternate user/assistant/user/assistant/...");
    }
    std::string content = m[i].content;
    if (k == 0 && has_system) content = "<<SYS>>\n" + m[0].content + "\n<</SYS>>\n\n" + content;
    // A "system" turn at an odd position passes the alternation check and renders nothing.
    if (role == "user") out += bos_ + "[INST] " + py_strip(content) + " [/INST]";
    else if (role == "assistant") out.append(" ").append(py_strip(content)).append(" ").append(eos_);
  }
  return out;
}

// Llama-3.0: BOS before the first turn only, each content trimmed.
std::string ChatTemplate::render_llama3(const std::vector<ChatMessage>& m, const ChatOptions& opt) const {
  std::string out;
  for (size_t i = 0; i < m.size(); ++i) {
    const std::string& role = m[i].role;
    if (role != "system" && role != "user" && role != "assistant" && role != "tool" && role != "ipython") {
      bad_role(role, format_name());
    }
    if (i == 0) out += bos_;
    out += "<|start_header_id|>" + role + "<|end_header_id|>\n\n" + py_strip(m[i].content) + "<|eot_id|>";
  }
  if (opt.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// Llama-3.1/3.2 without tools: a system header always, with the knowledge and current dates.
std::string ChatTemplate::render_llama31(const std::vector<ChatMessage>& m, const ChatOptions& opt) const {
  const bool has_system = !m.empty() && m[0].role == "system";
  const std::string date = !opt.date_string.empty() ? opt.date_string
                           : strftime_date_        ? today_string()
                                                   : std::string("26 Jul 2024");
  std::string out = bos_ + "<|start_header_id|>system<|end_header_id|>\n\n";
  out += "Cutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n";
  out += (has_system ? py_strip(m[0].content) : std::string()) + "<|eot_id|>";
  for (size_t i = has_system ? 1 : 0; i < m.size(); ++i) {
    const std::string& role = m[i].role;
    if (role == "tool" || role == "ipython") {
      // A string content is "iterable" in Jinja, so the template emits it through tojson.
      out += "<|start_header_id|>ipython<|end_header_id|>\n\n";
      out += nlohmann::json(m[i].content).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out += "<|eot_id|>";
      continue;
    }
    if (role != "system" && role != "user" && role != "assistant") bad_role(role, format_name());
    out += "<|start_header_id|>" + role + "<|end_header_id|>\n\n" + py_strip(m[i].content) + "<|eot_id|>";
  }
  if (opt.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

}  // namespace anelm::tok
