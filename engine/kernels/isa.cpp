// CPU detection and kernel-table selection (done once; ANELM_FORCE_ISA forces a path for tests).
#include "engine/kernels/isa.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "engine/kernels/fp16.h"
#include "engine/kernels/kernels.h"

namespace anelm::engine::kernels {

namespace {
constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAmx, Isa::kNeon};

#if defined(__aarch64__)
// The NEON table is compiled for ARMv8.2-A + dotprod (its integer kernels are vdotq_s32 throughout);
// an older core (Cortex-A53/A72, Raspberry Pi 4) runs the portable table instead.
bool arm_has_dotprod() {
#if defined(__APPLE__)
  return true;  // every Apple Silicon core (M1 and later) has FEAT_DotProd
#elif defined(__linux__) && defined(HWCAP_ASIMDDP)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return false;
#endif
}
#endif
}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAmx: return "amx";
    case Isa::kNeon: return "neon";
  }
  return "unknown";
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
#if defined(__x86_64__) || defined(_M_X64)
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
    case Isa::kAvx512:
#if defined(ANELM_AVX512_EMULATED)  // tests/CMakeLists.txt: the AVX-512 table built over SIMDe for AVX2 CPUs
      return isa_supported(Isa::kAvx2);
#endif
      return isa_supported(Isa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
#if defined(ANELM_HAVE_AMX)
    case Isa::kAmx: return isa_supported(Isa::kAvx512) && amx_usable();
#endif
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
    case Isa::kNeon: return arm_has_dotprod();
#endif
    default: return false;
  }
}

Isa detect_isa() {
  for (Isa isa : {Isa::kAmx, Isa::kAvx512, Isa::kAvx2, Isa::kNeon}) {
    if (isa_supported(isa)) return isa;
  }
  return Isa::kScalar;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa isa : kAllIsas) {
    if (isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

Isa selected_isa() {
  static const Isa chosen = [] {
    if (const char* env = std::getenv("ANELM_FORCE_ISA"); env && *env) {
      for (Isa isa : kAllIsas) {
        if (std::strcmp(env, isa_name(isa)) == 0 && isa_supported(isa)) return isa;
      }
    }
    return detect_isa();
  }();
  return chosen;
}

const KernelTable* kernel_table(Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::kScalar: return &scalar_kernel_table();
#if defined(__x86_64__) || defined(_M_X64)
    case Isa::kAvx2: return &avx2_kernel_table();
    case Isa::kAvx512: return &avx512_kernel_table();
#endif
#if defined(ANELM_HAVE_AMX)
    case Isa::kAmx: return &amx_kernel_table();
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
    case Isa::kNeon: return &neon_kernel_table();
#endif
    default: return nullptr;
  }
}

namespace {

// The exact kernels under the rounding wrappers (one table per process).
MatmulFn g_f16_exact = nullptr;
void (*g_gelu_exact)(const float*, int, float*) = nullptr;

void matmul_f16_rounded_x(const void* w, int64_t cols, const float* x, const void* xq, int n, float* __restrict y,
                          int64_t ldy, int64_t r0, int64_t r1) {
  thread_local std::vector<float> xr;  // grows once per thread to the widest call
  xr.resize(static_cast<size_t>(n) * static_cast<size_t>(cols));
  for (size_t i = 0; i < xr.size(); ++i) xr[i] = round_to_half(x[i]);
  g_f16_exact(w, cols, xr.data(), xq, n, y, ldy, r0, r1);
}

// ggml's GELU (GGML_GELU_FP16, on by default in its CPU backend): x <= -10 gives 0, x >= 10 gives x,
// otherwise a table indexed by f16(x) holding f16(gelu(x)). out = that * (up ? up : 1).
void gelu_table(const float* x, const float* up, int n, float* out) {
  thread_local std::vector<float> g;
  g.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) g[i] = round_to_half(x[i]);
  g_gelu_exact(g.data(), n, g.data());
  for (int i = 0; i < n; ++i) {
    const float v = x[i] <= -10.0f ? 0.0f : x[i] >= 10.0f ? x[i] : round_to_half(g[i]);
    out[i] = up ? v * up[i] : v;
  }
}
void gelu_rounded(const float* x, int n, float* out) { gelu_table(x, nullptr, n, out); }
void gelu_mul_rounded(const float* gate, const float* up, int n, float* out) { gelu_table(gate, up, n, out); }

// ggml converts Q to K's type before the scores (flash attention on or off): with an F16 KV cache
// every query is rounded to f16. The group's query rows are rounded into a copy at the same stride.
AttendCausalFn g_attend_exact = nullptr;
void attend_causal_rounded_q(const AttentionArgs& a, float* __restrict scratch) {
  if (a.kv != DType::kF16) return g_attend_exact(a, scratch);
  thread_local std::vector<float> q;
  const size_t row = static_cast<size_t>(a.group) * static_cast<size_t>(a.head_dim);
  q.resize(static_cast<size_t>(a.n_q - 1) * static_cast<size_t>(a.ld) + row);
  for (int t = 0; t < a.n_q; ++t) {
    const size_t at = static_cast<size_t>(t) * static_cast<size_t>(a.ld);
    for (size_t i = 0; i < row; ++i) q[at + i] = round_to_half(a.q[at + i]);
  }
  AttentionArgs r = a;
  r.q = q.data();
  g_attend_exact(r, scratch);
}

}  // namespace

KernelTable with_f16_rounded_activations(const KernelTable& t) {
  KernelTable out = t;
  g_f16_exact = t.matmul[dtype_index(DType::kF16)];
  out.matmul[dtype_index(DType::kF16)] = matmul_f16_rounded_x;
  g_attend_exact = t.attend_causal;
  if (t.attend_causal) out.attend_causal = attend_causal_rounded_q;
  g_gelu_exact = t.gelu;
  if (t.gelu) out.gelu = gelu_rounded;
  if (t.gelu && t.gelu_mul) out.gelu_mul = gelu_mul_rounded;
  return out;
}

const KernelTable* amx_bf16_table() {
#if defined(ANELM_HAVE_AMX)
  if (isa_supported(Isa::kAmx)) return amx_bf16_kernel_table();
#endif
  return nullptr;
}

const KernelTable& active_kernels() {
  static const KernelTable table = [] {
    const KernelTable* t = kernel_table(selected_isa());
    if (const char* bf16 = std::getenv("ANELM_AMX_BF16"); bf16 && std::strcmp(bf16, "1") == 0 && t->isa == Isa::kAmx) {
      if (const KernelTable* b = amx_bf16_table()) t = b;
    }
    const char* env = std::getenv("ANELM_F16_ACTIVATIONS");
    return env && std::strcmp(env, "f16") == 0 ? with_f16_rounded_activations(*t) : *t;
  }();
  return table;
}

}  // namespace anelm::engine::kernels
