// Fixed compute pool for row-parallel kernels: threads created once; each parallel_for publishes a
// job, wakes the workers (they spin for a while, then sleep on a futex) and hands out chunks from an
// atomic cursor. No allocation per call. Owned by one Engine; parallel_for must be called from one
// thread at a time (the engine's driver thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace anelm::engine {

class ThreadPool {
 public:
  // n_threads counts the calling thread: 1 means no worker threads (everything runs inline).
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(begin, end, thread_index) over chunks covering [0, n) exactly once and returns when all
  // are done. Chunks are multiples of `grain` (except the last), about `pieces_per_thread` per
  // thread, claimed dynamically: the caller only waits for chunks that were claimed, never for a
  // worker the OS has not scheduled yet. With `taper` a claim takes at most a 2 x size() share of
  // what is left (down to an eighth of a chunk), so threads that run at different speeds still end
  // together. thread_index is in [0, size()), the caller being 0. fn must not throw.
  template <typename Fn>
  void parallel_for(int64_t n, Fn&& fn, int64_t grain = 1, int pieces_per_thread = 8, bool taper = false) {
    if (n <= 0) return;
    if (n_threads_ == 1 || n <= grain) {
      fn(int64_t{0}, n, 0);
      return;
    }
    run(n, grain, pieces_per_thread, taper, &invoke<std::remove_reference_t<Fn>>, &fn);
  }

 private:
  using Trampoline = void (*)(void* ctx, int64_t begin, int64_t end, int thread);
  template <typename Fn>
  static void invoke(void* ctx, int64_t begin, int64_t end, int thread) {
    (*static_cast<Fn*>(ctx))(begin, end, thread);
  }

  void run(int64_t n, int64_t grain, int pieces_per_thread, bool taper, Trampoline tramp, void* ctx);
  // The size of a claim starting at `begin` of a job of n items.
  int64_t claim_size(int64_t begin, int64_t n) const;
  // Claims and runs chunks of job `job` until none are left or the job is no longer current.
  void run_chunks(uint32_t job, int index);
  void worker(int index);

  int n_threads_;
  std::vector<std::thread> threads_;
  // The current job: written by the caller before bumping generation_; workers only read them after
  // claiming a chunk of that job (the caller cannot publish the next job while a claim is running).
  Trampoline tramp_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<int64_t> n_{0};
  std::atomic<int64_t> chunk_{1};
  std::atomic<int64_t> min_chunk_{1};  // == chunk_ unless the job tapers
  std::atomic<int64_t> grain_{1};
  // Cursor: job number (high 24 bits) | next unclaimed index (low 40 bits).
  alignas(64) std::atomic<uint64_t> cursor_{0};
  alignas(64) std::atomic<int64_t> done_{0};  // items finished in the current job
  // Futex words (32-bit, waited on with the raw syscall: libstdc++ 12's atomic::wait on 64-bit
  // values lost wake-ups here, hanging a bench). generation_ = job number, bumped to wake workers;
  // finished_ = number of the last job whose final chunk completed (the caller sleeps on it).
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<uint32_t> finished_{0};
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace anelm::engine
