// A model's chat output format: how its generated text splits into reasoning, content and tool
// calls.
//
// detect_chat_format() reads a chat template's source and names the tool-call syntax and reasoning
// markers the model was trained with. parse_message() splits a finished generation; StreamParser
// does the same incrementally and emits OpenAI-style deltas. tool_call_shape() /
// tool_call_payload_schema() describe a call's literal text and its JSON payload so that the
// server can constrain decoding.
//
// Syntaxes (what the model writes):
//  kHermes   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//            One block per call; parallel calls are several blocks (a JSON array of call objects
//            in one block is accepted too). Qwen2.5, Qwen3, QwQ, Hermes 2/3, granite-4, MiMo,
//            Bielik, Reka.
//  kLlama3   {"name": "f", "parameters": {...}}
//            The whole reply, optionally after <|python_tag|>; several calls separated by ';' are
//            accepted. Llama 3.1 / 3.2 / 3.3.
//  kMistral  Nemo:      [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "..."}, ...]
//            Small 3.2, Devstral, Ministral 3:
//                       [TOOL_CALLS]f[CALL_ID]abcdefghi[ARGS]{...}   or   [TOOL_CALLS]f[ARGS]{...}
//            Both forms are always parsed; ChatFormat::mistral_form says which one to force.
//  kQwenXml  <tool_call>\n<function=f>\n<parameter=a>\nVALUE\n</parameter>\n...</function>\n</tool_call>
//            One block per call; parallel calls are several blocks. Qwen3-Coder, Qwen3.5, Nemotron 3
//            Nano, Step 3.5. The arguments are not JSON in the output: ToolCall::arguments is a JSON
//            object synthesised from the parameters (see "Decisions").
//  kGranite  <|tool_call|>[{"name": "f", "arguments": {...}}, ...]
//            A JSON array of call objects after the <|tool_call|> special token, no closing marker
//            (the turn ends with <|end_of_text|>); a single object instead of the array is accepted,
//            and several <|tool_call|> blocks are several calls. Granite 3.x (3.0-3.3): its template
//            lists the tools in an "available_tools" turn and tells the model to "respond only with
//            <|tool_call|> followed by a JSON list of tools used".
//  kPhi4     <|tool_call|>[{"name": "f", "arguments": {...}}, ...]<|/tool_call|>
//            The same array, closed by <|/tool_call|> (a missing closing marker is tolerated; a
//            single object is accepted). Phi-4-mini / Phi-4-multimodal: their template does not read
//            `tools`; the tools go into the system message's "tools" field as a JSON string, which
//            it renders between <|tool|> and <|/tool|> (the server puts them there, see
//            ChatPrompt). Phi-3 / Phi-3.5-mini have no tool syntax: kNone (generic envelope).
//  kGeneric  The template takes `tools` but uses no syntax known here. The server forces (with a
//            grammar, see generic_envelope_schema()) the whole reply to be ONE JSON document:
//              {"tool_calls": [{"name": "f", "arguments": {...}}, ...]}
//            or
//              {"response": "text"}
//            ({"tool_call": {"name": ..., "arguments": ...}} is accepted too, as llama.cpp's
//            generic format). The decoded "response" string is the content.
//            A template that does not read `tools` at all (kNone: Gemma 2 / Gemma 3, Phi-3.5-mini,
//            the SmolLM3 template in ../shared) gets the same envelope from the server: the tools are
//            described in the system prompt (or, when the template refuses a system role, at the
//            start of the first user turn; Gemma 3's own template folds the system prompt into
//            that turn), earlier calls and results are written as the envelope's JSON. Gemma 3 has
//            no tool tokens and no trained call syntax (Google's guide prompts a format of the
//            user's choosing), so this prompted convention is its syntax here, as in llama.cpp.
//            (SmolLM3's own template, with xml_tools and <tool_call>, detects as kHermes.)
//  In every JSON call object the arguments key may be "arguments" or "parameters", keys may come
//  in any order, extra keys ("id") are ignored, and the arguments may be an object or a JSON
//  string that holds an object ("arguments": "{\"a\": 1}"). Inside explicit markup a call without
//  arguments gets "{}"; a bare Llama 3 object needs its arguments key to count as a call.
//
// Decisions (identical for parse_message and StreamParser unless noted):
//  * ToolCall::arguments is the model's own argument text, not re-serialised: the raw JSON object
//    text from its '{' to the matching '}' (or, for a JSON-string value, the decoded string with
//    outer whitespace trimmed). Streaming emits exactly that text as fragments, so the
//    concatenated kToolCallArgs fragments == the final arguments, byte for byte. It is valid JSON
//    (parse_message checks); parse it with any JSON parser to get the object.
//  * kQwenXml arguments: {"a": VALUE, ...} in the order written, separators ", " and ": ". VALUE is
//    typed by the tool's JSON Schema (ParseOptions::tools, the parameter's "type", or the types of
//    its anyOf/oneOf/enum/const): the raw text between "<parameter=a>\n" and "\n</parameter>"
//    (one newline trimmed on each side) is a JSON string when the schema allows only "string";
//    otherwise the trimmed text is used as JSON when it is a JSON value of an allowed type (any
//    type when the parameter has no schema; a boolean may be written True/False, as the templates
//    render Python values, and null None), and a JSON string when not. A string-only value streams
//    as it is written; other values stream when complete, or as a string once longer than
//    kMaxTypedValueBytes. Unknown tool or parameter names are kept (no schema: untyped). The call
//    is announced at the '>' of <function=NAME> (its first fragment is "{"); a missing
//    </function> before </tool_call> is tolerated.
//  * Reasoning (kThinkTags: <think>...</think>, kThinkBrackets: [THINK]...[/THINK]) is recognised
//    only at the start of the output (after whitespace), or from the first byte with
//    starts_in_reasoning (a repeated open marker there is skipped). A close marker never seen:
//    everything is reasoning (as llama.cpp). Reasoning is trimmed of surrounding whitespace;
//    content after the close marker starts at its first non-space. Markup inside reasoning (e.g.
//    a <tool_call>) stays reasoning text.
//  * Content is verbatim, except that whitespace right before a tool call and right after one is
//    dropped. Text around calls stays content (the pieces are concatenated).
//  * parse_tools == false (the request offered no tools): tool markup is ordinary content, as in
//    llama.cpp. parse_reasoning == false: reasoning markers are ordinary content.
//  * Malformed markup (not the call shape, bad JSON structure, depth over kMaxJsonDepth, held text
//    over kMaxHeldBytes, ...) found before a call was announced is content, verbatim: never lost,
//    never an exception. A call is announced (kToolCallStart) once its name is known and its
//    arguments value has begun; its arguments then stream. If an announced call turns out
//    truncated (end of output inside it) or invalid (arguments not a JSON object, or not JSON):
//      - parse_message returns that whole block, from its opening marker (and the whitespace
//        before it) to the end of the output, as content; calls before that block are kept;
//      - StreamParser cannot take back what it streamed (the call's start and fragments), but
//        message() drops the call: a call there always has complete JSON arguments. Text after
//        the failure is content.
//    A truncated closing marker after complete calls ("</tool_") is dropped; a missing one is
//    tolerated.
//  * The end of a cut output (StreamParser::finish(cut = true): the token limit or a stop string
//    ended it): a partial marker at the end ("<tool_ca", "<thi") and a call block that did not
//    complete are dropped, neither content nor calls (the markup never finished, so it is not the
//    model's text). At a natural end they are content, as above.
//  * kGranite / kPhi4 templates do not render an assistant's earlier calls (only its content);
//    ChatFormat::template_renders_calls is false then, and the server writes such a turn's calls
//    as the model's own text (tool_calls_text()) in its content.
//  * Call ids are generated, never taken from the model: "call_" + 24 alphanumerics, or 9
//    alphanumerics for kMistral (its templates require that). ParseOptions::id_seed makes them
//    reproducible.
//  * Bounds: nesting depth kMaxJsonDepth, held-back text kMaxHeldBytes, whitespace runs and names
//    a few hundred bytes; every byte is examined a bounded number of times, so streaming is
//    O(total length).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace anelm::chat {

enum class ToolSyntax { kNone, kHermes, kLlama3, kMistral, kGeneric, kQwenXml, kGranite, kPhi4 };
enum class ReasoningSyntax {
  kNone,
  kThinkTags /* <think>...</think> */,
  kThinkBrackets /* [THINK]...[/THINK] */
};
// Which Mistral form the template renders (and the server should force); parsing accepts both.
enum class MistralForm {
  kJsonArray /* Nemo */,
  kNameArgs /* [TOOL_CALLS]name[ARGS]{...}: Small 3.2, Devstral, Ministral 3 */
};

struct ChatFormat {
  ToolSyntax tools = ToolSyntax::kNone;
  ReasoningSyntax reasoning = ReasoningSyntax::kNone;
  bool template_accepts_tools = false;  // the template reads the `tools` variable
  bool template_renders_calls = false;  // the template reads `tool_calls` (an assistant's calls)
  MistralForm mistral_form = MistralForm::kJsonArray;
};

// Decides from a template's source text (markers, never file names):
//   "[TOOL_CALLS]" → kMistral (kNameArgs when "[ARGS]" is rendered);
//   "<tool_call>" with "<function=" and "<parameter=" → kQwenXml;
//   "<tool_call>" with a JSON "arguments" object and none of the XML-style argument markers
//     (<function=, <parameter=, <arg_key>, <invoke, <tool_calls>) → kHermes;
//   Llama 3 headers (<|start_header_id|>) with "<|python_tag|>" or a "parameters" JSON key, and no
//     <function= → kLlama3;
//   "<|/tool_call|>", or "<|tool|>" with "<|/tool|>" (Phi-4-mini's tool list) → kPhi4;
//   "<|tool_call|>" otherwise → kGranite;
//   otherwise a template whose Jinja code reads the variable `tools` → kGeneric, else kNone.
//   "<think>" → kThinkTags, else "[THINK]" → kThinkBrackets.
ChatFormat detect_chat_format(std::string_view template_source);

// True when a rendered prompt leaves the reasoning block open, i.e. ends (ignoring whitespace) with
// the open marker: DeepSeek-R1 distills and QwQ ("<think>\n"). Use it for starts_in_reasoning.
bool prompt_opens_reasoning(std::string_view rendered_prompt, const ChatFormat& format);

// The literal markers the output parser reads for `format`: the tool-call block's open and close,
// Mistral's argument markers, Llama 3's <|python_tag|>, the reasoning block's open and close. A
// vocabulary may hold one as a control token (Granite's and Phi-4-mini's <|tool_call|>): the
// detokenizer must then keep it as text and an output constraint must be able to emit it, or a call
// the model opens reaches the client as plain text (llama.cpp's "preserved tokens").
std::vector<std::string_view> format_markers(const ChatFormat& format);

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // the arguments JSON object as text (see "Decisions" above)
};
struct ParsedMessage {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;
};

struct ParseOptions {
  bool parse_tools = true;  // false when the request offered no tools: markup stays content
  bool starts_in_reasoning = false;  // the prompt ended inside an open reasoning block
  bool parse_reasoning = true;       // false: reasoning markers stay content
  std::uint64_t id_seed = 0;         // 0: call ids from std::random_device; else reproducible ids
  // The request's OpenAI tools array (see tool_call_payload_schema): kQwenXml types argument
  // values by its parameter schemas. Null or no matching tool: values are untyped.
  std::shared_ptr<const nlohmann::ordered_json> tools;
};

inline constexpr int kMaxJsonDepth = 64;
inline constexpr std::size_t kMaxHeldBytes = 64 * 1024;
// A kQwenXml value that is not string-only is held until complete up to this size; a longer one
// is a string (streamed from then on).
inline constexpr std::size_t kMaxTypedValueBytes = 32 * 1024;

// Whole output at once. Never throws on any input.
ParsedMessage parse_message(std::string_view text, const ChatFormat& format,
                            const ParseOptions& options);

struct Delta {
  enum class Kind {
    kContent,
    kReasoning,
    kToolCallStart /* index, id, name */,
    kToolCallArgs /* index, text */
  };
  Kind kind = Kind::kContent;
  std::string text;
  int index = 0;
  std::string id, name;
};

namespace detail {
class Machine;
}

// Incremental parser: feed pieces of generated text in order (any split); each call returns the
// deltas it made decidable (adjacent deltas of one kind are merged). Held back is only text whose
// role is not decided yet: a partial marker, a whitespace run that may turn out to precede a call
// or end the reasoning (dropped then), a leading '{' of a Llama 3 / generic reply, and a call block
// until its name and the start of its arguments are known (bounded by kMaxHeldBytes). finish()
// flushes at the end of generation; feed() after finish() is ignored. Never throws on any input
// (std::bad_alloc aside). The kToolCallStart delta of a call carries index, id and name; its
// kToolCallArgs deltas follow with the same index (indices count announced calls, dropped ones
// included). The server answers finish_reason "tool_calls" when message().tool_calls is non-empty
// (and the output was not cut by the token limit).
class StreamParser {
 public:
  StreamParser(ChatFormat format, ParseOptions options);
  ~StreamParser();
  StreamParser(StreamParser&&) noexcept;
  StreamParser& operator=(StreamParser&&) noexcept;

  std::vector<Delta> feed(std::string_view piece);
  // `cut`: the output was cut short (see "Decisions").
  std::vector<Delta> finish(bool cut = false);
  // Everything emitted so far (== the concatenated deltas, less calls dropped as unfinished or
  // invalid: a call here has complete JSON arguments).
  const ParsedMessage& message() const;
  // Inside a tool call's markup, from the last byte of its opening marker (Llama 3 / generic: the
  // reply's first '{') to the end of its block: where a stop string must not cut the output.
  bool in_tool_call() const;

 private:
  std::unique_ptr<detail::Machine> machine_;
};

// A new call id: "call_" + 24 alphanumerics, or 9 alphanumerics for kMistral.
std::string make_call_id(ToolSyntax syntax, std::uint64_t& rng_state);

// ---- Constrained decoding ----
//
// What a call looks like as literal text around its JSON payload. The server composes the grammar:
//   one call:       prefix PAYLOAD suffix
//   parallel calls: prefix PAYLOAD (separator PAYLOAD)* suffix   (parallel_in_one_json)
//                   prefix PAYLOAD suffix (separator prefix PAYLOAD suffix)*   (otherwise)
// PAYLOAD follows tool_call_payload_schema(). With name_outside_json (Mistral kNameArgs) a call is
//   prefix NAME name_suffix ARGUMENTS suffix
// with one alternative per tool, ARGUMENTS following tool_arguments_schema(tools, NAME).
// With whole_output_json (kGeneric) the whole reply is one JSON document, see
// generic_envelope_schema().
struct ToolCallShape {
  std::string trigger;  // text that opens a call in free generation (lazy tool_choice=auto)
  bool trigger_at_start = false;  // the trigger only counts at the start of the reply (Llama 3 '{')
  std::string prefix, suffix;     // literal text before / after one call's payload
  std::string separator;          // between parallel calls
  bool parallel_in_one_json = false;  // all calls inside one JSON array (Mistral Nemo, generic)
  bool supports_parallel = true;      // the template can render more than one call per turn
  bool name_outside_json = false;     // Mistral kNameArgs
  std::string name_suffix;            // "[ARGS]" with name_outside_json
  bool whole_output_json = false;     // kGeneric
  // kQwenXml: the arguments are not a JSON payload but <parameter=...> elements; a call is
  //   prefix "<function=" NAME ">\n" PARAMETERS "</function>\n" suffix
  // see add_xml_call_rules() (chat/xml_call_grammar.h).
  bool xml_parameters = false;
};
ToolCallShape tool_call_shape(ToolSyntax syntax);  // kMistral: the Nemo JSON-array form
ToolCallShape tool_call_shape(const ChatFormat& format);

// JSON Schema of one call's payload for an OpenAI tools array
// ([{"type":"function","function":{"name","description","parameters"}}], bare function objects are
// accepted too), restricted to `only_name` when non-empty (named tool_choice):
//   {"type":"object","properties":{"name":{"const":NAME},"arguments":PARAMETERS},
//    "required":["name","arguments"],"additionalProperties":false}
// ("parameters" instead of "arguments" for kLlama3); one tool → that object, several →
// {"anyOf":[...]}. Missing parameters → {"type":"object"}. Throws std::invalid_argument when no
// tool qualifies.
nlohmann::ordered_json tool_call_payload_schema(ToolSyntax syntax, const nlohmann::ordered_json& tools,
                                        const std::string& only_name);
// The parameters schema of tool `name` ({"type":"object"} when it has none). Throws
// std::invalid_argument when there is no such tool.
nlohmann::ordered_json tool_arguments_schema(const nlohmann::ordered_json& tools, const std::string& name);
// kGeneric's whole-reply schema: {"tool_calls":[PAYLOAD, ...]} (one call only unless `parallel`),
// or, when allow_response (tool_choice=auto), alternatively {"response": string}.
nlohmann::ordered_json generic_envelope_schema(const nlohmann::ordered_json& tools, const std::string& only_name,
                                       bool allow_response, bool parallel);

// An assistant turn's calls ([{"function": {"name", "arguments"}}, ...] as in OpenAI messages;
// arguments a JSON string or an object) as the model writes them in `syntax`: kGranite
// <|tool_call|>[{"name": ..., "arguments": ...}, ...], kPhi4 the same closed by <|/tool_call|>.
// Empty for the other syntaxes (their templates render calls themselves). Arguments that are not
// a JSON object text are written as a JSON string. Throws std::invalid_argument on a call without
// a function name.
std::string tool_calls_text(ToolSyntax syntax, const nlohmann::ordered_json& tool_calls);

const char* to_string(ToolSyntax syntax);
const char* to_string(ReasoningSyntax syntax);

}  // namespace anelm::chat
