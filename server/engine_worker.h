// The single thread that owns the Engine: a bounded job queue in, events out per job. Up to
// engine.parallel() jobs run at once, advanced together by the engine's batched steps (continuous
// batching); queued jobs start in arrival order as slots free up.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
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

  engine::Engine& engine_;
  const size_t parallel_;
  const size_t max_queue_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;        // job arrived or stopping
  std::condition_variable idle_cv_;   // queue drained and nothing running
  std::deque<Job> queue_;
  std::vector<std::shared_ptr<EventChannel>> running_;  // channels of the started jobs
  PromptCacheSnapshot prompt_cache_;
  bool accepting_ = true;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace anelm::server
