// One sequence's generation state over a Transformer: KV cache with prefix reuse (from the active
// sequence or the prompt cache), activations, the prefill + sample/decode loop, stop rules,
// cancellation and timings.
#pragma once

#include <span>
#include <vector>

#include "engine/activations.h"
#include "engine/generation.h"
#include "engine/kv_cache.h"
#include "engine/prompt_cache.h"
#include "engine/sampler.h"
#include "engine/transformer.h"

namespace anelm::engine {

// Not thread-safe: one driver thread. Allocates everything at construction; generate() allocates
// only the result's id vector (reserved once per request), never per token.
class Generator {
 public:
  // prompt_cache_bytes: budget of the cross-request prompt cache; 0 disables it.
  Generator(Transformer& tf, int ctx, int max_batch, DType kv_type, int n_threads, int64_t prompt_cache_bytes = 0);

  // A stored prefix is taken only from this length on (or the whole prompt but its last token, when
  // shorter): below it the copy saves too little prefill to matter, and tiny entries crowd the cache.
  static constexpr int kMinCachedPrefix = 16;

  int ctx() const { return kv_.ctx(); }
  int64_t kv_bytes() const { return kv_.bytes(); }
  // Ids whose K/V are in the cache, positions [0, size).
  std::span<const int> cached_tokens() const { return cached_; }
  const PromptCache::Stats& prompt_cache_stats() const { return pcache_.stats(); }

  // See Engine::generate. Throws as validate_request.
  GenerateResult generate(const GenerateRequest& req, const TokenCallback& on_token);

  // See Engine::forward. Throws Error(kInvalidArgument) when start_pos > cached tokens, an id is out
  // of range, or the tokens do not fit the context.
  std::span<const float> forward(std::span<const int> tokens, int start_pos, bool all_logits);

 private:
  bool is_stop(int id, const GenerateRequest& req) const;
  int sample_constrained(const GenerateRequest& req, Rng& rng);
  int reuse_prefix(std::span<const int> prompt);

  Transformer& tf_;
  const ModelConfig& cfg_;
  KvCache kv_;
  PromptCache pcache_;
  Activations acts_;
  std::vector<int> cached_;      // [ctx] reserved
  std::vector<int> history_;     // prompt + generated ids (penalty window), [ctx] reserved
  std::vector<float> all_logits_;  // forward(all_logits) only (test path)
  SampleScratch scratch_;
  std::vector<float> masked_;      // logits under a constraint's mask, [vocab] reserved
  TokenStep step_;
};

}  // namespace anelm::engine
