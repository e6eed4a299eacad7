// One model run by two Generators, each over its own Transformer: `cpu` stays on the CPU kernels and
// `ane_tf` is the one an AneBackend attaches to (make_ane_backend(..., ane_tf, ...)), so both can be
// fed the same request and compared.
#pragma once

#include "engine/generator.h"
#include "engine/kernels/kernels.h"
#include "engine/model_loader.h"
#include "engine/thread_pool.h"
#include "engine/transformer.h"

namespace anelm::engine::testing {

struct CpuAneGenerators {
  CpuAneGenerators(const LoadedModel& m, ThreadPool& pool)
      : cpu_tf(m.config, m.weights, pool, kernels::active_kernels()),
        ane_tf(m.config, m.weights, pool, kernels::active_kernels()),
        cpu(cpu_tf, 128, 64, DType::kF16, pool.size()),
        ane(ane_tf, 128, 64, DType::kF16, pool.size()) {}

  Transformer cpu_tf, ane_tf;
  Generator cpu, ane;
};

}  // namespace anelm::engine::testing
