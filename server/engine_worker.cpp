// Engine worker: pops jobs, runs Engine::generate with the job's cancel flag, pushes events.
#include "server/engine_worker.h"

#include <spdlog/spdlog.h>

namespace anelm::server {

namespace {

PromptCacheSnapshot snapshot(const engine::BackendStats& s) {
  return {s.prompt_cache_budget_bytes, s.prompt_cache_bytes, s.prompt_cache_hits, s.prompt_cache_entries};
}

}  // namespace

EngineWorker::EngineWorker(engine::Engine& engine, int max_queue, Metrics* metrics)
    : engine_(engine), max_queue_(static_cast<size_t>(std::max(0, max_queue))), metrics_(metrics),
      prompt_cache_(snapshot(engine.stats())) {
  thread_ = std::thread([this] { run(); });
}

EngineWorker::~EngineWorker() { shutdown(std::chrono::milliseconds(0)); }

EngineWorker::Admit EngineWorker::try_submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return Admit::kStopped;
    // A job may start at once when nothing runs; otherwise it waits in the bounded queue.
    size_t waiting_after = queue_.size() + (running_ ? 1 : 0);
    if (waiting_after > max_queue_) return Admit::kQueueFull;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return Admit::kAccepted;
}

int EngineWorker::queue_depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(queue_.size());
}

int EngineWorker::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_ ? 1 : 0;
}

PromptCacheSnapshot EngineWorker::prompt_cache() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prompt_cache_;
}

void EngineWorker::shutdown(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(mu_);
  accepting_ = false;
  idle_cv_.wait_for(lock, grace, [&] { return queue_.empty() && !running_; });
  for (Job& j : queue_) j.channel->cancel();
  if (running_) running_->cancel();
  stop_ = true;
  lock.unlock();
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void EngineWorker::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
      running_ = job.channel;
    }
    run_job(job);
    const PromptCacheSnapshot pc = snapshot(engine_.stats());  // on this thread: the engine is ours
    {
      std::lock_guard<std::mutex> lock(mu_);
      prompt_cache_ = pc;
      running_.reset();
      if (queue_.empty()) idle_cv_.notify_all();
    }
  }
}

void EngineWorker::run_job(Job& job) {
  EventChannel& ch = *job.channel;
  GenerationEvent done;
  done.kind = GenerationEvent::Kind::kDone;
  if (ch.cancelled()) {  // cancelled while queued: never touches the engine
    done.result.finish = engine::FinishReason::kCancelled;
    done.result.prompt_tokens = static_cast<int>(job.request.prompt.size());
    if (metrics_) metrics_->generations_cancelled++;
    ch.push(std::move(done));
    return;
  }
  job.request.cancel = ch.cancel_flag();
  if (metrics_)
    metrics_->queue_wait.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - job.queued).count());
  try {
    done.result = engine_.generate(job.request, [&](const engine::TokenStep& step) {
      GenerationEvent ev;
      ev.step = step;
      ch.push(std::move(ev));
      return !ch.cancelled();
    });
  } catch (const Error& e) {
    spdlog::warn("generation failed: {} ({})", e.what(), error_kind_name(e.kind()));
    ch.push(GenerationEvent{GenerationEvent::Kind::kError, {}, {}, e.kind(), e.what()});
    return;
  } catch (const std::exception& e) {
    spdlog::error("generation failed: {}", e.what());
    ch.push(GenerationEvent{GenerationEvent::Kind::kError, {}, {}, ErrorKind::kInternal, e.what()});
    return;
  }
  // The callback saw the cancel flag before the engine did: report it as a cancellation.
  if (done.result.finish == engine::FinishReason::kAborted && ch.cancelled())
    done.result.finish = engine::FinishReason::kCancelled;
  if (metrics_) {
    const auto& r = done.result;
    metrics_->generations_total++;
    if (r.finish == engine::FinishReason::kCancelled && !ch.stopped()) metrics_->generations_cancelled++;
    metrics_->prompt_tokens_total += r.prompt_tokens;
    metrics_->prefill_tokens_total += r.prompt_tokens - r.cached_tokens;
    metrics_->completion_tokens_total += static_cast<int64_t>(r.ids.size());
    metrics_->prefill_us_total += static_cast<int64_t>(r.prefill_ms * 1000.0);
    metrics_->decode_us_total += static_cast<int64_t>(r.decode_ms * 1000.0);
    if (!r.ids.empty()) metrics_->time_per_output_token.observe(r.decode_ms / 1000.0 / static_cast<double>(r.ids.size()));
  }
  ch.push(std::move(done));
}

}  // namespace anelm::server
