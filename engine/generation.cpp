// validate_request: the one place a generation request is checked against the model and context.
#include <string>

#include "engine/error.h"
#include "engine/generation.h"

namespace anelm::engine {

namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorKind::kInvalidArgument, msg); }

}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kContext: return "context";
    case FinishReason::kAborted: return "aborted";
    case FinishReason::kCancelled: return "cancelled";
  }
  return "unknown";
}

void validate_request(const GenerateRequest& req, const ModelConfig& cfg, int ctx) {
  if (!cfg.causal) {
    throw Error(ErrorKind::kUnsupported, std::string(arch_name(cfg.arch)) +
                                             " is an encoder (an embedding model): it embeds text and does not generate");
  }
  const auto n_prompt = static_cast<int64_t>(req.prompt.size());
  if (n_prompt == 0) invalid("prompt is empty: at least one token id is required");
  for (size_t i = 0; i < req.prompt.size(); ++i) {
    if (req.prompt[i] < 0 || req.prompt[i] >= cfg.vocab_size) {
      invalid("prompt token id " + std::to_string(req.prompt[i]) + " at index " + std::to_string(i) +
              " is out of range [0, " + std::to_string(cfg.vocab_size) + ")");
    }
  }
  if (req.max_tokens && *req.max_tokens < 0) {
    invalid("max_tokens must be >= 0, got " + std::to_string(*req.max_tokens));
  }
  // Without max_tokens the prompt must leave room for one token.
  const int64_t need = n_prompt + (req.max_tokens ? *req.max_tokens : 1);
  if (need > ctx || n_prompt >= ctx) {
    throw Error(ErrorKind::kContextLength,
                "prompt (" + std::to_string(n_prompt) + " tokens) + max_tokens (" +
                    (req.max_tokens ? std::to_string(*req.max_tokens) : std::string("none")) +
                    ") exceeds the context (" + std::to_string(ctx) + " tokens)");
  }
  const SamplingParams& s = req.sampling;
  if (s.top_k < 0) invalid("top_k must be >= 0, got " + std::to_string(s.top_k));
  if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) invalid("top_p must be in (0, 1], got " + std::to_string(s.top_p));
  if (!(s.min_p >= 0.0f && s.min_p <= 1.0f)) invalid("min_p must be in [0, 1], got " + std::to_string(s.min_p));
  if (!(s.repetition_penalty > 0.0f)) {
    invalid("repetition_penalty must be > 0, got " + std::to_string(s.repetition_penalty));
  }
  if (req.top_logprobs < 0 || req.top_logprobs > 64) {
    invalid("top_logprobs must be in [0, 64], got " + std::to_string(req.top_logprobs));
  }
}

}  // namespace anelm::engine
