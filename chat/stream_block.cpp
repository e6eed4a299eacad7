// The call-block reader of the output parser's state machine (stream_machine.h): block_step()
// takes one byte inside a tool block. It is a small JSON pushdown reader of call objects (single,
// in an array, or in the generic {"tool_calls": [...]} / {"tool_call": {...}} / {"response": "..."}
// envelope), with Mistral's name[CALL_ID]id[ARGS]{...} form and the closing marker of Hermes and
// Phi-4 (Granite's <|tool_call|>[...] has none: the array ends the block). It
// finds the name, streams the arguments (raw object text, or a decoded JSON string) and skips
// other members; false means malformed markup, which the machine turns back into content.
#include "chat/stream_machine.h"
#include "chat/stream_markers.h"

namespace anelm::chat::detail {
namespace {

bool is_name_char(char c) { return is_alnum(c) || c == '_' || c == '-' || c == '.' || c == ':'; }
bool is_primitive_char(char c) { return is_alnum(c) || c == '-' || c == '+' || c == '.'; }
bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

// One byte of a block; false on malformed markup.
bool Machine::block_step(char c) {
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
      const std::string_view close = tool_close(tools_);  // non-empty for the syntaxes that get here
      if (trailer_k_ < close.size() && c == close[trailer_k_]) {
        trailer_buf_.push_back(c);
        if (++trailer_k_ == close.size()) end_block();
        return true;
      }
      // No closing marker: tolerated, the call stands and what follows is content.
      std::string tail = std::move(trailer_buf_);
      trailer_buf_.clear();
      end_block();
      replay(tail, true, c);
      return true;
    }

    case BS::kXml:
      return xml_step(c);
  }
  return false;
}

bool Machine::call_value(char c) {
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

bool Machine::envelope_value(char c) {
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

bool Machine::args_end() {
  if (name_args_) {  // [TOOL_CALLS]name[ARGS]{...}: the call ends with its arguments
    if (!finish_call()) return false;
    end_block();
    return true;
  }
  bs_ = BS::kObjAfterValue;
  return true;
}

bool Machine::object_end() {
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
  if (tools_ == ToolSyntax::kHermes || tools_ == ToolSyntax::kPhi4) {  // a closing marker follows
    trailer_k_ = 0;
    trailer_buf_.clear();
    bs_ = BS::kTrailer;
  } else {
    end_block();  // Llama 3; a Mistral JSON object without array
  }
  return true;
}

bool Machine::array_end() {
  held_.clear();
  switch (tools_) {
    case ToolSyntax::kHermes:
    case ToolSyntax::kPhi4:
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

}  // namespace anelm::chat::detail
