// The simulator's "compile" step: validates a parsed MIL program against the ANE rules and lowers
// it to a list of steps over value slots, with every const and blob resolved (weights copied).
#pragma once

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
};

struct CompiledProgram {
  std::vector<CompiledFunction> functions;
  std::int64_t weight_bytes = 0;  // bytes of blob payloads referenced
};

// Validates types, shapes, blobs and limits (§7.1). Returns kInvalidMILProgram for parse/type
// errors and kCompileFailed for limit, whitelist or blob violations; messages carry "line L:C:".
Status compile_program(const ProgramAst& ast, const std::vector<WeightFile>& weights,
                       const SimulatorOptions& options, CompiledProgram* out);

}  // namespace anelm::ane::sim
