// Engine worker: starts queued jobs in free engine slots with their cancel flags, steps the engine,
// pushes events.
#include "server/engine_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace anelm::server {

namespace {

PromptCacheSnapshot snapshot(const engine::BackendStats& s) {
  return {s.prompt_cache_budget_bytes, s.prompt_cache_bytes, s.prompt_cache_hits, s.prompt_cache_entries};
}

}  // namespace

EngineWorker::EngineWorker(engine::Engine& engine, int max_queue, Metrics* metrics)
    : engine_(engine), parallel_(static_cast<size_t>(std::max(1, engine.parallel()))),
      max_queue_(static_cast<size_t>(std::max(0, max_queue))), metrics_(metrics),
      prompt_cache_(snapshot(engine.stats())) {
  running_.reserve(parallel_);
  thread_ = std::thread([this] { run(); });
}

EngineWorker::~EngineWorker() { shutdown(std::chrono::milliseconds(0)); }

EngineWorker::Admit EngineWorker::try_submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return Admit::kStopped;
    // A job may start at once while a slot is free; otherwise it waits in the bounded queue.
    const size_t free_slots = parallel_ - std::min(parallel_, running_.size());
    if (queue_.size() >= max_queue_ + free_slots) return Admit::kQueueFull;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return Admit::kAccepted;
}

EngineWorker::Admit EngineWorker::try_submit_embedding(EmbeddingJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return Admit::kStopped;
    if (embed_queue_.size() + embedding_.size() >= max_queue_ + parallel_) return Admit::kQueueFull;
    embed_queue_.push_back(std::move(job));
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
  return static_cast<int>(running_.size());
}

PromptCacheSnapshot EngineWorker::prompt_cache() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prompt_cache_;
}

void EngineWorker::shutdown(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(mu_);
  accepting_ = false;
  idle_cv_.wait_for(lock, grace, [&] { return idle(); });
  for (Job& j : queue_) j.channel->cancel();
  for (auto& ch : running_) ch->cancel();
  for (EmbeddingJob& j : embed_queue_) j.channel->cancel();
  for (auto& ch : embedding_) ch->cancel();
  stop_ = true;
  lock.unlock();
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

// Each turn: start queued jobs while slots are free (outside the lock: start() may finish a job at
// once) and hand new embedding requests to the engine, then one batched step of the engine's
// generations and one pass of its embeddings, so neither waits for the other to finish. Waits only
// when nothing runs.
void EngineWorker::run() {
  std::vector<Job> starting;
  starting.reserve(parallel_);
  std::vector<EmbeddingJob> embedding;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !idle(); });
      if (stop_ && idle()) return;
      while (!queue_.empty() && running_.size() < parallel_) {
        running_.push_back(queue_.front().channel);
        starting.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      for (EmbeddingJob& j : embed_queue_) {
        embedding_.push_back(j.channel);
        embedding.push_back(std::move(j));
      }
      embed_queue_.clear();
    }
    for (Job& job : starting) start_job(job);
    starting.clear();
    for (EmbeddingJob& job : embedding) start_embedding(job);
    embedding.clear();
    bool running = false, embedding_pending = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      running = !running_.empty();
      embedding_pending = !embedding_.empty();
    }
    if (running) engine_.step();
    if (embedding_pending) engine_.embed_step();
  }
}

void EngineWorker::start_embedding(EmbeddingJob& job) {
  const std::shared_ptr<EmbeddingChannel> channel = job.channel;
  if (channel->cancelled()) {  // cancelled while queued: never touches the engine
    const Error cancelled(ErrorKind::kCancelled, "the embedding request was cancelled");
    finish_embedding(channel, {}, &cancelled);
    return;
  }
  job.request.cancel = channel->cancel_flag();
  try {
    engine_.embed_start(std::move(job.request), [this, channel](engine::EmbedResult&& r, const Error* e) {
      finish_embedding(channel, std::move(r), e);
    });
  } catch (const Error& e) {
    finish_embedding(channel, {}, &e);
  } catch (const std::exception& e) {
    const Error internal(ErrorKind::kInternal, e.what());
    finish_embedding(channel, {}, &internal);
  }
}

void EngineWorker::finish_embedding(const std::shared_ptr<EmbeddingChannel>& channel, engine::EmbedResult&& result,
                                    const Error* error) {
  if (error && error->kind() != ErrorKind::kCancelled)
    spdlog::warn("embedding failed: {} ({})", error->what(), error_kind_name(error->kind()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = std::find(embedding_.begin(), embedding_.end(), channel);
    if (it != embedding_.end()) embedding_.erase(it);
    if (idle()) idle_cv_.notify_all();
  }
  channel->set(std::move(result), error);
}

void EngineWorker::start_job(Job& job) {
  EventChannel& ch = *job.channel;
  if (ch.cancelled()) {  // cancelled while queued: never touches the engine
    GenerationEvent done;
    done.kind = GenerationEvent::Kind::kDone;
    done.result.finish = engine::FinishReason::kCancelled;
    done.result.prompt_tokens = static_cast<int>(job.request.prompt.size());
    if (metrics_) metrics_->generations_cancelled++;
    release(job.channel, std::move(done));
    return;
  }
  job.request.cancel = ch.cancel_flag();
  if (metrics_)
    metrics_->queue_wait.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - job.queued).count());
  auto on_token = [channel = job.channel](const engine::TokenStep& step) {
    GenerationEvent ev;
    ev.step = step;
    channel->push(std::move(ev));
    return !channel->cancelled();
  };
  // The callback outlives this call (the engine keeps it until the sequence ends): it holds its own
  // copy of the job's channel and arrival time, never a reference into `job`.
  auto on_done = [this, done_job = Job{{}, job.channel, job.queued}](const engine::GenerateResult& r, const Error* e) {
    finish_job(done_job, r, e);
  };
  try {
    if (engine_.start(std::move(job.request), std::move(on_token), std::move(on_done))) return;
    // Unreachable while the worker counts slots as the engine does.
    const Error full(ErrorKind::kInternal, "the engine refused a job with a slot free");
    finish_job(job, {}, &full);
  } catch (const Error& e) {
    finish_job(job, {}, &e);
  } catch (const std::exception& e) {
    const Error internal(ErrorKind::kInternal, e.what());
    finish_job(job, {}, &internal);
  }
}

// Frees the job's slot and pushes its last event: its result, or the error that failed it.
void EngineWorker::finish_job(const Job& job, const engine::GenerateResult& result, const Error* error) {
  EventChannel& ch = *job.channel;
  if (error) {
    spdlog::warn("generation failed: {} ({})", error->what(), error_kind_name(error->kind()));
    release(job.channel, GenerationEvent{GenerationEvent::Kind::kError, {}, {}, error->kind(), error->what()});
  } else {
    GenerationEvent done;
    done.kind = GenerationEvent::Kind::kDone;
    done.result = result;
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
      if (!r.ids.empty())
        metrics_->time_per_output_token.observe(r.decode_ms / 1000.0 / static_cast<double>(r.ids.size()));
    }
    release(job.channel, std::move(done));
  }
}

// The bookkeeping comes first, so a client that reads /health right after its answer sees the job
// gone and the prompt cache as this job left it.
void EngineWorker::release(const std::shared_ptr<EventChannel>& channel, GenerationEvent last) {
  const PromptCacheSnapshot pc = snapshot(engine_.stats());  // on this thread: the engine is ours
  {
    std::lock_guard<std::mutex> lock(mu_);
    prompt_cache_ = pc;
    const auto it = std::find(running_.begin(), running_.end(), channel);
    if (it != running_.end()) running_.erase(it);
    if (idle()) idle_cv_.notify_all();
  }
  channel->push(std::move(last));
}

}  // namespace anelm::server
