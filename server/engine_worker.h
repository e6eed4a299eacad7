// The single thread that owns the Engine: a bounded job queue in, events out per job. Up to
// engine.parallel() jobs run at once, advanced together by the engine's batched steps (continuous
// batching); queued jobs start in arrival order as slots free up.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "server/event_channel.h"
#include "server/metrics.h"

namespace anelm::server {

// The engine's prompt-cache figures as of the last finished job (the engine itself is the worker's
// alone, so other threads read this copy).
struct PromptCacheSnapshot {
  int64_t budget_bytes = 0, bytes = 0, hits = 0;
  int entries = 0;
};

struct Job {
  engine::GenerateRequest request;         // cancel is set by the worker to the channel's flag
  std::shared_ptr<EventChannel> channel;   // receives tokens, then exactly one kDone or kError
  std::chrono::steady_clock::time_point queued = std::chrono::steady_clock::now();
};

// One embedding request's answer, from the worker to the HTTP thread that waits for it.
class EmbeddingChannel {
 public:
  void set(engine::EmbedResult result, const Error* error) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      result_ = std::move(result);
      if (error) error_ = *error;
      done_ = true;
    }
    cv_.notify_one();
  }
  // True once the answer is in (then result() / error() may be read); false after `timeout`.
  bool wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return done_; });
  }
  engine::EmbedResult& result() { return result_; }
  const std::optional<Error>& error() const { return error_; }

  void cancel() { cancel_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancel_.load(std::memory_order_relaxed); }
  const std::atomic<bool>* cancel_flag() const { return &cancel_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  engine::EmbedResult result_;
  std::optional<Error> error_;
  std::atomic<bool> cancel_{false};
};

struct EmbeddingJob {
  engine::EmbedRequest request;                // cancel is set by the worker to the channel's flag
  std::shared_ptr<EmbeddingChannel> channel;   // receives exactly one answer
};

class EngineWorker {
 public:
  // `engine` must outlive the worker. max_queue: jobs that may wait besides the running ones.
  EngineWorker(engine::Engine& engine, int max_queue, Metrics* metrics);
  ~EngineWorker();
  EngineWorker(const EngineWorker&) = delete;
  EngineWorker& operator=(const EngineWorker&) = delete;

  enum class Admit { kAccepted, kQueueFull, kStopped };
  // Never blocks: a full queue or a stopped worker refuses the job.
  Admit try_submit(Job job);

  // Embedding requests go to the engine's embedder at once (it batches the inputs of all of them
  // into its passes, alternating with the generation steps); refused beyond max_queue + parallel
  // requests in flight.
  Admit try_submit_embedding(EmbeddingJob job);

  int queue_depth() const;   // waiting jobs
  int active() const;        // running jobs, <= parallel()
  int parallel() const { return parallel_; }
  PromptCacheSnapshot prompt_cache() const;

  // Stops accepting; lets queued and running jobs finish for up to `grace`, then cancels the rest
  // (each gets kDone with FinishReason::kCancelled) and joins the thread. Idempotent.
  void shutdown(std::chrono::milliseconds grace);

 private:
  void run();
  void start_job(Job& job);
  void finish_job(const Job& job, const engine::GenerateResult& result, const Error* error);
  // The job's slot is free again; then its last event goes out.
  void release(const std::shared_ptr<EventChannel>& channel, GenerationEvent last);
  void start_embedding(EmbeddingJob& job);
  void finish_embedding(const std::shared_ptr<EmbeddingChannel>& channel, engine::EmbedResult&& result,
                        const Error* error);
  bool idle() const { return queue_.empty() && running_.empty() && embed_queue_.empty() && embedding_.empty(); }

  engine::Engine& engine_;
  const size_t parallel_;
  const size_t max_queue_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;        // job arrived or stopping
  std::condition_variable idle_cv_;   // queue drained and nothing running
  std::deque<Job> queue_;
  std::vector<std::shared_ptr<EventChannel>> running_;  // channels of the started jobs
  std::deque<EmbeddingJob> embed_queue_;               // not yet handed to the engine
  std::vector<std::shared_ptr<EmbeddingChannel>> embedding_;  // handed to the engine, not answered
  PromptCacheSnapshot prompt_cache_;
  bool accepting_ = true;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace anelm::server
