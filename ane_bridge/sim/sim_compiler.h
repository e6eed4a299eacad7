// The simulator's "compile" step: validates a parsed MIL program against the ANE rules and lowers
// it to a list of steps over value slots, with every const and blob resolved (weights copied).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ane_bridge/program.h"
#include "ane_bridge/sim/interpreter.h"
#include "ane_bridge/sim/mil_parser.h"

namespace anelm::ane::sim {

struct Step {
  std::string op;
  int out = -1;                                  // result slot
  std::map<std::string, std::vector<int>> args;  // argument name -> slots
  SrcLoc loc;
};

// What the compile keeps of BLOBFILE consts. The simulator evaluates, so it copies every weight as
// fp32 (§7.1 item 3). The macOS runtime only needs the validation and the I/O descriptions: a
// materialised copy of every program would hold ~3.4 GB extra for Qwen2.5-0.5B.
enum class ConstMode {
  kMaterialize,   // every const as fp32 values (the simulator)
  kValidateOnly,  // blobs fully checked, but consts above kSmallConstElems keep only their type
};

// Consts this small are materialised in every mode: scalars and shape vectors must behave the same
// in both modes (ops read their values), and they cost nothing.
inline constexpr std::int64_t kSmallConstElems = 64;

struct CompiledFunction {
  std::string name;
  std::vector<TensorDesc> inputs;   // binding order
  std::vector<int> input_slots;     // same order
  std::vector<TensorDesc> outputs;  // binding order
  std::vector<int> output_slots;
  int num_slots = 0;
  std::vector<std::shared_ptr<const SimTensor>> consts;  // per slot; null for computed values
  std::vector<MilType> slot_types;
  std::vector<Step> steps;
  bool weights_materialized = true;  // false: compiled with ConstMode::kValidateOnly
};

struct CompiledProgram {
  std::vector<CompiledFunction> functions;
  std::int64_t weight_bytes = 0;  // bytes of blob payloads referenced
};

// Bytes held by the consts of every function (what a materialised program costs in memory).
std::int64_t const_bytes(const CompiledProgram& p);

// Validates types, shapes, blobs and limits (§7.1). Returns kInvalidMILProgram for parse/type
// errors and kCompileFailed for limit, whitelist or blob violations; messages carry "line L:C:".
Status compile_program(const ProgramAst& ast, const std::vector<WeightFile>& weights,
                       const SimulatorOptions& options, CompiledProgram* out,
                       ConstMode mode = ConstMode::kMaterialize);

}  // namespace anelm::ane::sim
