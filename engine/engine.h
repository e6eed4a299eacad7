// The engine facade: the only type the server uses. Loads a model once, owns weights, KV cache and
// threads, and generates token ids. Not thread-safe: exactly one thread (the server's worker) drives it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/sampler.h"
#include "engine/tensor.h"

namespace anelm::engine {

enum class Backend { kCpu, kAne };
const char* backend_name(Backend b);

struct EngineOptions {
  std::string model_path;                 // GGUF file or HuggingFace model directory
  Backend backend = Backend::kCpu;
  int threads = 0;                        // compute threads; 0: all hardware threads
  int ctx = 0;                            // KV cache length in tokens; 0: min(model max_ctx, 4096)
  std::optional<DType> weights;           // re-quantize weights at load (f16, q8_0, q4_0); nullopt: as stored
  std::string ane_cache_dir;              // compiled ANE program cache; empty: no disk cache
  DType kv_type = DType::kF16;            // KV cache storage: kF16 (as llama.cpp) or kF32
  int max_batch = 0;                      // prefill tokens per forward chunk; 0: 512 (llama.cpp n_ubatch)
};

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

struct GenerateRequest {
  std::vector<int> prompt;                  // must be non-empty
  int max_tokens = 16;                      // > 0; 0: until the context is full (FinishReason::kContext)
  SamplingParams sampling;
  bool ignore_eos = false;
  std::vector<int> extra_stop_ids;          // stop tokens besides the model's EOG ids
  int top_logprobs = 0;                     // N alternatives per step (0: none)
  const std::atomic<bool>* cancel = nullptr;  // optional; raised by another thread
};

struct GenerateResult {
  std::vector<int> ids;          // generated ids (stop token excluded)
  FinishReason finish = FinishReason::kLength;
  int prompt_tokens = 0;
  int cached_tokens = 0;         // prompt tokens reused from the previous request's KV cache
  double prefill_ms = 0, decode_ms = 0;
  double prefill_tok_s = 0, decode_tok_s = 0;
};

struct BackendStats {
  std::string backend;          // "cpu", "ane (simulator)", "ane"
  std::string isa;              // CPU kernel ISA in use
  int ane_programs = 0;         // compiled ANE programs
  int ane_cache_hits = 0;
  double ane_compile_ms = 0;
  int64_t weight_bytes = 0;
  int64_t kv_bytes = 0;
};

// Progress during load: (stage, done, total).
using LoadProgress = std::function<void(const std::string&, int64_t, int64_t)>;

class Engine {
 public:
  static std::unique_ptr<Engine> load(const EngineOptions& opts, const LoadProgress& progress = {});
  virtual ~Engine() = default;

  virtual const ModelConfig& config() const = 0;
  virtual int ctx() const = 0;
  virtual BackendStats stats() const = 0;

  // Prefill (reusing the longest prefix cached from the previous call), then sample until a stop.
  // Throws Error(kInvalidArgument) when prompt + max_tokens cannot fit or an id is out of range.
  virtual GenerateResult generate(const GenerateRequest& req, const TokenCallback& on_token) = 0;

  // Low level, for tests and benchmarks: run `tokens` at positions [start_pos, start_pos + n)
  // (the cache must hold positions < start_pos); returns logits of the last token, or of every
  // token ([n][vocab]) when all_logits. The span is valid until the next call.
  virtual std::span<const float> forward(std::span<const int> tokens, int start_pos,
                                         bool all_logits = false) = 0;
};

}  // namespace anelm::engine
