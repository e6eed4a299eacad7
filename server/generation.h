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

struct PreparedGeneration {
  engine::GenerateRequest request;     // prompt ids, max_tokens, sampling, top_logprobs
  int n = 1;                           // independent choices: choice i samples with seed + i
  // Per choice (may be empty): the output constraint (grammar) and the output parser (default plain).
  std::function<std::shared_ptr<engine::TokenConstraint>()> make_constraint;
  std::function<std::unique_ptr<OutputParser>()> make_parser;
  std::vector<std::string> stop;       // stop strings
  bool stream = false;
  bool include_usage = false;
  bool want_logprobs = false;          // return per-token logprobs
  std::string echo_text;               // prepended to the output (completions echo)
  std::function<bool()> client_gone;   // non-streamed: cancel the job once this is true
  std::shared_ptr<RequestLog> log;     // filled for the request's log line (may be null)
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
};

// Token ids -> emitted text: skips special tokens, holds back split UTF-8 characters (StreamDecoder)
// and partial stop strings (StopMatcher).
class TextAssembler {
 public:
  // `context`: the prompt ids (SentencePiece keeps the first piece's space after a prompt).
  TextAssembler(const tok::Tokenizer& tokenizer, const std::vector<int>& context,
                std::vector<std::string> stops);
  std::string push(int id);   // text safe to emit after this token
  std::string finish();       // the held-back remainder at the end (nothing after a stop string)
  bool stopped() const { return stop_.stopped(); }

 private:
  tok::StreamDecoder decoder_;
  StopMatcher stop_;
};

// Validates the request with the engine (400, context_length_exceeded), submits one job per choice
// (429/503 when refused) and returns the response: a JSON body, or a stream that cancels the jobs
// when the client goes away.
HttpResponse run_generation(ServerContext& ctx, PreparedGeneration gen,
                            std::unique_ptr<ResponseSerializer> serializer);

// OpenAI finish_reason for an engine result; `stopped` is true when a stop string ended it,
// `tool_calls` when the output holds tool calls.
const char* openai_finish_reason(engine::FinishReason r, bool stopped, bool tool_calls = false);

}  // namespace anelm::server
