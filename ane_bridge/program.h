// ANE program interface: compile MIL + named blobs, evaluate on surfaces, release; runtime factory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ane_bridge/mil_types.h"
#include "ane_bridge/simulator_options.h"
#include "ane_bridge/status.h"

namespace anelm::ane {

// One weights/*.bin file. `path` is the exact BLOBFILE path string, "@model_path/weights/w.bin"
// (§1.4: the weights-dictionary key).
struct WeightFile {
  std::string path;
  std::vector<std::uint8_t> bytes;
};

// Everything a compile needs. `name` is ours (directory and log name), not part of the MIL.
struct ProgramSource {
  std::string name;
  std::string mil_text;
  std::vector<WeightFile> weights;
};

// A function input or output as the program declares it.
struct TensorDesc {
  std::string name;
  MilType type;  // fp16 (or fp32) tensor, usually [1, C, 1, S]
};

// A compiled and loaded program. Not thread-safe: serialise evaluations (one engine worker).
class Program {
 public:
  virtual ~Program() = default;
  virtual const std::string& name() const = 0;
  // Hex identifier derived from the MIL text and the weights (§1.11).
  virtual const std::string& identifier() const = 0;
  virtual int procedure_count() const = 0;
  // I/O of procedure p, in surface binding order (§4.5, SimulatorOptions::binding_order).
  virtual const std::vector<TensorDesc>& inputs(int procedure = 0) const = 0;
  virtual const std::vector<TensorDesc>& outputs(int procedure = 0) const = 0;
  // True when this program was loaded from the compile cache without compiling (§1.13).
  virtual bool from_cache() const = 0;
  // Runs procedure p. Each buffer is one surface laid out per surface_layout.h (64-byte rows by
  // default); allocate them with SurfaceLayout::alloc_bytes(). Outputs must not alias inputs.
  virtual Status evaluate(std::span<const std::span<const std::uint8_t>> inputs,
                          std::span<const std::span<std::uint8_t>> outputs, int procedure = 0) = 0;
  // Unloads; idempotent. Does not refund the compile budget (§1.10).
  virtual Status release() = 0;
};

struct RuntimeStats {
  int compiles = 0;        // successful compiles in this process (counted against the budget)
  int compile_budget = 0;  // the limit
  int cache_hits = 0;      // programs loaded from the on-disk cache without compiling
  int cache_misses = 0;    // cache lookups that had to compile
  int live_programs = 0;   // loaded and not released
};

// One runtime models one process: it owns the compile budget and the cache counters. Not
// thread-safe: the engine's single worker thread owns it (and its programs).
class Runtime {
 public:
  virtual ~Runtime() = default;
  // "ane" (macOS private framework) or "simulator".
  virtual std::string_view kind() const = 0;
  // Parses, validates, compiles (or loads from cache) and loads one program.
  virtual Status compile(const ProgramSource& source, std::unique_ptr<Program>* out) = 0;
  virtual RuntimeStats stats() const = 0;
};

enum class Backend {
  kAuto,       // the ANE when compiled in and the private classes resolve, else the simulator
  kAne,        // the ANE or kUnavailable
  kSimulator,  // always the simulator
};

struct RuntimeOptions {
  Backend backend = Backend::kAuto;
  // On-disk compile cache; empty = no cache. Programs found there load without compiling and do not
  // count against the budget (§1.10, §1.13: a load without a compile is not counted).
  std::filesystem::path cache_dir;
  // Per-process compile budget for the real runtime (the simulator uses sim.compile_budget).
  int compile_budget = 119;
  // Simulator knobs (also used by the ANE runtime's front-end validation: limits, I/O dtypes).
  SimulatorOptions sim;
};

// True when this build contains the macOS runtime (program_darwin.mm).
bool ane_runtime_compiled_in();

// Chooses and creates a runtime. With kAuto on a machine without the ANE, falls back to the
// simulator; `why_not_ane` (optional) receives the reason.
Status make_runtime(const RuntimeOptions& options, std::unique_ptr<Runtime>* out,
                    std::string* why_not_ane = nullptr);

// Creates the simulator directly (defined in sim/simulator.cpp).
std::unique_ptr<Runtime> make_simulator(const RuntimeOptions& options);

}  // namespace anelm::ane
