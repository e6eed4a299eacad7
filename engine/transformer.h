// The CPU forward pass over a batch of tokens: embedding, one LayerExecutor call per layer, final
// norm and LM head. Architecture differences (qkv bias, tied embeddings, RoPE layout) are config flags.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/activations.h"
#include "engine/cpu_executor.h"
#include "engine/kernels/kernels.h"
#include "engine/kv_cache.h"
#include "engine/layer_executor.h"
#include "engine/model_config.h"
#include "engine/thread_pool.h"
#include "engine/weights.h"

namespace anelm::engine {

// Computes out[n][vocab] = lm_head . final_rmsnorm(x[t]) for n residual rows x [n][d_model] on
// another device (the ANE's LM-head chunks). Set on a Transformer to replace its CPU head.
class HeadExecutor {
 public:
  virtual ~HeadExecutor() = default;
  virtual void logits(const float* x, int n, float* out) = 0;
};

// One forward pass of continuous batching: rows [0, n) are tokens of one or more sequences (every
// running decode plus prefill chunks), n <= acts.max_batch. Logits are computed for `logit_rows`
// only (the last row of each sequence that samples next), into logits[i][vocab]. With `logits` set,
// the pass's hidden states are not kept (the last layer's FFN runs for logit_rows alone); a caller
// that reads acts.x afterwards (embeddings, every row's logits) passes logits = nullptr.
struct BatchStep {
  std::span<const int> tokens;
  std::span<const SeqRows> seqs;     // in row order, covering [0, tokens.size())
  std::span<const int> logit_rows;   // ascending
  float* logits = nullptr;
};

// Const model + compute resources; per-sequence state (KvCache, Activations) is passed in.
// Not thread-safe: one driver thread calls forward() at a time.
class Transformer {
 public:
  // inline_macs: work below which kernels run on the caller (see parallel_linear); 0 forces the pool.
  Transformer(const ModelConfig& cfg, const ModelWeights& weights, ThreadPool& pool,
              const kernels::KernelTable& kernels, int64_t inline_macs = kDefaultInlineMacs);

  const ModelConfig& config() const { return cfg_; }
  const kernels::KernelTable& kernels() const { return k_; }
  int64_t inline_macs() const { return inline_macs_; }

  // Hands layer `layer` to another executor (nullptr: back to the CPU). Not owned.
  void set_layer_executor(int layer, LayerExecutor* exec);
  const LayerExecutor& layer_executor(int layer) const { return *layers_[static_cast<size_t>(layer)]; }
  // Hands the final norm + LM head to another executor (nullptr: back to the CPU). Not owned.
  void set_head_executor(HeadExecutor* head) { head_ = head; }

  // Runs tokens at positions [pos, pos + n) in chunks of acts.max_batch tokens (prefill is
  // matrix-matrix; n == 1 is decode), writing their K/V. On completion acts.logits holds the last
  // token's logits and, when all_logits is non-null, all_logits[n][vocab] every token's.
  // `cancel` is polled between layers and chunks; returns the number of tokens whose K/V are
  // complete (n, or fewer when cancelled). Token ids must be valid and pos + n <= kv.ctx().
  int forward(std::span<const int> tokens, int pos, KvCache& kv, Activations& acts,
              float* all_logits = nullptr, const std::atomic<bool>* cancel = nullptr);

  // Runs one batch (see BatchStep). `abort` (may be empty) is polled between layers: when it returns
  // true the pass stops and step returns false, leaving the batch's K/V rows incomplete.
  bool step(const BatchStep& b, Activations& acts, const std::function<bool()>& abort = {});

  // out[i][d_model] = final_rmsnorm(x[i]) for n consecutive residual rows, on the CPU (also when a
  // head executor is set): the hidden states embeddings are pooled from, without the LM head.
  void output_norm(const float* x, int n, float* out) const;

  // out[n_cls_out] = softmax(cls_out . final_rmsnorm(x) + cls_out_b) for one residual row: a
  // reranker's label probabilities (llama.cpp's rank pooling for Qwen3; out[0] is "yes"). Uses
  // acts.xb row 0 and the quantisation scratch, free once the layers ran.
  void classify(Activations& acts, const float* x, float* out);

 private:
  // out[i][vocab] = lm_head . rmsnorm(x[i]) for the n rows of x.
  void logits(Activations& acts, const float* x, int n, float* out);
  // GPT-2: x[t] += pos_embd[position of row t] for every row of the batch.
  void add_positions(const BatchStep& b, Activations& acts);
  // BERT: token type 0 added and the embeddings' LayerNorm, on the n rows of acts.x.
  void embed_norm(int n, Activations& acts);

  const ModelConfig& cfg_;
  const ModelWeights& w_;  // the loaded model's (resident) weights; not owned
  ThreadPool& pool_;
  const kernels::KernelTable& k_;
  int64_t inline_macs_;
  CpuExecutor cpu_;
  std::vector<LayerExecutor*> layers_;  // [n_layers], default &cpu_
  HeadExecutor* head_ = nullptr;        // nullptr: CPU final norm + LM head
};

}  // namespace anelm::engine
