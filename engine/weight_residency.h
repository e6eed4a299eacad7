// Where the weights live while the engine runs: the residency policy, applied once at load.
#pragma once

#include "engine/model_loader.h"
#include "engine/thread_pool.h"

namespace anelm::engine {

// Tensors that live in a file mapping are copied byte for byte (same dtype, never widened) into one
// anonymous, huge-page-advised buffer owned by `m` (m.owners), the views in m.weights are pointed
// at the copy, and the file pages are handed back (MADV_DONTNEED), so RSS stays ~weights. Why: on
// the development VM, page-cache pages of a mapped model are reclaimed in the background (DAMON),
// and streaming them ran at 2-3 GB/s against 36 GB/s per core for anonymous memory. Tensors already
// in owned buffers (re-quantised at load) stay where they are. ANELM_MMAP_WEIGHTS=1 disables the
// copy. `pool` copies in parallel. Every executor (CPU and ANE) then reads the same views.
void make_resident(LoadedModel& m, ThreadPool& pool);

}  // namespace anelm::engine
