// The CPU simulator behind the Program/Runtime interface: compile budget, cache, surface checks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ane_bridge/program.h"
#include "ane_bridge/program_cache.h"
#include "ane_bridge/sim/sim_compiler.h"

namespace anelm::ane::sim {

// Identifies the simulator in cache keys (the macOS runtime uses the OS build instead).
inline constexpr std::string_view kSimulatorRuntimeId = "anelm-simulator-1";

// Parses and validates MIL + weights exactly as the simulator's compile does, without counting a
// compile. The macOS runtime calls this before spending budget on the device compiler, with
// kValidateOnly so it keeps no fp32 copy of the weights.
Status front_end(const ProgramSource& source, const SimulatorOptions& options,
                 CompiledProgram* out, ConstMode mode = ConstMode::kMaterialize);

// Runs one compiled function on surfaces laid out per `options` (row alignment, minimum size,
// equal allocation sizes, aliasing): the evaluate path of SimProgram, usable on its own in tests.
// A function compiled with ConstMode::kValidateOnly is refused (kInvalidArgument): it has no
// weights to run with.
Status evaluate_function(const CompiledFunction& fn, const SimulatorOptions& options,
                         std::span<const std::span<const std::uint8_t>> inputs,
                         std::span<const std::span<std::uint8_t>> outputs);

// Checks surfaces against a function's I/O (sizes, count, equal allocation, aliasing); the same
// rules the device enforces with "status=0x1d". Shared with the macOS runtime.
Status check_surfaces(const std::vector<TensorDesc>& in_desc,
                      const std::vector<TensorDesc>& out_desc, const SimulatorOptions& options,
                      std::span<const std::span<const std::uint8_t>> inputs,
                      std::span<const std::span<std::uint8_t>> outputs);

}  // namespace anelm::ane::sim
