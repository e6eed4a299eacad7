// OpenAI request types parsed from JSON with per-field validation. A field that would change the
// output and is not implemented is a 400 naming it; a field without meaning for a local server, or
// an unknown one, is accepted and logged at debug level (server/http-api.md lists them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampler.h"

namespace anelm::server {

// response_format: free text, any JSON object, or JSON matching a schema (enforced by a grammar).
struct ResponseFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema };
  Kind kind = Kind::kText;
  nlohmann::ordered_json schema;  // kJsonSchema: json_schema.schema (key order kept)
  std::string name;       // kJsonSchema: json_schema.name
  // kJsonSchema: json_schema.strict. true: a schema keyword the grammar cannot enforce is a 400;
  // false: it is dropped (logged) and the rest of the schema still constrains the output.
  bool strict = false;
};

// Fields shared by /v1/completions and /v1/chat/completions.
struct GenerationFields {
  std::optional<int> max_tokens;         // unset: endpoint default
  engine::SamplingParams sampling;       // temperature, top_p, top_k, min_p, penalties, seed
  bool seed_given = false;               // false: the server picks a fresh seed
  std::vector<std::string> stop;         // stop strings, never emitted
  bool stream = false;
  bool include_usage = false;            // stream_options.include_usage
  int top_logprobs = 0;                  // alternatives per token
  bool logprobs = false;                 // return per-token logprobs
  int n = 1;                             // independent choices
  ResponseFormat response_format;
  std::string grammar;                   // llama-server's GBNF `grammar` field; empty: none
};

// One prompt of /v1/completions: text, or token ids.
struct CompletionPrompt {
  std::string text;                      // when the prompt is a string
  std::vector<int> ids;                  // when the prompt is a token-id array
  bool is_ids = false;
};

struct CompletionRequest {
  GenerationFields gen;
  // One or several prompts ("a", ["a","b"], [1,2], [[1,2],[3]]); choice index = prompt * n + i.
  std::vector<CompletionPrompt> prompts;
  bool echo = false;
  // anelm extension (qwen_ane's request shape): with `system`, the (single, text) prompt is a user
  // turn under this system prompt, rendered with the model's chat template.
  std::optional<std::string> system;
  // Fill-in-the-middle: the text after the insertion point; the prompt is the text before it and
  // the completion is what goes between (server/fim_prompt.h). Empty: a plain completion.
  std::string suffix;
};

// tool_choice: auto (the model decides), none, required (at least one call), or one named function.
struct ToolChoice {
  enum class Kind { kAuto, kNone, kRequired, kFunction };
  Kind kind = Kind::kAuto;
  std::string name;  // kFunction
};

struct ChatRequest {
  GenerationFields gen;
  // The conversation as chat templates read it (transformers' shape): roles system (also from
  // "developer", kept where the client put it), user, assistant, tool; content a string or an
  // array of {"type":"text","text"} parts (ChatPrompt joins them with "\n" unless the template
  // iterates parts itself); assistant tool_calls with function.arguments parsed into an object;
  // tool messages with tool_call_id.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // OpenAI function tools, validated; a tool without parameters gets {"type":"object","properties":{}}.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs
  // vLLM / transformers: unset means "decide from the conversation" (ChatPrompt::render_request):
  // a trailing assistant message with text and no tool calls is continued, as llama-server does.
  std::optional<bool> add_generation_prompt;
  std::optional<bool> continue_final_message;
};

// The name of each function in `tools`, in order.
std::vector<std::string> tool_names(const nlohmann::ordered_json& tools);

struct TokenizeRequest {
  std::string content;
  bool add_special = false;
  bool parse_special = true;
  bool with_pieces = false;
};

struct DetokenizeRequest {
  std::vector<int> tokens;
};

// `stop`: a string or an array of at most `max_stops` strings of up to 256 bytes (empty ones dropped).
std::vector<std::string> parse_stop(const nlohmann::ordered_json& j, size_t max_stops);
// `grammar` (llama-server's GBNF field): at most 64 KiB; "" when absent.
std::string parse_grammar(const nlohmann::ordered_json& j);

// Each throws ApiError (400, param = the offending field) on invalid input.
// `defaults`: sampling for fields the request leaves out (the model preset's; OpenAI's otherwise).
CompletionRequest parse_completion_request(std::string_view body,
                                           const engine::SamplingParams& defaults = {});
ChatRequest parse_chat_request(std::string_view body, const engine::SamplingParams& defaults = {});
TokenizeRequest parse_tokenize_request(std::string_view body);
DetokenizeRequest parse_detokenize_request(std::string_view body);

}  // namespace anelm::server
