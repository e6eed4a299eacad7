// Engine facade: Engine::load wires loader -> thread pool -> transformer -> generator for the CPU backend.
#include "engine/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <optional>
#include <string>
#include <thread>

#include "engine/ane/ane_executor.h"
#include "engine/error.h"
#include "engine/families.h"
#include "engine/generator.h"
#include "engine/kernels/kernels.h"
#include "engine/model_loader.h"
#include "engine/thread_pool.h"
#include "engine/transformer.h"
#include "engine/weight_residency.h"

namespace anelm::engine {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::kCpu: return "cpu";
    case Backend::kAne: return "ane";
  }
  return "unknown";
}

std::optional<DType> weights_type_from_name(std::string_view name) {
  const std::optional<DType> t = dtype_from_name(name);
  if (t && (*t == DType::kF16 || dtype_is_quantized(*t))) return t;
  return std::nullopt;
}

void Engine::embed_start(EmbedRequest, EmbedDoneCallback) {
  throw Error(ErrorKind::kUnsupported, "this engine does not compute embeddings");
}

bool Engine::embed_step() { return false; }

EmbedResult Engine::embed(EmbedRequest req) {
  EmbedResult out;
  std::optional<Error> err;
  bool done = false;
  embed_start(std::move(req), [&](EmbedResult&& r, const Error* e) {
    out = std::move(r);
    if (e) err = *e;
    done = true;
  });
  while (!done && embed_step()) {
  }
  if (err) throw *err;
  if (!done) throw Error(ErrorKind::kInternal, "the embedding request ended without a result");
  return out;
}

namespace {

constexpr int kDefaultCtx = 4096;
constexpr int kDefaultMaxBatch = 512;

int resolve_ctx(const EngineOptions& opts, const ModelConfig& cfg) {
  if (opts.ctx < 0) throw Error(ErrorKind::kInvalidArgument, "ctx must be >= 0, got " + std::to_string(opts.ctx));
  if (opts.ctx > 0) return opts.ctx;
  return cfg.max_ctx > 0 ? std::min(cfg.max_ctx, kDefaultCtx) : kDefaultCtx;
}

// What llama.cpp decides per run context at load: Phi-3's LongRoPE factors (before any executor or
// activation buffer reads the config).
int apply_ctx(LoadedModel& m, int ctx) {
  // Learned absolute positions (GPT-2) exist for the trained context only: a longer run context is
  // clamped to it, so a prompt beyond it is refused as too long for the context.
  if (m.config.learned_positions && ctx > m.config.max_ctx) {
    spdlog::warn("ctx {} clamped to {}: {} has learned positions for {} tokens only", ctx, m.config.max_ctx,
                 arch_name(m.config.arch), m.config.max_ctx);
    ctx = m.config.max_ctx;
  }
  select_rope_factors(m.config, ctx);
  return ctx;
}

int resolve_threads(const EngineOptions& opts) {
  if (opts.threads < 0) {
    throw Error(ErrorKind::kInvalidArgument, "threads must be >= 0, got " + std::to_string(opts.threads));
  }
  if (opts.threads > 0) return opts.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

// --backend ane: compiled-program cache from the options; re-quantisation to any block type asks
// for int8 ANE weights (per output channel), anything else bakes fp16.
AneBackendOptions ane_options(const EngineOptions& opts) {
  AneBackendOptions o;
  o.cache_dir = opts.ane_cache_dir;
  o.fp32_residual = opts.ane_fp32_residual;
  o.int8_weights = opts.weights && dtype_is_quantized(*opts.weights);
  if (opts.ane_test_options) opts.ane_test_options(o);
  return o;
}

// Loading produces the final weights once: mapped, re-quantised when asked, then made resident.
std::unique_ptr<LoadedModel> load_resident(const EngineOptions& opts, ThreadPool& pool,
                                           const LoadProgress& progress) {
  if (progress) progress("load", 0, 1);
  // Per tensor while binding and converting (below 100% until the weights are resident).
  ConvertProgress each;
  if (progress) each = [&](int64_t done, int64_t total) { progress("load", done, total + 1); };
  auto model = load_model(opts.model_path, opts.weights, each);
  if (!opts.rerank_labels.empty()) derive_rerank_head(*model, opts.rerank_labels);
  if (!opts.background_residency) make_resident(*model, pool);
  if (progress) progress("load", 1, 1);
  return model;
}

// The one Engine: owns the loaded model, the compute pool, the transformer and one sequence; the
// layers run on the CPU, or on the ANE when the ANE backend installed its executors on them.
class LocalEngine final : public Engine {
 public:
  LocalEngine(const EngineOptions& opts, const LoadProgress& progress)
      : pool_(resolve_threads(opts)),
        model_(load_resident(opts, pool_, progress)),
        ctx_(apply_ctx(*model_, resolve_ctx(opts, model_->config))),
        tf_(model_->config, model_->weights, pool_, kernels::active_kernels()),
        gen_(tf_, ctx_, opts.max_batch > 0 ? std::min(opts.max_batch, ctx_) : std::min(kDefaultMaxBatch, ctx_),
             opts.kv_type, pool_.size(), opts.prompt_cache_bytes, opts.parallel),
        // An encoder's input runs whole in one pass (bidirectional attention): any that fits the context.
        max_batch_(!model_->config.causal ? ctx_
                   : opts.max_batch > 0   ? std::min(opts.max_batch, ctx_)
                                          : std::min(kDefaultMaxBatch, ctx_)),
        kv_type_(opts.kv_type) {
    if (opts.backend == Backend::kAne) {
      // The layers apply RoPE in every attention layer with 1/sqrt(d) scores and have no
      // embedding/residual multipliers. Per-head q/k norms run on the CPU between the programs
      // (Qwen3, Qwen3.5: tested against the CPU).
      const ModelConfig& c = model_->config;
      const bool multipliers = c.embedding_scale != 1.0f || c.residual_scale != 1.0f || c.attention_scale != 0.0f;
      // Phi-3 binds views the programs could read, but its fp16 logits on the tiny file (LongRoPE's
      // attention factor scales q and k) stayed 1.2x outside the ANE tolerance: not served there yet.
      const bool phi3 = c.arch == Arch::kPhi3;
      // GPT-2 and Gemma 3 have programs of their own (engine/ane/ane_families.h): their
      // embedding scale, attention scale, NoPE and windowed layers run on the CPU between them.
      const bool family = c.arch == Arch::kGpt2 || c.arch == Arch::kGemma3;
      const bool encoder = !c.causal;  // the programs' attention is causal
      const bool gemma = c.post_norms || c.ffn_act != FfnAct::kSilu || !c.swa_layers.empty();
      if (encoder || (!family && (multipliers || !c.nope_layers.empty() || phi3 || gemma))) {
        ane_declined_ = "the ANE programs do not implement " + std::string(arch_name(c.arch)) +
                        (encoder       ? "'s bidirectional attention"
                         : gemma       ? "'s layers (post-norms, GeGLU, sliding windows)"
                         : phi3        ? " (not validated: fused tensors, LongRoPE)"
                         : multipliers ? "'s multipliers"
                                       : "'s NoPE layers");
        spdlog::warn("--backend ane declined: {}; serving on the CPU", ane_declined_);
      } else {
        ane_ = make_ane_backend(model_->config, model_->weights, tf_, pool_, ane_options(opts));
        ane_self_check_rel_error_ = ane_->stats().self_check_rel_error;
        if (!ane_->stats().declined.empty()) {  // the device disagrees with the simulator
          ane_declined_ = ane_->stats().declined;
          ane_.reset();  // hands every layer and the head back to the CPU executors
          spdlog::warn("--backend ane declined: {}; serving on the CPU", ane_declined_);
        }
      }
    }
    if (opts.embeddings || model_->config.pooling != Pooling::kNone) make_embedder();
    if (opts.background_residency) {
      copy_ = std::make_unique<ResidentCopy>(*model_);
      copier_ = std::thread([this] {
        const auto t0 = std::chrono::steady_clock::now();
        copy_->copy(nullptr);  // one thread: the compute pool belongs to requests
        spdlog::info("weights copied to resident memory in {} ms (in use from the next request)",
                     std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
      });
    }
  }

  ~LocalEngine() override {
    if (copier_.joinable()) copier_.join();
  }

  const ModelConfig& config() const override { return model_->config; }
  int ctx() const override { return ctx_; }

  BackendStats stats() const override {
    BackendStats s;
    s.backend = backend_name(Backend::kCpu);
    s.isa = kernels::isa_name(tf_.kernels().isa);
    s.weight_bytes = model_->weight_bytes;
    s.kv_bytes = gen_.kv_bytes();
    s.recurrent_state_bytes = gen_.recurrent_state_bytes();
    s.parallel = gen_.slots();
    const PromptCache::Stats& pc = gen_.prompt_cache_stats();
    s.prompt_cache_budget_bytes = pc.budget_bytes;
    s.prompt_cache_bytes = pc.bytes;
    s.prompt_cache_entries = pc.entries;
    s.prompt_cache_hits = pc.hits;
    if (!ane_declined_.empty()) s.backend = "cpu (ane declined: " + ane_declined_ + ")";
    s.ane_self_check_rel_error = ane_self_check_rel_error_;
    if (ane_) {
      const AneBackendStats& a = ane_->stats();
      s.backend = a.backend;
      s.ane_programs = a.programs;
      s.ane_cache_hits = a.cache_hits;
      s.ane_compile_ms = a.build_ms + a.compile_ms;
    }
    return s;
  }

  GenerateResult generate(const GenerateRequest& req, const TokenCallback& on_token) override {
    adopt_resident_copy();
    return gen_.generate(req, on_token);
  }

  int parallel() const override { return gen_.slots(); }

  bool start(GenerateRequest req, TokenCallback on_token, DoneCallback on_done) override {
    return gen_.start(std::move(req), std::move(on_token), std::move(on_done));
  }

  bool step() override {
    adopt_resident_copy();
    return gen_.step();
  }

  void embed_start(EmbedRequest req, EmbedDoneCallback on_done) override {
    if (!emb_) make_embedder();
    emb_->start(std::move(req), std::move(on_done));
  }

  bool embed_step() override {
    if (!emb_) return false;
    adopt_resident_copy();
    return emb_->step();
  }

  std::span<const float> forward(std::span<const int> tokens, int start_pos, bool all_logits) override {
    adopt_resident_copy();
    return gen_.forward(tokens, start_pos, all_logits);
  }

 private:
  ThreadPool pool_;
  std::unique_ptr<LoadedModel> model_;  // the one owner of the weights every executor reads
  int ctx_;
  Transformer tf_;
  Generator gen_;
  int max_batch_;
  DType kv_type_;
  std::unique_ptr<Embedder> emb_;  // created at load or by the first embedding request

  // Inputs share the scratch cache at distinct bases only on the CPU layers (the ANE programs read
  // each sequence's cache from position 0).
  void make_embedder() {
    // Packing puts inputs side by side in one cache; a recurrent state serves one sequence only.
    emb_ = std::make_unique<Embedder>(tf_, ctx_, max_batch_, kv_type_, pool_.size(),
                                      /*pack=*/!ane_ && !model_->config.recurrent());
  }
  // Between forward passes (sequences may be running: their KV never points at weights): point the
  // views at the finished background copy.
  void adopt_resident_copy() {
    if (!copy_ || !copy_->done()) return;
    copier_.join();
    copy_->adopt();
    copy_.reset();
  }

  std::unique_ptr<AneBackend> ane_;  // --backend ane: programs + executors installed on tf_
  std::string ane_declined_;  // why --backend ane runs on the CPU; empty otherwise
  double ane_self_check_rel_error_ = -1;  // AneBackendStats::self_check_rel_error; -1: not run
  std::unique_ptr<ResidentCopy> copy_;  // background_residency: the copy in flight, until adopted
  std::thread copier_;
};

}  // namespace

std::unique_ptr<Engine> Engine::load(const EngineOptions& opts, const LoadProgress& progress) {
  if (opts.prompt_cache_bytes < 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "prompt_cache_bytes must be >= 0, got " + std::to_string(opts.prompt_cache_bytes));
  }
  if (opts.parallel < 1) {
    throw Error(ErrorKind::kInvalidArgument, "parallel must be >= 1, got " + std::to_string(opts.parallel));
  }
  if (opts.kv_type != DType::kF16 && opts.kv_type != DType::kF32) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("kv_type must be f16 or f32, got ") + dtype_name(opts.kv_type));
  }
  try {
    return std::make_unique<LocalEngine>(opts, progress);
  } catch (const std::bad_alloc&) {
    // Anything the loader, the transformer or the generator allocates (the KV cache reports itself).
    throw Error(ErrorKind::kResourceExhausted,
                "not enough memory to load '" + opts.model_path + "'" +
                    (opts.ctx > 0 ? " with --ctx " + std::to_string(opts.ctx) : std::string()) +
                    (opts.weights ? std::string(" and --weights ") + dtype_name(*opts.weights) : std::string()));
  }
}

}  // namespace anelm::engine
