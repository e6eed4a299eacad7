// The output parser's state machine (stream_machine.h) outside its call blocks: construction,
// feed/finish, the whitespace-aware output, the modes (reasoning prefix, reasoning, content with
// its trigger marker, the Llama 3 / generic start check) and a block's lifecycle (begin, end,
// failure back to content, announcing a call and streaming its arguments). What happens to each
// byte inside a block is stream_block.cpp.
#include "chat/stream_machine.h"

#include <atomic>
#include <chrono>
#include <random>

#include "chat/stream_markers.h"

namespace anelm::chat::detail {
namespace {

std::uint64_t random_seed() {
  std::uint64_t seed =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  try {
    std::random_device rd;
    seed ^= (std::uint64_t{rd()} << 32) ^ rd();
  } catch (...) {  // no entropy source: the clock alone
  }
  static std::atomic<std::uint64_t> counter{0};
  return seed ^ (0x9E3779B97F4A7C15ull * ++counter);
}

}  // namespace

Machine::Machine(ChatFormat format, ParseOptions options) : fmt_(format), opt_(options) {
  rng_ = opt_.id_seed != 0 ? opt_.id_seed : random_seed();
  const bool reasoning = opt_.parse_reasoning && fmt_.reasoning != ReasoningSyntax::kNone;
  const ThinkMarkers think = think_markers(fmt_.reasoning);
  think_open_ = std::string(think.open);
  think_close_ = MarkerMatcher(std::string(think.close));
  tools_ = opt_.parse_tools ? fmt_.tools : ToolSyntax::kNone;
  const std::string_view trigger = tool_trigger(tools_);  // Hermes, Qwen XML and Mistral only
  if (!trigger.empty()) trigger_ = MarkerMatcher(std::string(trigger));
  xml_.value_end = MarkerMatcher(std::string(kXmlParamClose));
  if (reasoning) {
    mode_ = Mode::kReasonPrefix;
  } else {
    enter_content(false);
  }
}

void Machine::feed(std::string_view piece) {
  if (finished_) return;
  for (char c : piece) {
    ++pos_;
    process(c);
  }
}

void Machine::finish(bool cut) {
  if (finished_) return;
  if (mode_ == Mode::kReasonPrefix) {
    std::string pre = std::move(pre_buf_);
    leave_reason_prefix();
    if (!cut) replay(pre, false, 0);  // cut: a partial open marker, dropped
  }
  if (mode_ == Mode::kStartCheck) {
    std::string start = std::move(start_buf_);
    const bool partial_tag = tag_k_ > 0;
    start_buf_.clear();
    tag_k_ = 0;
    plain_content();
    if (!(cut && partial_tag)) replay(start, false, 0);
  }
  if (mode_ == Mode::kBlock) {
    if (bs_ == BS::kTrailer || bs_ == BS::kEnvEnd) {
      end_block();  // calls complete; a truncated closing marker is dropped
    } else {
      // An announced call that did not complete is not a call (its streamed fragments cannot be
      // taken back; the final message drops it). The rest of the block: content at a natural end
      // (malformed markup), dropped when the output was cut (markup that never completed).
      drop_open_call();
      if (cut) {
        held_.clear();
        trigger_.reset();
        content_.ws.clear();
        mode_ = Mode::kContent;
        detect_ = false;
      } else {
        fail_block(false);
      }
    }
  }
  switch (mode_) {
    case Mode::kReasoning: {
      std::string tail(think_close_.pending());
      think_close_.reset();
      if (!cut)
        for (char c : tail) put(reasoning_, c);
      reasoning_.ws.clear();
      break;
    }
    case Mode::kContent: {
      std::string tail(trigger_.pending());
      trigger_.reset();
      if (cut && !tail.empty()) {
        content_.ws.clear();  // whitespace before a call is dropped, and the call's marker with it
        break;
      }
      for (char c : tail) put(content_, c);
      emit(Delta::Kind::kContent, content_.ws);
      content_.ws.clear();
      break;
    }
    default:
      break;
  }
  finished_ = true;
}

// ---- output
// ----------------------------------------------------------------------------------------------

void Machine::emit(Delta::Kind kind, std::string_view text, int index) {
  if (text.empty()) return;
  if (!out_.empty() && out_.back().kind == kind && out_.back().index == index) {
    out_.back().text.append(text);
  } else {
    Delta d;
    d.kind = kind;
    d.text = std::string(text);
    d.index = index;
    out_.push_back(std::move(d));
  }
  switch (kind) {
    case Delta::Kind::kContent:
      msg_.content.append(text);
      break;
    case Delta::Kind::kReasoning:
      msg_.reasoning.append(text);
      break;
    case Delta::Kind::kToolCallArgs:
      msg_.tool_calls.back().arguments.append(text);  // only the open call streams arguments
      break;
    case Delta::Kind::kToolCallStart:
      break;
  }
}

void Machine::put(Sink& s, char c) {
  if (is_ws(c)) {
    if (s.at_start) return;
    if (!s.hold_ws) {
      emit(s.kind, std::string_view(&c, 1));
      return;
    }
    s.ws.push_back(c);
    if (s.ws.size() > kMaxWsRun) {
      emit(s.kind, s.ws);
      s.ws.clear();
    }
    return;
  }
  s.at_start = false;
  if (!s.ws.empty()) {
    emit(s.kind, s.ws);
    s.ws.clear();
  }
  emit(s.kind, std::string_view(&c, 1));
}

// Re-runs bytes that were held and turned out to belong to another mode. They are the raw bytes
// just before the current one (which follows when with_current), so positions stay exact.
void Machine::replay(const std::string& bytes, bool with_current, char current) {
  const std::size_t end = pos_;
  std::size_t p = end - (with_current ? 1 : 0) - bytes.size();
  for (char b : bytes) {
    pos_ = ++p;
    process(b);
  }
  pos_ = end;
  if (with_current) process(current);
}

// ---- modes
// ----------------------------------------------------------------------------------------------

void Machine::enter_content(bool at_start) {
  content_ = Sink(Delta::Kind::kContent);
  content_.at_start = at_start;
  detect_ = !trigger_.empty();
  content_.hold_ws = detect_;
  trigger_.reset();
  if (tools_ == ToolSyntax::kLlama3 || tools_ == ToolSyntax::kGeneric) {
    mode_ = Mode::kStartCheck;
    start_buf_.clear();
    after_call_ = false;
    tag_k_ = 0;
    tag_seen_ = false;
  } else {
    mode_ = Mode::kContent;
  }
}

void Machine::plain_content() {  // no more call detection (Llama 3 / generic text)
  mode_ = Mode::kContent;
  detect_ = false;
  content_.hold_ws = false;
}

void Machine::leave_reason_prefix() {
  if (opt_.starts_in_reasoning) {
    mode_ = Mode::kReasoning;
    reasoning_ = Sink(Delta::Kind::kReasoning);
    reasoning_.at_start = true;
  } else {
    enter_content(false);
  }
}

void Machine::process(char c) {
  switch (mode_) {
    case Mode::kReasonPrefix:
      return reason_prefix(c);
    case Mode::kReasoning:
      return reasoning(c);
    case Mode::kContent:
      return content(c);
    case Mode::kStartCheck:
      return start_check(c);
    case Mode::kBlock:
      return block(c);
  }
}

void Machine::reason_prefix(char c) {
  const std::size_t ws = pre_buf_.find_first_not_of(" \t\r\n");
  const std::size_t matched = ws == std::string::npos ? 0 : pre_buf_.size() - ws;
  if (matched == 0 && is_ws(c) && pre_buf_.size() < kMaxWsRun) {
    pre_buf_.push_back(c);
    return;
  }
  if (matched < think_open_.size() && think_open_[matched] == c) {
    pre_buf_.push_back(c);
    if (matched + 1 == think_open_.size()) {
      pre_buf_.clear();
      mode_ = Mode::kReasoning;
      reasoning_ = Sink(Delta::Kind::kReasoning);
      reasoning_.at_start = true;
    }
    return;
  }
  std::string pre = std::move(pre_buf_);
  pre_buf_.clear();
  leave_reason_prefix();
  replay(pre, true, c);
}

void Machine::reasoning(char c) {
  std::string text;
  const bool closed = think_close_.step(c, text);
  for (char t : text) put(reasoning_, t);
  if (closed) {
    reasoning_.ws.clear();
    enter_content(true);
  }
}

void Machine::content(char c) {
  if (!detect_) {
    put(content_, c);
    return;
  }
  std::string text;
  const bool found = trigger_.step(c, text);
  for (char t : text) put(content_, t);
  if (found) {
    std::string held = std::move(content_.ws);
    content_.ws.clear();
    held += tool_trigger(tools_);
    begin_block(std::move(held));
    bs_ = BS::kOpenWs;
    if (tools_ == ToolSyntax::kQwenXml) {
      bs_ = BS::kXml;
      xml_.state = XS::kOpenWs;
      have_name_ = false;
      committed_ = false;
    }
  }
}

// Llama 3 and generic: a call (envelope) only when the reply, or what follows a Llama 3 call,
// begins with '{' (after whitespace, ';' between Llama 3 calls, and <|python_tag|>).
void Machine::start_check(char c) {
  const bool llama = tools_ == ToolSyntax::kLlama3;
  if (tag_k_ > 0) {
    if (c == kPythonTag[tag_k_]) {
      start_buf_.push_back(c);
      if (++tag_k_ == kPythonTag.size()) {
        tag_k_ = 0;
        tag_seen_ = true;
      }
      return;
    }
  } else if ((is_ws(c) || (after_call_ && c == ';')) && start_buf_.size() < kMaxStartBytes) {
    start_buf_.push_back(c);
    return;
  } else if (llama && c == '<' && !tag_seen_) {
    start_buf_.push_back(c);
    tag_k_ = 1;
    return;
  } else if (c == '{') {
    std::string held = std::move(start_buf_) + "{";
    start_buf_.clear();
    begin_block(std::move(held));
    if (llama) {
      start_call(Ctx::kSingle);
    } else {
      bs_ = BS::kEnvKeyStart;
    }
    return;
  }
  std::string start = std::move(start_buf_);
  start_buf_.clear();
  tag_k_ = 0;
  plain_content();
  replay(start, true, c);
}

// ---- blocks: lifecycle, announced calls and their streamed arguments
// ----------------------------------------------------------------------------------------------

void Machine::begin_block(std::string held) {
  Block b;
  b.raw_start = pos_ - held.size();
  b.content_len = msg_.content.size();
  b.first_call = msg_.tool_calls.size();
  blocks_.push_back(b);
  held_ = std::move(held);
  mode_ = Mode::kBlock;
}

void Machine::end_block() {
  blocks_.back().ok = true;
  held_.clear();
  switch (tools_) {
    case ToolSyntax::kLlama3:
      mode_ = Mode::kStartCheck;
      start_buf_.clear();
      after_call_ = true;
      tag_k_ = 0;
      tag_seen_ = false;
      content_.at_start = true;
      break;
    case ToolSyntax::kGeneric:
      plain_content();
      content_.at_start = true;
      break;
    default:
      mode_ = Mode::kContent;
      trigger_.reset();
      content_.at_start = true;
      break;
  }
}

// The block is not what it seemed: what it held is content, verbatim. A call it announced is not
// a call (its fragments were streamed; the final message drops it).
void Machine::fail_block(bool current_in_held) {
  drop_open_call();
  if (current_in_held && !held_.empty()) held_.pop_back();
  emit(Delta::Kind::kContent, held_);
  if (!held_.empty()) content_.at_start = false;
  held_.clear();
  if (!tool_trigger(tools_).empty()) {  // Hermes, Mistral, Qwen XML, Granite, Phi-4
    mode_ = Mode::kContent;
    trigger_.reset();
  } else {
    plain_content();
  }
}

void Machine::drop_open_call() {
  if (!call_open_) return;
  msg_.tool_calls.pop_back();
  blocks_.back().dropped = true;
  call_open_ = false;
}

void Machine::start_call(Ctx ctx) {
  ctx_ = ctx;
  bs_ = BS::kObjKeyOrEnd;
  name_.clear();
  have_name_ = false;
  args_seen_ = false;
  committed_ = false;
  name_args_ = false;
  callid_len_ = 0;
  marker_.clear();
  args_buf_.clear();
}

void Machine::commit() {
  committed_ = true;
  call_open_ = true;
  blocks_.back().committed = true;
  index_ = announced_++;
  ToolCall call;
  call.id = make_call_id(fmt_.tools, rng_);
  call.name = name_;
  Delta d;
  d.kind = Delta::Kind::kToolCallStart;
  d.index = index_;
  d.id = call.id;
  d.name = call.name;
  out_.push_back(std::move(d));
  msg_.tool_calls.push_back(std::move(call));
  held_.clear();
  std::string buffered = std::move(args_buf_);
  args_buf_.clear();
  emit(Delta::Kind::kToolCallArgs, buffered, index_);
}

void Machine::put_args(std::string_view text) {
  if (committed_) {
    emit(Delta::Kind::kToolCallArgs, text, index_);
  } else {
    args_buf_.append(text);
  }
}

// The current call object is complete. False when it is not a call.
bool Machine::finish_call() {
  if (!have_name_) return false;
  if (!committed_) {
    if (!args_seen_) {
      if (tools_ == ToolSyntax::kLlama3)
        return false;  // bare JSON: without arguments it is not a call
      args_buf_ = "{}";
    }
    commit();
  }
  // Arguments that are not JSON (the reader above follows only strings and nesting) make no call.
  if (call_open_ && !is_json_text(msg_.tool_calls.back().arguments, kMaxJsonDepth + 1)) drop_open_call();
  call_open_ = false;
  held_.clear();
  return true;
}

bool Machine::in_streamed_args() const {
  const bool xml_value = bs_ == BS::kXml && xml_.streaming &&
                         (xml_.state == XS::kValueStart || xml_.state == XS::kValue);
  return committed_ && (bs_ == BS::kArgsObj || bs_ == BS::kArgsStr || xml_value);
}

void Machine::block(char c) {
  const bool held = !in_streamed_args();
  if (held) held_.push_back(c);
  if (!block_step(c) || held_.size() > kMaxHeldBytes) {
    fail_block(held);
    process(c);
  }
}

void Machine::start_args_object() {
  if (have_name_) commit();
  depth_ = 1;
  in_str_ = false;
  esc_ = false;
  bs_ = BS::kArgsObj;
  put_args("{");
}

}  // namespace anelm::chat::detail
