// Parser for dialect-A MIL text (§2.2 grammar) into an AST; errors carry line:column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ane_bridge/mil_types.h"
#include "ane_bridge/status.h"

namespace anelm::ane::sim {

struct SrcLoc {
  int line = 0;  // 1-based
  int col = 0;   // 1-based, in bytes
};

// A typed literal: scalar `fp16(0.5)`, inline tensor `tensor<int32, [2]>([1, 1])`, or BLOBFILE.
struct Literal {
  MilType type;
  ConstValue value;  // empty for BLOBFILE
  bool is_blob = false;
  std::string blob_path;
  std::uint64_t blob_offset = 0;
  SrcLoc loc;
};

struct ArgAst {
  std::string name;
  std::vector<std::string> vars;  // one, or several for a tuple
  bool tuple = false;
  SrcLoc loc;
};

struct AttrAst {
  std::string name;
  Literal value;
  SrcLoc loc;
};

struct StatementAst {
  MilType type;
  std::string var;
  std::string op;
  std::vector<ArgAst> args;
  std::vector<AttrAst> attrs;
  SrcLoc loc;     // of the statement's type
  SrcLoc op_loc;  // of the op name
};

struct ParamAst {
  MilType type;
  std::string name;
  SrcLoc loc;
};

struct FunctionAst {
  std::string name;
  std::string opset;
  SrcLoc loc;
  std::vector<ParamAst> params;
  std::vector<StatementAst> body;
  std::vector<std::string> outputs;
  std::vector<SrcLoc> output_locs;
};

struct ProgramAst {
  std::string version;
  std::vector<std::pair<std::string, std::string>> build_info;
  std::vector<FunctionAst> functions;
};

// Accepts exactly dialect A: program(1.3), func NAME<ios18>, bare scalar types. Anything else
// (dialect B, <ios16> functions, rank-0 tensor scalars, unknown tokens) is an InvalidMILProgram
// error whose message starts with "line L:C:".
Status parse_mil(std::string_view text, ProgramAst* out);

// "line 3:17: " prefix for messages about a location.
std::string at(const SrcLoc& loc);

}  // namespace anelm::ane::sim
