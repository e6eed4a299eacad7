// Per-request thread-safe channel of generation events from the engine worker to one HTTP thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/error.h"

namespace anelm::server {

struct GenerationEvent {
  enum class Kind { kToken, kDone, kError };
  Kind kind = Kind::kToken;
  engine::TokenStep step;            // kToken
  engine::GenerateResult result;     // kDone
  ErrorKind error_kind = ErrorKind::kInternal;  // kError
  std::string error;                 // kError
};

// Single producer (the worker), single consumer (the request's HTTP thread).
class EventChannel {
 public:
  void push(GenerationEvent ev) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::move(ev));
    }
    cv_.notify_one();
  }

  // Moves all pending events into `out` (appending); waits up to `timeout` for at least one.
  // Returns false on timeout with nothing received.
  bool wait_pop(std::vector<GenerationEvent>& out, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
    for (auto& e : events_) out.push_back(std::move(e));
    events_.clear();
    return true;
  }

  // Raised by the HTTP thread (client gone) or at shutdown; read by the engine.
  void cancel() { cancel_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancel_.load(std::memory_order_relaxed); }
  // The consumer has all it needs (a stop string matched): the engine stops as for cancel(), but
  // the job ended normally (not counted as a cancellation).
  void stop() {
    stopped_.store(true, std::memory_order_relaxed);
    cancel();
  }
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }
  const std::atomic<bool>* cancel_flag() const { return &cancel_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<GenerationEvent> events_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace anelm::server
