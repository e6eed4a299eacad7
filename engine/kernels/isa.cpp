// CPU detection and kernel-table selection (done once; ANELM_FORCE_ISA forces a path for tests).
#include "engine/kernels/isa.h"

#include <cstdlib>
#include <cstring>

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

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

const KernelTable& active_kernels() {
  static const KernelTable* table = kernel_table(selected_isa());
  return *table;
}

}  // namespace anelm::engine::kernels
