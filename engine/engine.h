// The engine facade: the only type the server uses. Loads a model once, owns weights, KV cache and
// threads, and generates token ids on the CPU, with the ANE backend behind it when asked. Not thread-safe: exactly one thread (the server's worker) drives it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/embedding.h"
#include "engine/generation.h"
#include "engine/model_config.h"
#include "engine/tensor.h"

namespace anelm::engine {

enum class Backend { kCpu, kAne };
struct AneBackendOptions;  // engine/ane/ane_executor.h
const char* backend_name(Backend b);

// The types weight matrices can be re-quantized to at load (--weights): f16 and every block type;
// f32 and bf16 would only grow them. Names in any case; nullopt for anything else.
std::optional<DType> weights_type_from_name(std::string_view name);
inline constexpr const char* kWeightsTypeNames =
    "f16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k or iq4_xs";

struct EngineOptions {
  std::string model_path;                 // GGUF file or HuggingFace model directory
  Backend backend = Backend::kCpu;
  int threads = 0;                        // compute threads; 0: all hardware threads
  int ctx = 0;                            // KV cache length in tokens; 0: min(model max_ctx, 4096)
  std::optional<DType> weights;           // re-quantize weight matrices at load (weights_type_from_name); nullopt: as stored
  std::string ane_cache_dir;              // compiled ANE program cache; empty: no disk cache
  bool ane_fp32_residual = false;         // --backend ane: residual stream kept in fp32 on the CPU
  DType kv_type = DType::kF16;            // KV cache storage: kF16 (as llama.cpp) or kF32
  int max_batch = 0;                      // prefill tokens per forward chunk; 0: 512 (llama.cpp n_ubatch)
  int64_t prompt_cache_bytes = 0;         // KV snapshots of earlier sequences reused across requests; 0: off
  int parallel = 1;                       // sequences decoded together (continuous batching), each with ctx KV
  // Copy the mapped weights into huge-page memory on a background thread, serving from the mapping
  // meanwhile (a server is ready at once); false: copy before load returns (benchmarks, tools).
  bool background_residency = false;
  // Allocate the embedding scratch (a ctx-position KV cache and a batch of activations) at load:
  // the server's --embeddings. An embedding model (pooling_type in the file) always does; otherwise
  // the first embed_start() allocates it.
  bool embeddings = false;
  // --reranking: the token ids of a reranker's labels ("yes", "no": load_model_bundle looks them up)
  // for a Qwen3 reranker stored as a causal LM (derive_rerank_head); empty: the file decides.
  std::vector<int> rerank_labels;
  // Tests only: adjusts the ANE backend's options (e.g. runs the device self-check on the
  // simulator, or injects a faulty "device"); empty in production.
  std::function<void(AneBackendOptions&)> ane_test_options;
};

struct BackendStats {
  std::string backend;          // "cpu", "ane (simulator)", "ane"
  std::string isa;              // CPU kernel ISA in use
  int ane_programs = 0;         // compiled ANE programs
  int ane_cache_hits = 0;
  double ane_compile_ms = 0;
  int64_t weight_bytes = 0;
  int64_t kv_bytes = 0;         // every sequence slot's cache (K/V and any recurrent state)
  int64_t recurrent_state_bytes = 0;  // of which recurrent (DeltaNet) state: fixed per slot, not per token
  int parallel = 1;             // sequence slots (EngineOptions::parallel)
  int64_t prompt_cache_budget_bytes = 0;  // EngineOptions::prompt_cache_bytes
  int64_t prompt_cache_bytes = 0;         // held now (<= budget)
  int prompt_cache_entries = 0;
  int64_t prompt_cache_hits = 0;          // requests whose prefix came from a stored entry
  double ane_self_check_rel_error = -1;   // --backend ane start-up self-check, device vs simulator
                                          // (also when it declined the ANE); -1: not run
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

  // validate_request against this model and context; const and safe from any thread, so a server
  // can refuse a request before queueing it.
  void validate(const GenerateRequest& req) const { validate_request(req, config(), ctx()); }

  // Prefill (reusing the longest prefix held by the previous call's KV or by the prompt cache),
  // then sample until a stop.
  // Throws as validate() for a request that does not fit.
  virtual GenerateResult generate(const GenerateRequest& req, const TokenCallback& on_token) = 0;

  // Continuous batching (see Generator): start() places a request in a free sequence slot (false
  // when all parallel() slots run; throws as validate()); step() runs one batched forward pass over
  // every started sequence and returns whether any still runs. on_done reports each end exactly once.
  virtual int parallel() const = 0;
  virtual bool start(GenerateRequest req, TokenCallback on_token, DoneCallback on_done) = 0;
  virtual bool step() = 0;

  // Embeddings (see Embedder): embed_start() queues a request (throws as validate_embed_request),
  // embed_step() runs one batched forward pass over queued inputs and returns whether any remain.
  // on_done reports each request exactly once, from embed_step(). Separate from start()/step():
  // the driver alternates them. The defaults throw Error(kUnsupported).
  void validate(const EmbedRequest& req) const { validate_embed_request(req, config(), ctx()); }
  virtual void embed_start(EmbedRequest req, EmbedDoneCallback on_done);
  virtual bool embed_step();
  // embed_start, then embed_step until the request ends (tests, benchmarks); throws its error.
  EmbedResult embed(EmbedRequest req);

  // Low level, for tests and benchmarks: run `tokens` at positions [start_pos, start_pos + n)
  // (the cache must hold positions < start_pos); returns logits of the last token, or of every
  // token ([n][vocab]) when all_logits. The span is valid until the next call.
  virtual std::span<const float> forward(std::span<const int> tokens, int start_pos,
                                         bool all_logits = false) = 0;
};

}  // namespace anelm::engine
