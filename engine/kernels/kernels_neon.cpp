// Arm NEON kernel table (UNTESTED here: no Arm machine in CI). Keeps the portable kernels and only
// vectorises the F32/F16 dot of the float matmuls; compiled on aarch64 only.
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/kernels/fp16.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/dtype.h"

namespace anelm::engine::kernels {
namespace neon_impl {
namespace {
#include "engine/kernels/kernels_generic-inl.h"

// y[i][r] = W[r] . x[i] with 4-lane FMAs, scalar tail.
template <bool kHalf>
void matmul_float(const void* w, int64_t cols, const float* x, const QBlock8*, int n,
                  float* __restrict y, int64_t ldy, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    for (int i = 0; i < n; ++i) {
      const float* xi = x + i * cols;
      float32x4_t acc = vdupq_n_f32(0.0f);
      int64_t c = 0;
      for (; c + 4 <= cols; c += 4) {
        float32x4_t wv;
        if constexpr (kHalf) {
          wv = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(w) + r * cols + c)));
        } else {
          wv = vld1q_f32(static_cast<const float*>(w) + r * cols + c);
        }
        acc = vfmaq_f32(acc, wv, vld1q_f32(xi + c));
      }
      float s = vaddvq_f32(acc);
      for (; c < cols; ++c) {
        const float wc = kHalf ? half_to_float(static_cast<const uint16_t*>(w)[r * cols + c])
                               : static_cast<const float*>(w)[r * cols + c];
        s += wc * xi[c];
      }
      y[i * ldy + r] = s;
    }
  }
}

}  // namespace
}  // namespace neon_impl

const KernelTable& neon_kernel_table() {
  static const KernelTable table = [] {
    KernelTable t = neon_impl::g_table(Isa::kNeon);
    t.matmul[dtype_index(DType::kF32)] = neon_impl::matmul_float<false>;
    t.matmul[dtype_index(DType::kF16)] = neon_impl::matmul_float<true>;
    return t;
  }();
  return table;
}

}  // namespace anelm::engine::kernels
#endif  // __aarch64__ && __ARM_NEON
