// The output parser: one byte-at-a-time state machine shared by StreamParser and parse_message, so
// that both take every decision on the same bytes, whatever the chunking (see chat_format.h,
// "Decisions").
//
// Modes: an optional reasoning prefix check, reasoning, content (with a trigger marker for Hermes
// and Mistral), a start check (Llama 3 and generic replies, which are calls only when they begin
// with '{'), and a tool block (a small JSON pushdown reader of call objects). Within a block, every
// byte that is not streamed as arguments is kept in held_ until a clean point (a call announced, a
// call or the block complete): on failure held_ is returned as content.
#include <atomic>
#include <chrono>
#include <random>

#include "chat/chat_format.h"
#include "chat/json_text.h"

namespace anelm::chat {
namespace detail {
namespace {

// Whitespace held before a possible marker, and whitespace / ';' before a possible Llama 3 call.
constexpr std::size_t kMaxWsRun = 1024;
constexpr std::size_t kMaxStartBytes = 1024;
constexpr std::size_t kMaxNameBytes = 256;   // a function name or an object key
constexpr std::size_t kMaxCallIdBytes = 64;  // Mistral's [CALL_ID]
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kArgsMarker = "[ARGS]";
constexpr std::string_view kCallIdMarker = "[CALL_ID]";

bool is_name_char(char c) { return is_alnum(c) || c == '_' || c == '-' || c == '.' || c == ':'; }
bool is_primitive_char(char c) { return is_alnum(c) || c == '-' || c == '+' || c == '.'; }
bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

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

class Machine {
 public:
  struct Block {
    // Offset of the block's first byte (whitespace before its marker included).
    std::size_t raw_start = 0;
    std::size_t content_len = 0;  // message content length when the block began
    std::size_t first_call = 0;   // index of its first call
    bool committed = false;       // a call of this block was announced
    bool ok = false;              // the block completed
  };

  Machine(ChatFormat format, ParseOptions options) : fmt_(format), opt_(options) {
    rng_ = opt_.id_seed != 0 ? opt_.id_seed : random_seed();
    const bool reasoning = opt_.parse_reasoning && fmt_.reasoning != ReasoningSyntax::kNone;
    if (fmt_.reasoning == ReasoningSyntax::kThinkBrackets) {
      think_open_ = "[THINK]";
      think_close_ = MarkerMatcher("[/THINK]");
    } else {
      think_open_ = "<think>";
      think_close_ = MarkerMatcher("</think>");
    }
    tools_ = opt_.parse_tools ? fmt_.tools : ToolSyntax::kNone;
    if (tools_ == ToolSyntax::kHermes) trigger_ = MarkerMatcher("<tool_call>");
    if (tools_ == ToolSyntax::kMistral) trigger_ = MarkerMatcher("[TOOL_CALLS]");
    if (reasoning) {
      mode_ = Mode::kReasonPrefix;
    } else {
      enter_content(false);
    }
  }

  void feed(std::string_view piece) {
    if (finished_) return;
    for (char c : piece) {
      ++pos_;
      process(c);
    }
  }

  void finish() {
    if (finished_) return;
    if (mode_ == Mode::kReasonPrefix) {
      std::string pre = std::move(pre_buf_);
      leave_reason_prefix();
      replay(pre, false, 0);
    }
    if (mode_ == Mode::kStartCheck) {
      std::string start = std::move(start_buf_);
      start_buf_.clear();
      tag_k_ = 0;
      plain_content();
      replay(start, false, 0);
    }
    if (mode_ == Mode::kBlock) {
      if (bs_ == BS::kTrailer || bs_ == BS::kEnvEnd) {
        end_block();  // calls complete; a truncated closing marker is dropped
      } else {
        fail_block(false);
      }
    }
    switch (mode_) {
      case Mode::kReasoning: {
        std::string tail(think_close_.pending());
        think_close_.reset();
        for (char c : tail) put(reasoning_, c);
        reasoning_.ws.clear();
        break;
      }
      case Mode::kContent: {
        std::string tail(trigger_.pending());
        trigger_.reset();
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

  std::vector<Delta> take_deltas() { return std::exchange(out_, {}); }
  const ParsedMessage& message() const { return msg_; }
  const std::vector<Block>& blocks() const { return blocks_; }

 private:
  enum class Mode { kReasonPrefix, kReasoning, kContent, kStartCheck, kBlock };
  enum class BS {  // block states
    kOpenWs,       // after a trigger marker
    kArrayNext,    // after '[' or ',' of a call array
    kArrayAfter,   // after a call object of a call array
    kObjKeyOrEnd,  // after '{' or ',' of a call object
    kObjKey,       // inside a key string
    kObjColon,
    kObjValue,
    kObjAfterValue,
    kNameStr,      // inside the "name" string
    kArgsObj,      // inside the arguments object (raw)
    kArgsStr,      // inside an arguments string (decoded)
    kSkipValue,    // inside a value of another key
    kMName,        // Mistral: [TOOL_CALLS]name
    kMMarker,      // Mistral: [ARGS] or [CALL_ID]
    kMCallId,      // Mistral: the id after [CALL_ID]
    kMArgsWs,      // Mistral: after [ARGS]
    kEnvKeyStart,  // generic envelope: after '{'
    kRespStr,      // generic envelope: inside "response"
    kEnvEnd,       // generic envelope: before its '}'
    kTrailer,      // Hermes: before </tool_call>
  };
  enum class Ctx { kSingle, kArray, kEnvSingle };  // where the current call object sits

  // Whitespace-aware text output: drops whitespace while at_start, holds a whitespace run (when
  // hold_ws) until a non-space byte shows it is not trailing.
  struct Sink {
    explicit Sink(Delta::Kind k) : kind(k) {}
    Delta::Kind kind;
    bool at_start = false;
    bool hold_ws = true;
    std::string ws;
  };

  // ---- output
  // ---------------------------------------------------------------------------------------
  void emit(Delta::Kind kind, std::string_view text, int index = 0) {
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
        msg_.tool_calls[static_cast<std::size_t>(index)].arguments.append(text);
        break;
      case Delta::Kind::kToolCallStart:
        break;
    }
  }

  void put(Sink& s, char c) {
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
  void replay(const std::string& bytes, bool with_current, char current) {
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
  // ----------------------------------------------------------------------------------------
  void enter_content(bool at_start) {
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

  void plain_content() {  // no more call detection (Llama 3 / generic text)
    mode_ = Mode::kContent;
    detect_ = false;
    content_.hold_ws = false;
  }

  void leave_reason_prefix() {
    if (opt_.starts_in_reasoning) {
      mode_ = Mode::kReasoning;
      reasoning_ = Sink(Delta::Kind::kReasoning);
      reasoning_.at_start = true;
    } else {
      enter_content(false);
    }
  }

  void process(char c) {
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

  void reason_prefix(char c) {
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

  void reasoning(char c) {
    std::string text;
    const bool closed = think_close_.step(c, text);
    for (char t : text) put(reasoning_, t);
    if (closed) {
      reasoning_.ws.clear();
      enter_content(true);
    }
  }

  void content(char c) {
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
      if (tools_ == ToolSyntax::kHermes) {
        held += "<tool_call>";
      } else {
        held += "[TOOL_CALLS]";
      }
      begin_block(std::move(held));
      bs_ = BS::kOpenWs;
    }
  }

  // Llama 3 and generic: a call (envelope) only when the reply, or what follows a Llama 3 call,
  // begins with '{' (after whitespace, ';' between Llama 3 calls, and <|python_tag|>).
  void start_check(char c) {
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

  // ---- blocks
  // ---------------------------------------------------------------------------------------
  void begin_block(std::string held) {
    Block b;
    b.raw_start = pos_ - held.size();
    b.content_len = msg_.content.size();
    b.first_call = msg_.tool_calls.size();
    blocks_.push_back(b);
    held_ = std::move(held);
    mode_ = Mode::kBlock;
  }

  void end_block() {
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

  // The block is not what it seemed: what it held is content, verbatim.
  void fail_block(bool current_in_held) {
    if (current_in_held && !held_.empty()) held_.pop_back();
    emit(Delta::Kind::kContent, held_);
    if (!held_.empty()) content_.at_start = false;
    held_.clear();
    if (tools_ == ToolSyntax::kHermes || tools_ == ToolSyntax::kMistral) {
      mode_ = Mode::kContent;
      trigger_.reset();
    } else {
      plain_content();
    }
  }

  void start_call(Ctx ctx) {
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

  void commit() {
    committed_ = true;
    blocks_.back().committed = true;
    index_ = static_cast<int>(msg_.tool_calls.size());
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

  void put_args(std::string_view text) {
    if (committed_) {
      emit(Delta::Kind::kToolCallArgs, text, index_);
    } else {
      args_buf_.append(text);
    }
  }

  // The current call object is complete. False when it is not a call.
  bool finish_call() {
    if (!have_name_) return false;
    if (!committed_) {
      if (!args_seen_) {
        if (tools_ == ToolSyntax::kLlama3)
          return false;  // bare JSON: without arguments it is not a call
        args_buf_ = "{}";
      }
      commit();
    }
    held_.clear();
    return true;
  }

  bool in_streamed_args() const {
    return committed_ && (bs_ == BS::kArgsObj || bs_ == BS::kArgsStr);
  }

  void block(char c) {
    const bool held = !in_streamed_args();
    if (held) held_.push_back(c);
    if (!block_step(c) || held_.size() > kMaxHeldBytes) {
      fail_block(held);
      process(c);
    }
  }

  void start_args_object() {
    if (have_name_) commit();
    depth_ = 1;
    in_str_ = false;
    esc_ = false;
    bs_ = BS::kArgsObj;
    put_args("{");
  }

  // One byte of a block; false on malformed markup.
  bool block_step(char c) {
    switch (bs_) {
      case BS::kOpenWs:
        if (is_ws(c)) return true;
        if (c == '{') {
          start_call(Ctx::kSingle);
          return true;
        }
        if (c == '[') {
          bs_ = BS::kArrayNext;
          return true;
        }
        if (tools_ == ToolSyntax::kMistral && is_name_char(c)) {
          start_call(Ctx::kSingle);
          name_.push_back(c);
          bs_ = BS::kMName;
          return true;
        }
        return false;

      case BS::kArrayNext:
        if (is_ws(c)) return true;
        if (c == '{') {
          start_call(Ctx::kArray);
          return true;
        }
        if (c == ']') return array_end();
        return false;

      case BS::kArrayAfter:
        if (is_ws(c)) return true;
        if (c == ',') {
          bs_ = BS::kArrayNext;
          return true;
        }
        if (c == ']') return array_end();
        return false;

      case BS::kObjKeyOrEnd:
        if (is_ws(c)) return true;
        if (c == '"') {
          key_.clear();
          dec_.reset();
          bs_ = BS::kObjKey;
          return true;
        }
        if (c == '}') return object_end();
        return false;

      case BS::kObjKey: {
        const auto r = dec_.feed(c, key_);
        if (r == StringDecoder::Result::kError || key_.size() > kMaxNameBytes) return false;
        if (r == StringDecoder::Result::kEnd) bs_ = BS::kObjColon;
        return true;
      }

      case BS::kObjColon:
        if (is_ws(c)) return true;
        if (c != ':') return false;
        bs_ = BS::kObjValue;
        return true;

      case BS::kObjValue:
        if (is_ws(c)) return true;
        return in_envelope_ ? envelope_value(c) : call_value(c);

      case BS::kObjAfterValue:
        if (is_ws(c)) return true;
        if (c == ',') {
          bs_ = BS::kObjKeyOrEnd;
          return true;
        }
        if (c == '}') return object_end();
        return false;

      case BS::kNameStr: {
        const auto r = dec_.feed(c, name_);
        if (r == StringDecoder::Result::kError || name_.size() > kMaxNameBytes) return false;
        if (r == StringDecoder::Result::kEnd) {
          if (name_.empty()) return false;
          have_name_ = true;
          bs_ = BS::kObjAfterValue;
        }
        return true;
      }

      case BS::kArgsObj:
        put_args(std::string_view(&c, 1));
        if (in_str_) {
          if (esc_) {
            esc_ = false;
          } else if (c == '\\') {
            esc_ = true;
          } else if (c == '"') {
            in_str_ = false;
          }
          return true;
        }
        if (c == '"') {
          in_str_ = true;
        } else if (c == '{' || c == '[') {
          if (++depth_ > kMaxJsonDepth) return false;
        } else if (c == '}' || c == ']') {
          if (--depth_ == 0) return args_end();
        }
        return true;

      case BS::kArgsStr: {
        std::string decoded;
        const auto r = dec_.feed(c, decoded);
        if (r == StringDecoder::Result::kError) return false;
        for (char d : decoded) {
          if (!args_nonws_) {
            if (is_ws(d)) continue;
            if (d != '{') return false;  // not a JSON object in a string
            args_nonws_ = true;
            if (have_name_ && !committed_) commit();
          }
          if (is_ws(d)) {
            args_ws_.push_back(d);
            if (args_ws_.size() > kMaxWsRun) {
              put_args(args_ws_);
              args_ws_.clear();
            }
          } else {
            if (!args_ws_.empty()) {
              put_args(args_ws_);
              args_ws_.clear();
            }
            put_args(std::string_view(&d, 1));
          }
        }
        if (r == StringDecoder::Result::kEnd) {
          args_ws_.clear();
          if (!args_nonws_) {
            if (have_name_ && !committed_) commit();
            put_args("{}");
          }
          return args_end();
        }
        return true;
      }

      case BS::kSkipValue:
        if (skip_prim_) {
          if (is_primitive_char(c)) return true;
          bs_ = BS::kObjAfterValue;
          return block_step(c);
        }
        if (in_str_) {
          if (esc_) {
            esc_ = false;
          } else if (c == '\\') {
            esc_ = true;
          } else if (c == '"') {
            in_str_ = false;
            if (depth_ == 0) bs_ = BS::kObjAfterValue;
          }
          return true;
        }
        if (c == '"') {
          in_str_ = true;
        } else if (c == '{' || c == '[') {
          if (++depth_ > kMaxJsonDepth) return false;
        } else if (c == '}' || c == ']') {
          if (--depth_ == 0) bs_ = BS::kObjAfterValue;
        }
        return true;

      case BS::kMName:
        if (is_name_char(c)) {
          name_.push_back(c);
          return name_.size() <= kMaxNameBytes;
        }
        if (c != '[') return false;
        marker_.assign(1, c);
        bs_ = BS::kMMarker;
        return true;

      case BS::kMMarker:
        marker_.push_back(c);
        if (marker_ == kArgsMarker) {
          have_name_ = true;
          bs_ = BS::kMArgsWs;
          return true;
        }
        if (marker_ == kCallIdMarker) {
          marker_.clear();
          bs_ = BS::kMCallId;
          return true;
        }
        return starts_with(kArgsMarker, marker_) || starts_with(kCallIdMarker, marker_);

      case BS::kMCallId:
        if (is_alnum(c)) return ++callid_len_ <= kMaxCallIdBytes;
        if (c != '[') return false;
        callid_len_ = 0;
        marker_.assign(1, c);
        bs_ = BS::kMMarker;
        return true;

      case BS::kMArgsWs:
        if (is_ws(c)) return true;
        if (c != '{') return false;
        args_seen_ = true;
        name_args_ = true;
        start_args_object();
        return true;

      case BS::kEnvKeyStart:
        if (is_ws(c)) return true;
        if (c != '"') return false;
        in_envelope_ = true;
        key_.clear();
        dec_.reset();
        bs_ = BS::kObjKey;
        return true;

      case BS::kRespStr: {
        std::string decoded;
        const auto r = dec_.feed(c, decoded);
        if (r == StringDecoder::Result::kError) return false;
        emit(Delta::Kind::kContent, decoded);
        if (!decoded.empty()) content_.at_start = false;
        if (!dec_.mid_escape()) held_.clear();
        if (r == StringDecoder::Result::kEnd) bs_ = BS::kEnvEnd;
        return true;
      }

      case BS::kEnvEnd:
        if (is_ws(c)) return true;
        if (c != '}') return false;
        end_block();
        return true;

      case BS::kTrailer: {
        if (trailer_k_ == 0 && is_ws(c) && trailer_buf_.size() < kMaxWsRun) {
          trailer_buf_.push_back(c);
          return true;
        }
        if (c == kHermesClose[trailer_k_]) {
          trailer_buf_.push_back(c);
          if (++trailer_k_ == kHermesClose.size()) end_block();
          return true;
        }
        // No closing marker: tolerated, the call stands and what follows is content.
        std::string tail = std::move(trailer_buf_);
        trailer_buf_.clear();
        end_block();
        replay(tail, true, c);
        return true;
      }
    }
    return false;
  }

  bool call_value(char c) {
    if (key_ == "name" && !have_name_) {
      if (c != '"') return false;
      name_.clear();
      dec_.reset();
      bs_ = BS::kNameStr;
      return true;
    }
    if ((key_ == "arguments" || key_ == "parameters") && !args_seen_) {
      args_seen_ = true;
      if (c == '{') {
        start_args_object();
        return true;
      }
      if (c == '"') {
        dec_.reset();
        args_nonws_ = false;
        args_ws_.clear();
        bs_ = BS::kArgsStr;
        return true;
      }
      return false;
    }
    // Any other member: skipped.
    bs_ = BS::kSkipValue;
    depth_ = 0;
    in_str_ = false;
    esc_ = false;
    skip_prim_ = false;
    if (c == '{' || c == '[') {
      depth_ = 1;
    } else if (c == '"') {
      in_str_ = true;
    } else if (is_primitive_char(c)) {
      skip_prim_ = true;
    } else {
      return false;
    }
    return true;
  }

  bool envelope_value(char c) {
    in_envelope_ = false;
    if (key_ == "tool_calls" && c == '[') {
      bs_ = BS::kArrayNext;
      return true;
    }
    if (key_ == "tool_call" && c == '{') {
      start_call(Ctx::kEnvSingle);
      return true;
    }
    if (key_ == "response" && c == '"') {
      dec_.reset();
      held_.clear();
      bs_ = BS::kRespStr;
      return true;
    }
    return false;
  }

  bool args_end() {
    if (name_args_) {  // [TOOL_CALLS]name[ARGS]{...}: the call ends with its arguments
      if (!finish_call()) return false;
      end_block();
      return true;
    }
    bs_ = BS::kObjAfterValue;
    return true;
  }

  bool object_end() {
    if (!finish_call()) return false;
    switch (ctx_) {
      case Ctx::kArray:
        bs_ = BS::kArrayAfter;
        return true;
      case Ctx::kEnvSingle:
        bs_ = BS::kEnvEnd;
        return true;
      case Ctx::kSingle:
        break;
    }
    if (tools_ == ToolSyntax::kHermes) {
      trailer_k_ = 0;
      trailer_buf_.clear();
      bs_ = BS::kTrailer;
    } else {
      end_block();  // Llama 3; a Mistral JSON object without array
    }
    return true;
  }

  bool array_end() {
    held_.clear();
    switch (tools_) {
      case ToolSyntax::kHermes:
        trailer_k_ = 0;
        trailer_buf_.clear();
        bs_ = BS::kTrailer;
        return true;
      case ToolSyntax::kGeneric:
        bs_ = BS::kEnvEnd;
        return true;
      default:
        end_block();
        return true;
    }
  }

  ChatFormat fmt_;
  ParseOptions opt_;
  ToolSyntax tools_ = ToolSyntax::kNone;
  std::uint64_t rng_ = 0;
  std::size_t pos_ = 0;  // raw bytes consumed, the current one included
  bool finished_ = false;
  Mode mode_ = Mode::kContent;
  ParsedMessage msg_;
  std::vector<Delta> out_;
  std::vector<Block> blocks_;

  // reasoning
  std::string think_open_;
  MarkerMatcher think_close_;
  std::string pre_buf_;
  Sink reasoning_{Delta::Kind::kReasoning};
  // content
  Sink content_{Delta::Kind::kContent};
  MarkerMatcher trigger_;
  bool detect_ = false;
  // start check
  std::string start_buf_;
  bool after_call_ = false;
  std::size_t tag_k_ = 0;
  bool tag_seen_ = false;
  // block
  BS bs_ = BS::kOpenWs;
  Ctx ctx_ = Ctx::kSingle;
  std::string held_;
  std::string key_;
  bool in_envelope_ = false;
  StringDecoder dec_;
  std::string name_;
  bool have_name_ = false;
  bool args_seen_ = false;
  bool committed_ = false;
  int index_ = 0;
  std::string args_buf_;
  bool args_nonws_ = false;
  std::string args_ws_;
  int depth_ = 0;
  bool in_str_ = false;
  bool esc_ = false;
  bool skip_prim_ = false;
  std::string marker_;
  bool name_args_ = false;
  std::size_t callid_len_ = 0;
  std::size_t trailer_k_ = 0;
  std::string trailer_buf_;
};

}  // namespace detail

StreamParser::StreamParser(ChatFormat format, ParseOptions options)
    : machine_(std::make_unique<detail::Machine>(format, options)) {}
StreamParser::~StreamParser() = default;
StreamParser::StreamParser(StreamParser&&) noexcept = default;
StreamParser& StreamParser::operator=(StreamParser&&) noexcept = default;

std::vector<Delta> StreamParser::feed(std::string_view piece) {
  machine_->feed(piece);
  return machine_->take_deltas();
}

std::vector<Delta> StreamParser::finish() {
  machine_->finish();
  return machine_->take_deltas();
}

const ParsedMessage& StreamParser::message() const { return machine_->message(); }

ParsedMessage parse_message(std::string_view text, const ChatFormat& format,
                            const ParseOptions& options) {
  detail::Machine m(format, options);
  m.feed(text);
  m.finish();
  ParsedMessage msg = m.message();
  // Strict where streaming cannot be: the first block with an announced call that did not complete,
  // or with arguments that are not a JSON object, is content from its first byte to the end.
  const auto& blocks = m.blocks();
  for (std::size_t bi = 0; bi < blocks.size(); ++bi) {
    const auto& b = blocks[bi];
    if (!b.committed) continue;
    bool bad = !b.ok;
    const std::size_t end_call =
        bi + 1 < blocks.size() ? blocks[bi + 1].first_call : msg.tool_calls.size();
    for (std::size_t i = b.first_call; !bad && i < end_call; ++i) {
      const auto& args = msg.tool_calls[i].arguments;
      const auto first = args.find_first_not_of(" \t\r\n");
      bad = first == std::string::npos || args[first] != '{' || !nlohmann::json::accept(args);
    }
    if (bad) {
      msg.content.resize(b.content_len);
      msg.content.append(text.substr(std::min(b.raw_start, text.size())));
      msg.tool_calls.resize(b.first_call);
      break;
    }
  }
  return msg;
}

}  // namespace anelm::chat
