// Shared server state: options, lifecycle (loading/ready/draining), the model runtime and metrics.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "engine/engine.h"
#include "server/chat_prompt.h"
#include "server/output_constraint.h"
#include "server/engine_worker.h"
#include "server/metrics.h"
#include "server/model_file_info.h"
#include "server/server_options.h"
#include "tokenizer/tokenizer.h"

namespace anelm::server {

enum class ServerState { kLoading, kReady, kDraining, kFailed };
const char* server_state_name(ServerState s);

// What handlers need from a loaded model. Pointers are non-owning and outlive the context's use.
struct ModelRuntime {
  engine::Engine* engine = nullptr;
  const tok::Tokenizer* tokenizer = nullptr;
  std::string model_id;
  ModelFileInfo file;                      // the served file's format, size, parameters (model listings)
  std::shared_ptr<const ChatPrompt> chat;  // null: the model's own template (ChatPrompt::for_model)
  std::shared_ptr<const ConstraintVocab> constraint_vocab;  // null: built from the tokenizer
  // The "infill" sampler's view of a vocabulary with FIM markers (set_ready); null otherwise.
  std::shared_ptr<const engine::InfillVocab> infill_vocab;
  std::vector<int> preserved_tokens;      // the chat markers kept as text (set_ready: preserved_token_ids)
  std::string preset;                     // model preset name ("" for none)
  engine::SamplingParams sampling;        // defaults for fields a request leaves out (from the preset)
};

class ServerContext {
 public:
  explicit ServerContext(ServerOptions opts);
  ~ServerContext();

  const ServerOptions& options() const { return opts_; }
  ServerState state() const { return state_.load(std::memory_order_acquire); }
  Metrics& metrics() { return metrics_; }
  double uptime_s() const;

  // Loading -> ready: captures stats and starts the engine worker. Call once.
  void set_ready(ModelRuntime rt);
  void set_failed(const std::string& message);
  // Ready -> draining: refuses new work, lets in-flight jobs finish for `grace`, cancels the rest.
  void drain(std::chrono::milliseconds grace);

  void set_progress(const std::string& stage, double fraction);
  std::string progress_stage() const;
  double progress_fraction() const;
  std::string failure() const;

  // Valid after set_ready (state ready or draining).
  const ModelRuntime& model() const { return rt_; }
  const tok::Tokenizer& tokenizer() const { return *rt_.tokenizer; }
  EngineWorker& worker() { return *worker_; }
  int n_ctx() const { return n_ctx_; }
  const engine::BackendStats& backend_stats() const { return stats_; }

 private:
  ServerOptions opts_;
  std::atomic<ServerState> state_{ServerState::kLoading};
  Metrics metrics_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  ModelRuntime rt_;
  std::unique_ptr<EngineWorker> worker_;
  int n_ctx_ = 0;
  engine::BackendStats stats_;
  mutable std::mutex mu_;  // guards the progress and failure strings
  std::string stage_ = "starting", failure_;
  double fraction_ = 0;
};

}  // namespace anelm::server
