// Arm64 NEON kernel table (ARMv8.2-A + dotprod; compiled on aarch64 only, with those -march flags).
// Float-weight matmuls in f32 lanes (F16/BF16 widened on load: fp16 arithmetic would round every
// product, and decode reads the weights at memory speed anyway), block-quantised matmuls as int8 dot
// products (the blocks of 32: 4-row panels and groups, panel_neon-inl.h; the super-blocks per-row
// tiles, kernels_quant_neon-inl.h), exp-based elementwise kernels and the blocked causal attention
// (attention_simd-inl.h) on 4 lanes. Tested under qemu-aarch64 against the scalar
// reference (scripts/test): correctness only, never timed there. rmsnorm, rope and add stay the
// generic ones: their plain loops (16 partial sums in rmsnorm) vectorise at -O3.
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/dtype.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "kernels_neon.cpp needs -march=armv8.2-a+dotprod (engine/CMakeLists.txt sets it)"
#endif

namespace anelm::engine::kernels {
namespace neon_impl {
namespace {
#include "engine/kernels/kernels_generic-inl.h"


// One hardware conversion (fcvt) instead of fp16.h's bit manipulation; exact either way.
inline float h2f(uint16_t h) {
  __fp16 f;
  std::memcpy(&f, &h, sizeof f);
  return static_cast<float>(f);
}

// ---- float weights --------------------------------------------------------------------------------

// load8: columns c..c+7 of a row as two f32 vectors.
struct WF32 {
  static constexpr DType kType = DType::kF32;
  static void load8(const void* row, int64_t c, float32x4_t& lo, float32x4_t& hi) {
    const float* p = static_cast<const float*>(row) + c;
    lo = vld1q_f32(p), hi = vld1q_f32(p + 4);
  }
  static float scalar(const void* row, int64_t c) { return static_cast<const float*>(row)[c]; }
};
struct WF16 {
  static constexpr DType kType = DType::kF16;
  static void load8(const void* row, int64_t c, float32x4_t& lo, float32x4_t& hi) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(static_cast<const uint16_t*>(row) + c));
    lo = vcvt_f32_f16(vget_low_f16(h)), hi = vcvt_high_f32_f16(h);
  }
  static float scalar(const void* row, int64_t c) { return h2f(static_cast<const uint16_t*>(row)[c]); }
};
struct WBF16 {
  static constexpr DType kType = DType::kBF16;
  static void load8(const void* row, int64_t c, float32x4_t& lo, float32x4_t& hi) {
    const uint16x8_t u = vld1q_u16(static_cast<const uint16_t*>(row) + c);
    lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(u), 16));
    hi = vreinterpretq_f32_u32(vshll_high_n_u16(u, 16));
  }
  static float scalar(const void* row, int64_t c) { return bf16_to_float(static_cast<const uint16_t*>(row)[c]); }
};

// out[t] = W_row . x[t] for t < T: two accumulators per token (one per half of the 8 columns).
template <class W, int T>
inline void float_tile(const void* row, int64_t cols, const float* x, float* out) {
  float32x4_t a[T], b[T];
  for (int t = 0; t < T; ++t) a[t] = b[t] = vdupq_n_f32(0.0f);
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    float32x4_t w0, w1;
    W::load8(row, c, w0, w1);
    for (int t = 0; t < T; ++t) {
      a[t] = vfmaq_f32(a[t], w0, vld1q_f32(x + t * cols + c));
      b[t] = vfmaq_f32(b[t], w1, vld1q_f32(x + t * cols + c + 4));
    }
  }
  for (int t = 0; t < T; ++t) out[t] = vaddvq_f32(vaddq_f32(a[t], b[t]));
  for (; c < cols; ++c) {
    const float w = W::scalar(row, c);
    for (int t = 0; t < T; ++t) out[t] += w * x[t * cols + c];
  }
}

template <class W>
struct FloatKernel {
  using X = float;
  static constexpr DType kType = W::kType;
  static int64_t x_stride(int64_t cols) { return cols; }
  template <int T>
  static void tile(const void* row, int64_t cols, const float* x, float* out) { float_tile<W, T>(row, cols, x, out); }
};

#include "engine/kernels/kernels_quant_neon-inl.h"

#include "engine/kernels/matmul_tiles-inl.h"
#include "engine/kernels/panel_neon-inl.h"

// ---- activation quantisers (bit-identical to the reference) -----------------------------------

// vcvtnq rounds to nearest even, as nearbyint in the default rounding mode.
inline int8x8_t narrow_s8(int32x4_t a, int32x4_t b) { return vqmovn_s16(vcombine_s16(vqmovn_s32(a), vqmovn_s32(b))); }

void quantize_q8(const float* x, int64_t n, QBlock8* __restrict out) {
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    float32x4_t v[8];
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int i = 0; i < 8; ++i) v[i] = vld1q_f32(xb + 4 * i), m = vmaxq_f32(m, vabsq_f32(v[i]));
    const float amax = vmaxvq_f32(m);
    const float d = amax / 127.0f;
    const float id = amax >= kQ8MinAmax ? 1.0f / d : 0.0f;
    int32x4_t sum = vdupq_n_s32(0);
    for (int i = 0; i < 8; i += 2) {
      const int32x4_t q0 = vcvtnq_s32_f32(vmulq_n_f32(v[i], id));
      const int32x4_t q1 = vcvtnq_s32_f32(vmulq_n_f32(v[i + 1], id));
      vst1_s8(out[b].qs + 4 * i, narrow_s8(q0, q1));
      sum = vaddq_s32(sum, vaddq_s32(q0, q1));
    }
    out[b].d = round_to_half(d);  // f16-rounded scale, as llama.cpp's Q8_0 activations
    out[b].sum = vaddvq_s32(sum);
  }
}

// max is the first element of largest magnitude (its sign kept), iscale = -127 / max,
// q = min(127, x * iscale rounded to nearest even), bsums per 16, d = 1 / iscale.
void quantize_q8k(const float* x, int64_t n, QBlockK* __restrict out) {
  for (int64_t b = 0; b < n / kQKBlock; ++b) {
    const float* xb = x + b * kQKBlock;
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int i = 0; i < kQKBlock; i += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(xb + i)));
    const float amax = vmaxvq_f32(m);
    QBlockK& o = out[b];
    if (amax == 0.0f) {
      o = QBlockK{};
      continue;
    }
    float max = 0.0f;
    for (int i = 0; i < kQKBlock; ++i) {
      if (std::fabs(xb[i]) == amax) {
        max = xb[i];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const int32x4_t q127 = vdupq_n_s32(127);
    for (int i = 0; i < kQKBlock; i += 16) {
      int32x4_t q[4];
      for (int k = 0; k < 4; ++k) q[k] = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(xb + i + 4 * k), iscale)), q127);
      vst1_s8(o.qs + i, narrow_s8(q[0], q[1]));
      vst1_s8(o.qs + i + 8, narrow_s8(q[2], q[3]));
      o.bsums[i / 16] = static_cast<int16_t>(vaddvq_s32(vaddq_s32(vaddq_s32(q[0], q[1]), vaddq_s32(q[2], q[3]))));
    }
    o.d = 1.0f / iscale;
  }
}

// ---- exp-based elementwise kernels (4 lanes, scalar tails) ----------------------------------------

// e^x for x in [-87.3, 88.3] (clamped): x = n ln2 + r, degree-6 Taylor for e^r, 2^n via the exponent
// (the same polynomial as the x86 files).
inline float32x4_t exp4(float32x4_t x) {
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.3f));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504089f));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693145751953125f));
  r = vfmsq_f32(r, n, vdupq_n_f32(1.428606765330187e-06f));
  float32x4_t p = vdupq_n_f32(1.0f / 720);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

inline float max_of(const float* x, int n) {
  float32x4_t m = vdupq_n_f32(-INFINITY);
  int i = 0;
  for (; i + 4 <= n; i += 4) m = vmaxq_f32(m, vld1q_f32(x + i));
  float mx = vmaxvq_f32(m);
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  return mx;
}

void softmax(float* x, int n) {
  const float mx = max_of(x, n);
  float32x4_t sum = vdupq_n_f32(0.0f);
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), vdupq_n_f32(mx)));
    sum = vaddq_f32(sum, e);
    vst1q_f32(x + i, e);
  }
  float s = vaddvq_f32(sum);
  for (; i < n; ++i) s += x[i] = std::exp(x[i] - mx);
  const float inv = 1.0f / s;
  for (i = 0; i < n; ++i) x[i] *= inv;
}

float log_sum_exp(const float* x, int n) {
  const float mx = max_of(x, n);
  float32x4_t sum = vdupq_n_f32(0.0f);
  int i = 0;
  for (; i + 4 <= n; i += 4) sum = vaddq_f32(sum, exp4(vsubq_f32(vld1q_f32(x + i), vdupq_n_f32(mx))));
  float s = vaddvq_f32(sum);
  for (; i < n; ++i) s += std::exp(x[i] - mx);
  return mx + std::log(s);
}

void silu_mul(const float* gate, const float* up, int n, float* out) {
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t g = vld1q_f32(gate + i);
    const float32x4_t s = vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(g))));
    vst1q_f32(out + i, vmulq_f32(s, vld1q_f32(up + i)));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// out = gelu_tanh(gate) * up as g / (1 + e^(-2u)), u = sqrt(2/pi) (g + 0.044715 g^3) (g_gelu_mul).
void gelu_mul(const float* gate, const float* up, int n, float* out) {
  const float32x4_t k2c = vdupq_n_f32(-2.0f * 0.7978845608028654f), ka = vdupq_n_f32(0.044715f);
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t g = vld1q_f32(gate + i);
    const float32x4_t inner = vfmaq_f32(g, vmulq_f32(ka, g), vmulq_f32(g, g));
    const float32x4_t s = vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), exp4(vmulq_f32(k2c, inner))));
    vst1q_f32(out + i, vmulq_f32(s, vld1q_f32(up + i)));
  }
  g_gelu_mul(gate + i, up + i, n - i, out + i);
}

// ---- attention and the KV cache -------------------------------------------------------------------

inline float32x4_t load_kv(const void* base, DType kv, int64_t i) {
  if (kv == DType::kF16) return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(base) + i)));
  return vld1q_f32(static_cast<const float*>(base) + i);
}

void attend_head(const float* q, const void* k, const void* v, DType kv, int n_pos, int head_dim,
                 float scale, float* __restrict scores, float* __restrict out) {
  if (head_dim % 4 != 0) {
    g_attend_head(q, k, v, kv, n_pos, head_dim, scale, scores, out);
    return;
  }
  for (int p = 0; p < n_pos; ++p) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int d = 0; d < head_dim; d += 4) acc = vfmaq_f32(acc, vld1q_f32(q + d), load_kv(k, kv, int64_t{p} * head_dim + d));
    scores[p] = vaddvq_f32(acc) * scale;
  }
  softmax(scores, n_pos);
  for (int d = 0; d < head_dim; d += 4) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int p = 0; p < n_pos; ++p) acc = vfmaq_n_f32(acc, load_kv(v, kv, int64_t{p} * head_dim + d), scores[p]);
    vst1q_f32(out + d, acc);
  }
}

// fcvtn rounds to nearest even (the default FPCR mode), as float_to_half.
void store_kv(const float* src, DType kv, int n, void* __restrict dst) {
  if (kv != DType::kF16) {
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
    return;
  }
  auto* d = static_cast<uint16_t*>(dst);
  int i = 0;
  for (; i + 4 <= n; i += 4) vst1_u16(d + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(src + i))));
  for (; i < n; ++i) d[i] = float_to_half(src[i]);
}

// Lane operations of the blocked causal attention (attention_simd-inl.h). 32 vector registers:
// 4 x 4 accumulators + 4 query vectors + 1 broadcast fit without spills.
struct AttnSimd {
  using V = float32x4_t;
  static constexpr int W = 4;
  static constexpr int kJT = 4;
  static constexpr int kDT = 4;
  static V zero() { return vdupq_n_f32(0.0f); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V x) { vst1q_f32(p, x); }
  static V fmadd(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V max(V a, V b) { return vmaxq_f32(a, b); }
  static V exp(V x) { return exp4(x); }
  static float hsum(V x) { return vaddvq_f32(x); }
  static float hmax(V x) { return vmaxvq_f32(x); }
  static V reduce_lanes(const V* p) { return vpaddq_f32(vpaddq_f32(p[0], p[1]), vpaddq_f32(p[2], p[3])); }
  static V keep_le(V x, V j, V limit, float fill) { return vbslq_f32(vcleq_f32(j, limit), x, vdupq_n_f32(fill)); }
  static void to_f32(const uint16_t* src, int n, float* dst) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))));
    for (; i < n; ++i) dst[i] = h2f(src[i]);
  }
};
#include "engine/kernels/attention_simd-inl.h"

}  // namespace
}  // namespace neon_impl

const KernelTable& neon_kernel_table() {
  using namespace neon_impl;
  static const KernelTable table = [] {
    KernelTable t = g_table(Isa::kNeon);
    t.matmul[dtype_index(DType::kF32)] = matmul_impl<FloatKernel<WF32>>;
    t.matmul[dtype_index(DType::kF16)] = matmul_impl<FloatKernel<WF16>>;
    t.matmul[dtype_index(DType::kBF16)] = matmul_impl<FloatKernel<WBF16>>;
    t.matmul[dtype_index(DType::kQ8_0)] = panel_matmul<DecQ8_0>;
    t.matmul[dtype_index(DType::kQ4_0)] = panel_matmul<DecQ4_0>;
    t.matmul[dtype_index(DType::kQ4_1)] = panel_matmul<DecQ4_1>;
    t.matmul[dtype_index(DType::kQ5_0)] = panel_matmul<DecQ5<false>>;
    t.matmul[dtype_index(DType::kQ5_1)] = panel_matmul<DecQ5<true>>;
    t.matmul[dtype_index(DType::kIQ4_NL)] = panel_matmul<DecIQ4_NL>;
    t.matmul[dtype_index(DType::kQ2_K)] = matmul_chunked<SuperBlockKernel<DecQ2_K>>;
    t.matmul[dtype_index(DType::kQ3_K)] = matmul_chunked<SuperBlockKernel<DecQ3_K>>;
    t.matmul[dtype_index(DType::kQ4_K)] = matmul_chunked<SuperBlockKernel<DecQ45_K<false>>>;
    t.matmul[dtype_index(DType::kQ5_K)] = matmul_chunked<SuperBlockKernel<DecQ45_K<true>>>;
    t.matmul[dtype_index(DType::kQ6_K)] = matmul_chunked<SuperBlockKernel<DecQ6_K>>;
    t.matmul[dtype_index(DType::kIQ4_XS)] = matmul_chunked<SuperBlockKernel<DecIQ4_XS>>;
    t.quantize_q8 = quantize_q8;
    t.quantize_q8k = quantize_q8k;
    t.softmax = softmax;
    t.log_sum_exp = log_sum_exp;
    t.silu_mul = silu_mul;
    t.gelu_mul = gelu_mul;
    t.attend_head = attend_head;
    t.attend_causal = attend_causal;
    t.store_kv = store_kv;
    return t;
  }();
  return table;
}

}  // namespace anelm::engine::kernels
#endif  // __aarch64__ && __ARM_NEON
