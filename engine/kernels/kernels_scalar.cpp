// The portable (scalar) kernel table: the generic kernels compiled without ISA flags.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/dtype.h"

namespace anelm::engine::kernels {
namespace scalar_impl {
namespace {
#include "engine/kernels/kernels_generic-inl.h"
}  // namespace
}  // namespace scalar_impl

const KernelTable& scalar_kernel_table() {
  static const KernelTable table = scalar_impl::g_table(Isa::kScalar);
  return table;
}

}  // namespace anelm::engine::kernels
