// CPU instruction-set detection and the one-time choice of kernel path (env ANELM_FORCE_ISA overrides).
#pragma once

#include <vector>

namespace anelm::engine::kernels {

enum class Isa {
  kScalar,  // portable C++, every machine
  kAvx2,    // x86: AVX2 + FMA + F16C
  kAvx512,  // x86: AVX-512 F/BW/VL/DQ + VNNI (+F16C)
  kAmx,     // x86: kAvx512 plus AMX-INT8 tiles for prefill matmuls (Sapphire Rapids and later)
  kNeon,    // Arm64: NEON + ARMv8.2 dotprod (Apple Silicon; tested under qemu-aarch64)
};

const char* isa_name(Isa isa);

// Best path this CPU and this build support.
Isa detect_isa();
// True when `isa` was compiled into this build and runs on this CPU.
bool isa_supported(Isa isa);
// Every supported path, scalar first (tests loop over these).
std::vector<Isa> supported_isas();

// The path chosen at start-up: ANELM_FORCE_ISA=scalar|avx2|avx512|amx|neon if set and supported
// (an unsupported or unknown value falls back to detect_isa()), else detect_isa().
Isa selected_isa();

}  // namespace anelm::engine::kernels
