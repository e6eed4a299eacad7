// Persistent worker threads for parallel_for: spin for the next job, then sleep on a futex; chunks
// are claimed from a job-tagged atomic cursor so stale or late workers never run a wrong job.
#include "engine/thread_pool.h"

#include <algorithm>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace anelm::engine {

namespace {

// Worker spin before sleeping: covers the gap between two decode steps (argmax over the vocab,
// sampling, the caller's inline norms) so a token never pays a futex wake-up; ~1-2 ms of pause.
constexpr int kWorkerSpin = 50000;
// Caller spin while waiting for claimed chunks (they are short: one share of one matmul).
constexpr int kCallerSpin = 200000;
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

// Sleeps while *word == expected (returns at once otherwise; spurious returns are fine).
inline void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
#else
  while (word.load(std::memory_order_acquire) == expected) std::this_thread::yield();
#endif
}

inline void futex_wake_all(std::atomic<uint32_t>& word) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 0x7fffffff, nullptr, nullptr, 0);
#else
  (void)word;
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  threads_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(generation_);
  for (auto& t : threads_) t.join();
}

void ThreadPool::run_chunks(uint32_t job, int index) {
  const uint64_t tag = (job & kJobMask) << kIndexBits;
  uint64_t c = cursor_.load(std::memory_order_acquire);
  for (;;) {
    if ((c & ~kIndexMask) != tag) return;  // another job is current: this one is finished
    const auto begin = static_cast<int64_t>(c & kIndexMask);
    const int64_t n = n_.load(std::memory_order_relaxed);
    if (begin >= n) return;
    const int64_t chunk = claim_size(begin, n);
    if (!cursor_.compare_exchange_weak(c, c + static_cast<uint64_t>(chunk), std::memory_order_acq_rel)) continue;
    // Claimed [begin, end) of `job`: the caller waits for it, so the job fields stay valid.
    const int64_t end = begin + chunk < n ? begin + chunk : n;
    tramp_(ctx_, begin, end, index);
    if (done_.fetch_add(end - begin, std::memory_order_seq_cst) + (end - begin) == n && index != 0) {
      // Last chunk finished by a worker: publish, then wake the caller only if it went to sleep.
      finished_.store(job, std::memory_order_seq_cst);
      if (caller_sleeping_.load(std::memory_order_seq_cst)) futex_wake_all(finished_);
    }
    c = cursor_.load(std::memory_order_acquire);
  }
}

int64_t ThreadPool::claim_size(int64_t begin, int64_t n) const {
  const int64_t chunk = chunk_.load(std::memory_order_relaxed);
  const int64_t min_chunk = min_chunk_.load(std::memory_order_relaxed);
  if (min_chunk == chunk) return chunk;
  const int64_t grain = grain_.load(std::memory_order_relaxed);
  const int64_t share = ((n - begin) / (2 * n_threads_) + grain - 1) / grain * grain;
  return share < min_chunk ? min_chunk : share > chunk ? chunk : share;
}

void ThreadPool::run(int64_t n, int64_t grain, int pieces_per_thread, bool taper, Trampoline tramp,
                     void* ctx) {
  const int64_t pieces = static_cast<int64_t>(n_threads_) * (pieces_per_thread < 1 ? 1 : pieces_per_thread);
  int64_t chunk = (n + pieces - 1) / pieces;
  chunk = (chunk + grain - 1) / grain * grain;
  const int64_t min_chunk = taper ? std::max(grain, (chunk / 8 + grain - 1) / grain * grain) : chunk;
  const uint32_t job = generation_.load(std::memory_order_relaxed) + 1;
  // Retire the previous job's cursor first: a worker still holding a cursor value of that job
  // (exhausted for its n) must not see the new, larger n_ and claim a phantom chunk (that hung
  // the pool: done_ overshot n). An index at the mask is past any n, so this tag claims nothing.
  cursor_.store(((job & kJobMask) << kIndexBits) | kIndexMask, std::memory_order_seq_cst);
  tramp_ = tramp;
  ctx_ = ctx;
  n_.store(n, std::memory_order_relaxed);
  chunk_.store(chunk, std::memory_order_relaxed);
  min_chunk_.store(min_chunk, std::memory_order_relaxed);
  grain_.store(grain, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  cursor_.store((job & kJobMask) << kIndexBits, std::memory_order_release);
  generation_.store(job, std::memory_order_seq_cst);
  if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(generation_);
  run_chunks(job, 0);
  // Wait for chunks claimed by workers: spin, then sleep on finished_ (the last finisher wakes us).
  for (int spin = 0; done_.load(std::memory_order_acquire) != n; ++spin) {
    if (spin < kCallerSpin) {
      cpu_relax();
      continue;
    }
    caller_sleeping_.store(true, std::memory_order_seq_cst);
    const uint32_t f = finished_.load(std::memory_order_seq_cst);
    if (f != job && done_.load(std::memory_order_seq_cst) != n) futex_wait(finished_, f);
    caller_sleeping_.store(false, std::memory_order_relaxed);
  }
}

void ThreadPool::worker(int index) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen; ++spin) {
      if (spin < kWorkerSpin) {
        cpu_relax();
      } else {
        sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
        if (generation_.load(std::memory_order_seq_cst) == seen) futex_wait(generation_, seen);
        sleeping_workers_.fetch_sub(1, std::memory_order_seq_cst);
      }
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    run_chunks(gen, index);
  }
}

}  // namespace anelm::engine
