// Persistent worker threads for parallel_for: spin briefly for the next job, then sleep on a futex;
// chunks are claimed from a job-tagged atomic cursor so stale or late workers never run a wrong job.
#include "engine/thread_pool.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace anelm::engine {

namespace {

// Spin iterations before sleeping: long enough to catch back-to-back kernels of one forward pass
// (tens of microseconds), short enough not to burn a shared core between requests.
constexpr int kSpinIterations = 10000;
constexpr int kIndexBits = 40;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
constexpr uint64_t kJobMask = (uint64_t{1} << (64 - kIndexBits)) - 1;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  threads_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run_chunks(uint64_t job, int index) {
  const uint64_t tag = (job & kJobMask) << kIndexBits;
  uint64_t c = cursor_.load(std::memory_order_acquire);
  for (;;) {
    if ((c & ~kIndexMask) != tag) return;  // another job is current: this one is finished
    const auto begin = static_cast<int64_t>(c & kIndexMask);
    const int64_t n = n_.load(std::memory_order_relaxed);
    if (begin >= n) return;
    const int64_t chunk = chunk_.load(std::memory_order_relaxed);
    if (!cursor_.compare_exchange_weak(c, c + static_cast<uint64_t>(chunk), std::memory_order_acq_rel)) continue;
    // Claimed [begin, end) of `job`: the caller waits for it, so the job fields stay valid.
    const int64_t end = begin + chunk < n ? begin + chunk : n;
    tramp_(ctx_, begin, end, index);
    if (done_.fetch_add(end - begin, std::memory_order_acq_rel) + (end - begin) == n) done_.notify_one();
    c = cursor_.load(std::memory_order_acquire);
  }
}

void ThreadPool::run(int64_t n, int64_t grain, Trampoline tramp, void* ctx) {
  const int64_t pieces = static_cast<int64_t>(n_threads_) * 8;
  int64_t chunk = (n + pieces - 1) / pieces;
  chunk = (chunk + grain - 1) / grain * grain;
  const uint64_t job = generation_.load(std::memory_order_relaxed) + 1;
  tramp_ = tramp;
  ctx_ = ctx;
  n_.store(n, std::memory_order_relaxed);
  chunk_.store(chunk, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  cursor_.store((job & kJobMask) << kIndexBits, std::memory_order_release);
  generation_.store(job, std::memory_order_release);
  generation_.notify_all();
  run_chunks(job, 0);
  // Wait for chunks claimed by workers: spin, then sleep on done_ (the last finisher notifies).
  for (int spin = 0;; ++spin) {
    const int64_t done = done_.load(std::memory_order_acquire);
    if (done == n) break;
    if (spin < kSpinIterations) {
      cpu_relax();
    } else {
      done_.wait(done, std::memory_order_acquire);
    }
  }
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen; ++spin) {
      if (spin < kSpinIterations) {
        cpu_relax();
      } else {
        generation_.wait(seen, std::memory_order_acquire);
      }
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    run_chunks(gen, index);
  }
}

}  // namespace anelm::engine
