// Shared helpers for the ane_bridge tests: seeded data, running programs on the simulator, goldens.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ane_bridge/program.h"

namespace anelm::ane::testing {

// Deterministic uniform values in [-scale, scale) (a fixed LCG, identical on every platform).
std::vector<float> seeded_values(std::size_t n, std::uint32_t seed, float scale = 1.0f);

// tests/data/ane in the source tree.
std::filesystem::path golden_dir();

// Compares `text` with the golden file; with ANELM_UPDATE_GOLDEN=1 in the environment it rewrites
// the file instead. Returns "" when equal, else a description of the first difference.
std::string check_golden(const std::string& file, const std::string& text);

// Options used by most tests: the defaults (strict), which is what the engine will run with.
SimulatorOptions test_options();

// Compiles `src` on a fresh simulator and evaluates procedure 0 once. Inputs and outputs are whole
// tensors in row-major element order (fp16/fp32 values as float); surfaces are allocated with
// SurfaceLayout::alloc_bytes and laid out per options.row_align_bytes.
struct RunResult {
  Status status;
  std::vector<std::vector<float>> outputs;
};
RunResult run_program(const ProgramSource& src, const std::vector<std::vector<float>>& inputs,
                      const SimulatorOptions& options = test_options());

// Same, but the caller already holds a compiled program.
RunResult run_compiled(Program& program, const std::vector<std::vector<float>>& inputs,
                       const SimulatorOptions& options = test_options());

// max |a - b| over equal-length vectors (NaN -> +inf).
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace anelm::ane::testing
