// The output parser's state machine, shared by StreamParser and parse_message (stream_parser.cpp)
// so that both take every decision on the same bytes, whatever the chunking (see chat_format.h,
// "Decisions"). Internal: the public API is chat_format.h.
//
// Modes: an optional reasoning prefix check, reasoning, content (with a trigger marker for Hermes
// and Mistral), a start check (Llama 3 and generic replies, which are calls only when they begin
// with '{'), and a tool block (a small JSON pushdown reader of call objects). Within a block, every
// byte that is not streamed as arguments is kept in held_ until a clean point (a call announced, a
// call or the block complete): on failure held_ is returned as content.
//
// The class is defined in three files: stream_machine.cpp (modes, output, block lifecycle and
// announced calls), stream_block.cpp (block_step and its helpers: the JSON reader of call
// objects, Mistral's name[ARGS] form and the generic envelope) and stream_xml.cpp (the Qwen XML
// reader, behind the one block state BS::kXml). Markers: stream_markers.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/chat_format.h"
#include "chat/json_text.h"

namespace anelm::chat::detail {

// Whitespace held before a possible marker, and whitespace / ';' before a possible Llama 3 call.
inline constexpr std::size_t kMaxWsRun = 1024;
inline constexpr std::size_t kMaxStartBytes = 1024;
inline constexpr std::size_t kMaxNameBytes = 256;   // a function name or an object key
inline constexpr std::size_t kMaxCallIdBytes = 64;  // Mistral's [CALL_ID]

class Machine {
 public:
  struct Block {
    // Offset of the block's first byte (whitespace before its marker included).
    std::size_t raw_start = 0;
    std::size_t content_len = 0;  // message content length when the block began
    std::size_t first_call = 0;   // index of its first call
    bool committed = false;       // a call of this block was announced
    bool ok = false;              // the block completed
    bool dropped = false;         // a call it announced was dropped (unfinished or not JSON)
  };

  Machine(ChatFormat format, ParseOptions options);

  void feed(std::string_view piece);
  // `cut`: the output was cut short (token limit, stop string), so a partial marker at its end is
  // the likely start of markup and is dropped, as is an unfinished call block; otherwise both are
  // content. Either way a call that was announced but did not complete leaves message().
  void finish(bool cut = false);
  // Inside a tool call's markup: from the last byte of its opening marker (Llama 3 / generic: the
  // reply's '{') to the end of the call block.
  bool in_tool_call() const { return mode_ == Mode::kBlock; }

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
    kTrailer,      // Hermes, Qwen XML: before </tool_call>
    kXml,          // Qwen XML: inside <tool_call>, sub-state xml_.state
  };
  enum class XS {  // Qwen XML states
    kOpenWs,      // after <tool_call>
    kOpenTag,     // inside <function=
    kFuncName,    // the name, up to '>'
    kBodyWs,      // between parameters
    kBodyTag,     // a tag in the body: <parameter=, </function> or </tool_call>
    kParamName,   // up to '>'
    kValueStart,  // after <parameter=NAME>: one newline is framing
    kValue,       // up to </parameter>
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

  // ---- output (stream_machine.cpp)
  void emit(Delta::Kind kind, std::string_view text, int index = 0);
  void put(Sink& s, char c);
  void replay(const std::string& bytes, bool with_current, char current);

  // ---- modes (stream_machine.cpp)
  void enter_content(bool at_start);
  void plain_content();
  void leave_reason_prefix();
  void process(char c);
  void reason_prefix(char c);
  void reasoning(char c);
  void content(char c);
  void start_check(char c);

  // ---- blocks: lifecycle, announced calls and their arguments (stream_machine.cpp)
  void begin_block(std::string held);
  void end_block();
  void fail_block(bool current_in_held);
  void drop_open_call();
  void start_call(Ctx ctx);
  void commit();
  void put_args(std::string_view text);
  bool finish_call();
  bool in_streamed_args() const;
  void block(char c);
  void start_args_object();

  // ---- the block reader (stream_block.cpp)
  bool block_step(char c);
  bool call_value(char c);
  bool envelope_value(char c);
  bool args_end();
  bool object_end();
  bool array_end();

  // ---- the Qwen XML reader (stream_xml.cpp)
  bool xml_step(char c);
  bool xml_tag(char c);
  void xml_begin_call();
  void xml_begin_value();
  void xml_value_bytes(std::string_view text);
  void xml_value_byte(char c);
  void xml_to_string_stream();
  void xml_end_value();
  bool xml_end_call();

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
  bool call_open_ = false;  // a call was announced and its object is not complete yet
  int index_ = 0;      // the open call's delta index
  int announced_ = 0;  // calls announced so far (delta indices; dropped calls keep theirs)
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
  // Qwen XML: the call being read
  struct XmlCall {
    XS state = XS::kOpenWs;
    std::string tag;    // the tag read so far (kOpenTag, kBodyTag)
    std::string param;  // the parameter name
    std::string value;  // a typed value until complete
    MarkerMatcher value_end;
    const nlohmann::ordered_json* properties = nullptr;  // the function's parameter schemas
    unsigned types = 0;      // the current parameter's (xml_args.h)
    bool first = true;       // no parameter written yet
    bool streaming = false;  // the current value streams as a JSON string
    bool newline = false;    // a '\n' held back: it is framing if </parameter> follows
  } xml_;
};

}  // namespace anelm::chat::detail
