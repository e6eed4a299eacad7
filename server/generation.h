// Runs one admitted generation for an HTTP request: tokens -> text deltas -> JSON body or SSE stream.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/api_response.h"
#include "server/http_types.h"
#include "server/output_parser.h"
#include "server/server_context.h"
#include "server/stop_strings.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace anelm::server {

// Where a request's stop strings may end its output. A stop string never cuts a constrained tool
// call or a constrained JSON reply (it would leave arguments or content that are not the JSON the
// grammar promised); llama-server likewise leaves a triggered grammar alone.
enum class StopScope {
  kEverywhere,        // no constraint, or the client's own GBNF `grammar`
  kOutsideToolCalls,  // tool_choice auto: free text, but not inside a tool call's markup
  kNowhere,           // the whole reply is constrained (response_format json, forced tool calls)
};

// llama.cpp's limits for code completion, in emitted text. n_indent > 0: a line after the first
// whose first character other than space or tab comes before column n_indent ends the output there
// (its indentation kept, as llama.cpp keeps it). t_max_predict_ms > 0: the output ends after a
// newline once that long has passed since the first token.
struct LineLimits {
  int n_indent = 0;
  int t_max_predict_ms = 0;
  bool any() const { return n_indent > 0 || t_max_predict_ms > 0; }
};

struct PreparedGeneration {
  engine::GenerateRequest request;     // prompt ids, max_tokens, sampling, top_logprobs
  int n = 1;                           // independent choices: choice i samples with seed + i
  // Per choice (may be empty): the output constraint (grammar) and the output parser (default plain).
  std::function<std::shared_ptr<engine::TokenConstraint>()> make_constraint;
  std::function<std::unique_ptr<OutputParser>()> make_parser;
  std::vector<std::string> stop;       // stop strings
  std::vector<int> keep_special;       // control tokens emitted as text: the chat markers parsed
  StopScope stop_scope = StopScope::kEverywhere;
  LineLimits line_limits;
  bool stream = false;
  bool include_usage = false;
  bool want_logprobs = false;          // return per-token logprobs
  std::string echo_text;               // prepended to the output (completions echo)
  // /v1/completions with several prompts: choice i runs prompts[i / n] and echoes echo_texts[i / n]
  // (each prompt is validated as request.prompt is). Empty: every choice runs request.prompt.
  std::vector<std::vector<int>> prompts;
  std::vector<std::string> echo_texts;
  std::vector<std::pair<std::string, std::string>> headers;  // added to the response (both forms)
  std::function<bool()> client_gone;   // non-streamed: cancel the job once this is true
  std::shared_ptr<RequestLog> log;     // filled for the request's log line (may be null)
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
};

// Token ids -> emitted text: skips special tokens, holds back split UTF-8 characters (StreamDecoder)
// and partial stop strings (StopMatcher).
class TextAssembler {
 public:
  // `context`: the prompt ids (SentencePiece keeps the first piece's space after a prompt).
  // `calls`: when set, stop strings apply only outside tool calls; this parser (a second instance of
  // the choice's output parser, fed the text before the stop strings see it) tells where they are.
  // `keep`: special ids emitted as text (ModelRuntime::preserved_tokens).
  // `limits`: applied after the stop strings.
  TextAssembler(const tok::Tokenizer& tokenizer, const std::vector<int>& context,
                std::vector<std::string> stops, std::unique_ptr<OutputParser> calls = nullptr,
                std::vector<int> keep = {}, LineLimits limits = {});
  std::string push(int id);   // text safe to emit after this token
  std::string finish();       // the held-back remainder at the end (nothing after a stop)
  bool stopped() const { return stop_.stopped() || limited_; }
  bool limited() const { return limited_; }  // a line limit ended the output
  const std::string& matched_stop() const { return stop_.matched(); }  // empty until stopped

 private:
  std::string match_stops(std::string_view text);
  std::string apply_limits(std::string text);  // moved through when there are no limits

  tok::StreamDecoder decoder_;
  StopMatcher stop_;
  std::unique_ptr<OutputParser> calls_;
  bool in_call_ = false;
  LineLimits limits_;
  bool limited_ = false;
  bool at_line_start_ = false;    // n_indent: inside a new line's indentation, held back in `indent_`
  std::string indent_;
  std::chrono::steady_clock::time_point first_token_{};
};

// Validates the request with the engine (400, context_length_exceeded), submits one job per choice
// (429/503 when refused) and returns the response: a JSON body, or a stream that cancels the jobs
// when the client goes away.
HttpResponse run_generation(ServerContext& ctx, PreparedGeneration gen,
                            std::unique_ptr<ResponseSerializer> serializer);

// OpenAI finish_reason for an engine result; `stopped` is true when a stop string ended it,
// `tool_calls` when the output holds (complete) tool calls. A cut by the token limit or the context
// is "length" even after complete calls, as in llama-server and OpenAI.
const char* openai_finish_reason(engine::FinishReason r, bool stopped, bool tool_calls = false);

}  // namespace anelm::server
