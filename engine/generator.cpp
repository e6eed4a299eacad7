// Prefill with KV prefix reuse, then sample -> stop checks -> callback -> decode one token, until a stop.
#include "engine/generator.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/error.h"

namespace anelm::engine {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorKind::kInvalidArgument, msg); }

}  // namespace

Generator::Generator(Transformer& tf, int ctx, int max_batch, DType kv_type, int n_threads,
                     int64_t prompt_cache_bytes)
    : tf_(tf), cfg_(tf.config()), kv_(tf.config(), ctx, kv_type),
      pcache_(kv_, cfg_.n_layers, cfg_.n_kv_heads, prompt_cache_bytes),
      acts_(tf.config(), max_batch, ctx, n_threads) {
  cached_.reserve(static_cast<size_t>(ctx));
  history_.reserve(static_cast<size_t>(ctx));
  step_.top.reserve(64);
  scratch_.logits.reserve(static_cast<size_t>(cfg_.vocab_size));
  scratch_.cand.reserve(static_cast<size_t>(cfg_.vocab_size));
  scratch_.window.reserve(static_cast<size_t>(ctx));
  masked_.reserve(static_cast<size_t>(cfg_.vocab_size));
}

bool Generator::is_stop(int id, const GenerateRequest& req) const {
  if (!req.ignore_eos && std::find(cfg_.eos_ids.begin(), cfg_.eos_ids.end(), id) != cfg_.eos_ids.end()) return true;
  return std::find(req.extra_stop_ids.begin(), req.extra_stop_ids.end(), id) != req.extra_stop_ids.end();
}

// The sampled token was refused: draw again from the logits with every refused token masked.
int Generator::sample_constrained(const GenerateRequest& req, Rng& rng) {
  masked_.assign(acts_.logits.begin(), acts_.logits.end());  // reserved to the vocabulary: no allocation
  if (req.constraint->mask(masked_) == 0) {
    throw Error(ErrorKind::kInternal, "the output constraint allows no token (an unsatisfiable grammar?)");
  }
  return sample(masked_, req.sampling, history_, rng, scratch_);
}

// Makes the KV cache hold the longest known prefix of `prompt` and returns its length; the last
// prompt token is always recomputed (its logits are needed to sample). Sources: the active
// sequence's own rows (free), or a prompt-cache entry, whose rows past the active common prefix are
// copied in. Before the active rows are overwritten, the sequence they hold is snapshotted into the
// prompt cache: cached_ lists exactly the positions a forward pass completed, so a cancelled or
// failed request leaves a shorter but never a wrong entry.
int Generator::reuse_prefix(std::span<const int> prompt) {
  const int n_prompt = static_cast<int>(prompt.size());
  const auto mismatch = std::mismatch(cached_.begin(), cached_.end(), prompt.begin(), prompt.end());
  const int common = static_cast<int>(mismatch.first - cached_.begin());
  int reuse = std::min(common, n_prompt - 1);
  if (pcache_.enabled()) {
    if (common < static_cast<int>(cached_.size()) && static_cast<int>(cached_.size()) >= kMinCachedPrefix) {
      pcache_.store(cached_, kv_);
    }
    const PromptCache::Hit hit = pcache_.lookup(prompt);
    const int from_cache = std::min(hit.tokens, n_prompt - 1);
    if (from_cache > reuse && from_cache >= std::min(kMinCachedPrefix, n_prompt - 1)) {
      pcache_.restore(hit, reuse, from_cache, kv_);  // rows [0, reuse) are already the same prefix
      reuse = from_cache;
    }
  }
  cached_.assign(prompt.begin(), prompt.begin() + reuse);  // reserved to ctx: no allocation
  return reuse;
}

GenerateResult Generator::generate(const GenerateRequest& req, const TokenCallback& on_token) {
  validate_request(req, cfg_, ctx());
  GenerateResult res;
  res.prompt_tokens = static_cast<int>(req.prompt.size());
  if (req.max_tokens == 0) return res;  // nothing to generate (finish kLength)
  res.ids.reserve(static_cast<size_t>(req.max_tokens.value_or(ctx())));
  auto cancelled = [&] { return req.cancel && req.cancel->load(std::memory_order_relaxed); };

  // ---- prefill; its time includes the prompt cache's copies (snapshot and restore)
  const auto t_prefill = Clock::now();
  const int reuse = reuse_prefix(req.prompt);
  res.cached_tokens = reuse;
  const std::span<const int> todo(req.prompt.data() + reuse, req.prompt.size() - static_cast<size_t>(reuse));
  const int done = tf_.forward(todo, reuse, kv_, acts_, nullptr, req.cancel);
  cached_.insert(cached_.end(), todo.begin(), todo.begin() + done);
  res.prefill_ms = ms_since(t_prefill);
  res.prefill_tok_s = res.prefill_ms > 0 ? static_cast<double>(todo.size()) / (res.prefill_ms / 1e3) : 0.0;
  if (done < static_cast<int>(todo.size())) {
    res.finish = FinishReason::kCancelled;
    return res;
  }

  // ---- decode: sample from acts_.logits, stop checks, callback, forward the token
  history_.assign(req.prompt.begin(), req.prompt.end());
  Rng rng(req.sampling.seed);
  const auto t_decode = Clock::now();
  for (;;) {
    if (cancelled()) {
      res.finish = FinishReason::kCancelled;
      break;
    }
    const std::span<const float> logits(acts_.logits);
    int id = sample(logits, req.sampling, history_, rng, scratch_);
    if (req.constraint && !req.constraint->allows(id)) id = sample_constrained(req, rng);
    if (is_stop(id, req)) {
      res.finish = FinishReason::kStop;
      break;
    }
    step_.id = id;
    const float lse = tf_.kernels().log_sum_exp(logits.data(), static_cast<int>(logits.size()));
    step_.logprob = logits[static_cast<size_t>(id)] - lse;
    top_logprobs(logits, req.top_logprobs, lse, step_.top);
    res.ids.push_back(id);
    history_.push_back(id);
    if (req.constraint) req.constraint->accept(id);
    if (on_token && !on_token(step_)) {
      res.finish = FinishReason::kAborted;
      break;
    }
    if (req.max_tokens && static_cast<int>(res.ids.size()) == *req.max_tokens) {
      res.finish = FinishReason::kLength;
      break;
    }
    const int pos = static_cast<int>(cached_.size());
    if (pos >= ctx()) {
      res.finish = FinishReason::kContext;
      break;
    }
    if (tf_.forward(std::span<const int>(&id, 1), pos, kv_, acts_, nullptr, req.cancel) == 0) {
      res.finish = FinishReason::kCancelled;
      break;
    }
    cached_.push_back(id);
  }
  res.decode_ms = ms_since(t_decode);
  res.decode_tok_s = res.decode_ms > 0 ? static_cast<double>(res.ids.size()) / (res.decode_ms / 1e3) : 0.0;
  return res;
}

std::span<const float> Generator::forward(std::span<const int> tokens, int start_pos, bool all_logits) {
  if (tokens.empty()) invalid("forward: no tokens");
  if (start_pos < 0 || start_pos > static_cast<int>(cached_.size())) {
    invalid("forward: start_pos " + std::to_string(start_pos) + " must be in [0, " +
            std::to_string(cached_.size()) + "] (the cache holds " + std::to_string(cached_.size()) + " tokens)");
  }
  if (start_pos + static_cast<int64_t>(tokens.size()) > ctx()) {
    invalid("forward: start_pos " + std::to_string(start_pos) + " + " + std::to_string(tokens.size()) +
            " tokens exceeds the context of " + std::to_string(ctx()));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= cfg_.vocab_size) {
      invalid("forward: token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
              " is out of range [0, " + std::to_string(cfg_.vocab_size) + ")");
    }
  }
  cached_.resize(static_cast<size_t>(start_pos));
  float* out = nullptr;
  if (all_logits) {
    all_logits_.resize(tokens.size() * static_cast<size_t>(cfg_.vocab_size));
    out = all_logits_.data();
  }
  tf_.forward(tokens, start_pos, kv_, acts_, out);
  cached_.insert(cached_.end(), tokens.begin(), tokens.end());
  if (all_logits) return all_logits_;
  return acts_.logits;
}

}  // namespace anelm::engine
