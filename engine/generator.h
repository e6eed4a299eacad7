// Continuous batching over a Transformer: up to n_seqs sequences, each in its own slot (KV cache,
// token history, sampler state), advanced together one batched forward pass at a time. A step
// forwards every running decode's next token plus chunks of the prompts still prefilling, so the
// weights are read once for all of them; new prompts join between steps. Prefix reuse comes from a
// slot's own rows or from the prompt cache shared by all slots.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/activations.h"
#include "engine/generation.h"
#include "engine/kv_cache.h"
#include "engine/prompt_cache.h"
#include "engine/sampler.h"
#include "engine/transformer.h"

namespace anelm::engine {

// Not thread-safe: one driver thread. Allocates every buffer at construction; start() copies the
// request (per request), step() allocates nothing but the result's ids (reserved at start).
class Generator {
 public:
  // prompt_cache_bytes: budget of the cross-request prompt cache; 0 disables it. n_seqs: slots
  // (sequences run at once), 1 <= n_seqs <= max_batch; each slot holds a KV cache of ctx positions.
  Generator(Transformer& tf, int ctx, int max_batch, DType kv_type, int n_threads, int64_t prompt_cache_bytes = 0,
            int n_seqs = 1);
  ~Generator();

  // A stored prefix is taken only from this length on (or the whole prompt but its last token, when
  // shorter): below it the copy saves too little prefill to matter, and tiny entries crowd the cache.
  static constexpr int kMinCachedPrefix = 16;
  // Recurrent models: a sequence's state is stored in the prompt cache each time its length reaches
  // a multiple of this (prefill chunks end there), so a later prompt sharing a prefix resumes from
  // the last such checkpoint inside it. A state is 19 MiB for Qwen3.5-0.8B: a denser grid would
  // copy more than the compute it saves.
  static constexpr int kCheckpointEvery = 256;

  int ctx() const { return ctx_; }
  int slots() const { return static_cast<int>(seqs_.size()); }
  int active() const;
  int64_t kv_bytes() const;  // every slot's cache
  int64_t recurrent_state_bytes() const;  // every slot's recurrent state (part of kv_bytes)
  // Ids whose K/V are in slot 0's cache, positions [0, size) (the slot forward() uses).
  std::span<const int> cached_tokens() const;
  const PromptCache::Stats& prompt_cache_stats() const { return pcache_.stats(); }

  // Places `req` in a free slot (the one holding the longest prefix of its prompt) and returns true;
  // false when every slot is busy. on_token runs for every generated token (false stops it,
  // kAborted); on_done runs exactly once, from start() itself when max_tokens is 0 or else from a
  // later step(), with the result or the error that failed this sequence. Throws as validate_request.
  bool start(GenerateRequest req, TokenCallback on_token, DoneCallback on_done);

  // One batched forward pass over the running sequences (decodes first, then prefill chunks in
  // arrival order within max_batch rows), then sampling and callbacks. A cancelled sequence ends
  // before the pass; a failed pass fails the sequences in it and no other. Returns active() > 0.
  bool step();

  // Runs one request to its end (start, then step until it finishes; other started sequences
  // advance too). Throws as validate_request, or the error that failed it.
  GenerateResult generate(const GenerateRequest& req, const TokenCallback& on_token);

  // See Engine::forward; on slot 0, which must not be running. Throws Error(kInvalidArgument) when
  // start_pos > cached tokens, an id is out of range, or the tokens do not fit the context.
  std::span<const float> forward(std::span<const int> tokens, int start_pos, bool all_logits);

 private:
  struct Sequence;
  using Clock = std::chrono::steady_clock;

  static std::vector<std::unique_ptr<Sequence>> make_slots(const ModelConfig& cfg, int ctx, int max_batch,
                                                           DType kv_type, int n_seqs);
  Sequence* choose_slot(std::span<const int> prompt);
  int reuse_prefix(Sequence& s, std::span<const int> prompt);
  int reuse_checkpoint(Sequence& s, std::span<const int> prompt, int common);
  void plan_step();
  void sample_next(Sequence& s, std::span<const float> logits);
  void finish(Sequence& s, FinishReason why);
  void fail(Sequence& s, const std::exception& e);
  bool is_stop(int id, const GenerateRequest& req) const;
  bool batch_cancelled() const;

  Transformer& tf_;
  const ModelConfig& cfg_;
  int ctx_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
  PromptCache pcache_;
  Activations acts_;
  uint64_t clock_ = 0;  // orders starts (FIFO prefill) and slot use (LRU choice)
  // One step's plan, reserved at construction: rows' tokens, per-sequence row ranges and the
  // sequence of each, the rows that sample and their logits.
  std::vector<int> tokens_;
  std::vector<SeqRows> rows_;
  std::vector<Sequence*> row_seq_;
  std::vector<int> logit_rows_;
  std::vector<Sequence*> logit_seq_;
  std::vector<float> logits_;        // [n_seqs][vocab]
  std::function<bool()> abort_;      // every sequence of the planned pass is cancelled
  std::vector<float> all_logits_;    // forward(all_logits) only (test path)
};

}  // namespace anelm::engine
