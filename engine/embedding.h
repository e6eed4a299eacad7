// Embeddings: the forward pass without the LM head, pooled (mean, first or last token of the final
// hidden states after the output norm) per input. Inputs of any number of requests are packed into
// one batched forward pass of up to max_batch rows, each input its own causal sequence in a shared
// scratch KV cache (no attention between inputs); long inputs run in chunks across passes.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/activations.h"
#include "engine/kv_cache.h"
#include "engine/layer_executor.h"
#include "engine/model_config.h"

namespace anelm {
class Error;
}

namespace anelm::engine {

class Transformer;

// Caps a request must respect (the server checks them first, with field names).
struct EmbedLimits {
  static constexpr int kMaxInputs = 2048;  // as OpenAI's array limit
};

struct EmbedRequest {
  std::vector<std::vector<int>> inputs;       // token ids per input; each non-empty and <= ctx tokens
  // kMean, kCls or kLast; kRank needs a reranker (its classifier head); kNone is refused.
  Pooling pooling = Pooling::kMean;
  const std::atomic<bool>* cancel = nullptr;  // optional; raised by another thread
};

struct EmbedResult {
  int dims = 0;                 // d_model; kRank: n_cls_out
  std::vector<float> vectors;   // [inputs][dims], pooled but not normalised (llama.cpp's raw output);
                                // kRank: the label probabilities, [0] the relevance score
  int prompt_tokens = 0;        // sum of the inputs' lengths
  double ms = 0;                // from start to the last input's pass
};

// Called once per request: the result, or the error that failed it (result then empty).
using EmbedDoneCallback = std::function<void(EmbedResult&& result, const Error* error)>;

// Throws Error(kInvalidArgument) for no inputs, too many, an empty input, an id out of range or
// pooling kNone, and Error(kContextLength) naming input[i] and its token count when it exceeds ctx.
void validate_embed_request(const EmbedRequest& req, const ModelConfig& cfg, int ctx);

// v /= ||v||_2 (left as is when its norm is 0), as llama.cpp's embd_normalize 2.
void l2_normalize(std::span<float> v);

// Not thread-safe: one driver thread (the engine's). Buffers (activations of max_batch rows, a
// scratch cache of ctx positions) are allocated once at construction; a request allocates only its
// result at start().
class Embedder {
 public:
  // pack: several inputs per pass at distinct cache bases (needs every layer on the CPU executor,
  // the only one that honours SeqRows::kv_base); false runs one input at a time.
  Embedder(Transformer& tf, int ctx, int max_batch, DType kv_type, int n_threads, bool pack);
  ~Embedder();

  int ctx() const { return kv_.ctx(); }
  bool pending() const { return !jobs_.empty(); }

  // Queues `req` (throws as validate_embed_request); on_done runs from a later step().
  void start(EmbedRequest req, EmbedDoneCallback on_done);

  // One forward pass over the next rows of the queued inputs (oldest first, up to max_batch rows),
  // then pooling; ends the requests whose last input completed and the cancelled ones. Returns
  // pending().
  bool step();

  // start() then step() until this request ends; throws its error.
  EmbedResult embed(EmbedRequest req);

 private:
  struct Job;
  // An input in progress: positions [0, done) of input `input` of `job` are in the cache from `base`.
  struct Lane {
    Job* job = nullptr;
    int input = 0;
    int len = 0;
    int done = 0;
    int base = 0;
  };

  void plan();
  void pool(const Lane& lane, const SeqRows& rows);
  void finish_jobs();

  Transformer& tf_;
  const ModelConfig& cfg_;
  bool pack_;
  KvCache kv_;
  Activations acts_;
  std::deque<std::unique_ptr<Job>> jobs_;
  std::vector<Lane> lanes_;
  int kv_top_ = 0;  // cache positions handed to lanes since the cache was last empty
  // One pass's plan, reserved at construction.
  std::vector<int> tokens_;
  std::vector<SeqRows> rows_;
  std::vector<int> row_lane_;  // lane index of each rows_ entry
  std::function<bool()> abort_;
};

}  // namespace anelm::engine
