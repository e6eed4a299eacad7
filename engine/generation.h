// The request contract of the engine (as CTranslate2's generation.h): what a caller asks for, what
// each step reports and what a generation returns. Plain types; no engine internals.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "engine/model_config.h"
#include "engine/sampler.h"

namespace anelm {
class Error;
}

namespace anelm::engine {

enum class FinishReason {
  kStop,       // an end-of-generation token was sampled (not included in ids)
  kLength,     // max_tokens reached
  kContext,    // the KV cache is full
  kAborted,    // the token callback returned false (stop string, client gone)
  kCancelled,  // the cancel flag was raised (checked during prefill and every decode step)
};
const char* finish_reason_name(FinishReason r);

struct TokenStep {
  int id = 0;
  float logprob = 0.0f;                       // log-softmax of the raw logits (before penalties)
  std::vector<std::pair<int, float>> top;     // top-N (id, logprob); filled only when asked
};
// Called for every generated token; return false to stop (FinishReason::kAborted).
using TokenCallback = std::function<bool(const TokenStep&)>;

// Constrained decoding (grammars, JSON schemas, tool calls). The caller builds it from token texts
// the engine never sees; the engine only asks about ids. One per request, used by one thread.
class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // May `id` come next? End-of-generation ids are allowed exactly when the constrained text may end.
  virtual bool allows(int id) = 0;
  // Sets the logit of every id that may not come next to -inf; returns how many remain.
  virtual int mask(std::span<float> logits) = 0;
  // `id` was generated (never called for the end-of-generation id that stops).
  virtual void accept(int id) = 0;
};

struct GenerateRequest {
  std::vector<int> prompt;                  // must be non-empty
  // Tokens to generate at most: 0 computes the prompt into a slot (for the prompt cache) and generates
  // nothing (finish kLength); nullopt: until a stop token or the end of the context. The same
  // meaning at the HTTP API.
  std::optional<int> max_tokens = 16;
  SamplingParams sampling;
  bool ignore_eos = false;
  std::vector<int> extra_stop_ids;          // stop tokens besides the model's EOG ids
  int top_logprobs = 0;                     // N alternatives per step (0: none)
  const std::atomic<bool>* cancel = nullptr;  // optional; raised by another thread
  // Optional. The sampled token is checked with allows(); only when it is refused are the logits
  // masked and the token drawn again, so a constraint costs little while the model follows it.
  std::shared_ptr<TokenConstraint> constraint;
};

struct GenerateResult {
  std::vector<int> ids;          // generated ids (stop token excluded)
  FinishReason finish = FinishReason::kLength;
  int prompt_tokens = 0;
  int cached_tokens = 0;         // prompt tokens reused (previous request's KV or the prompt cache)
  double prefill_ms = 0, decode_ms = 0;
  double prefill_tok_s = 0, decode_tok_s = 0;
};

// Called once when a started sequence ends: its result, and the error that failed it (null when it
// finished normally; the result then holds what was generated before the failure).
using DoneCallback = std::function<void(const GenerateResult& result, const Error* error)>;

// The one validation of a request against a model and a context of `ctx` tokens. Throws
// Error(kInvalidArgument) naming the field and value, or Error(kContextLength) when the prompt plus
// max_tokens (or the prompt alone, with no max_tokens) does not fit. Pure: safe from any thread.
void validate_request(const GenerateRequest& req, const ModelConfig& cfg, int ctx);

}  // namespace anelm::engine
