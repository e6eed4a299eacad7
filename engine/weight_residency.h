// Where the weights live while the engine runs: the residency policy, applied once at load.
#pragma once

#include <atomic>
#include <cstddef>
#include <vector>

#include "engine/model_loader.h"
#include "engine/thread_pool.h"

namespace anelm::engine {

// Tensors that live in a file mapping are copied byte for byte (same dtype, never widened) into one
// anonymous, huge-page-advised buffer owned by the model (m.owners), the views in m.weights are
// pointed at the copy, and the file pages are handed back (MADV_DONTNEED), so RSS stays ~weights.
// Why: on the development VMs, page-cache pages of a mapped model are reclaimed in the background
// (DAMON), and decoding from them ran 12% (Sapphire Rapids) to several times (EPYC) slower than from
// anonymous memory. Tensors already in owned buffers (re-quantised at load) stay where they are.
// ANELM_MMAP_WEIGHTS=1 disables the copy.
//
// The copy is split so that a server can answer from the mapping while it runs: copy() may run on
// any thread while forward passes read the mapped views; adopt() swaps the views and must run where
// no forward pass does (the engine's own thread, between requests).
class ResidentCopy {
 public:
  // Plans the copy of m's file-mapped tensors and allocates the buffer (nothing to copy: done()).
  explicit ResidentCopy(LoadedModel& m);
  ResidentCopy(const ResidentCopy&) = delete;
  ResidentCopy& operator=(const ResidentCopy&) = delete;

  // Copies every planned tensor, dropping each copied piece of the mapping as it goes; `pool`: copy
  // with its threads, nullptr: on the calling thread only.
  void copy(ThreadPool* pool);
  // True once copy() has finished (or there was nothing to copy).
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Points the views at the copy. Call after done(), with no forward pass running.
  void adopt();

 private:
  struct Piece {
    const void* from;  // the mapped tensor (views still point here until adopt)
    size_t offset;     // in the buffer
    size_t bytes;
  };
  LoadedModel& m_;
  void* buffer_ = nullptr;
  std::vector<Piece> pieces_;
  std::atomic<bool> done_{false};
};

// Plans, copies with `pool` and adopts at once (load-time residency for tools and tests).
void make_resident(LoadedModel& m, ThreadPool& pool);

}  // namespace anelm::engine
