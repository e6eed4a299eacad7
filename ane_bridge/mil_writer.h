// Typed builder that prints dialect-A MIL text (program(1.3), func main<ios18>) byte for byte as
// §2.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ane_bridge/mil_types.h"
#include "ane_bridge/status.h"

namespace anelm::ane {

// How an fp16 scalar literal is printed (§2.2). The seeds print %f for derived values and never an
// exponent (no "1e-06"), so neither do we: %g and hex floats ("0x1p-3") would switch to one for
// small values, a form no working program is known to use. The compiler parses the text and
// rounds once to fp16.
enum class FloatFormat {
  kFixed6,  // "%f": 6 decimals, as MX prints derived values (1/768 -> "0.001302")
  kExact,   // the shortest fixed-point decimal that reads back as the same double
            // (2^-14 -> "0.00006103515625", 0.5 -> "0.5", 1024 -> "1024")
};

// Formats a double the way `fmt` prints it; never with an exponent.
std::string format_float(double value, FloatFormat fmt);

// A variable of a function being built: its name and inferred type.
struct MilVar {
  std::string name;
  MilType type;
};

// A reference to a tensor stored in a weights/*.bin file (offset = its metadata record, §3.3).
struct BlobRef {
  std::string path;  // "@model_path/weights/w.bin"
  std::uint64_t offset = 64;
};

// The five conv parameter consts of §2.8 (pt, st, pd, dl, gr): valid padding, unit strides.
struct ConvConsts {
  MilVar pad_type, strides, pad, dilations, groups;
};

// The dialect-A buildInfo line every file of MX and AI carries (§2.1), without a tag.
extern const char* const kBuildInfoPairs;

class MilFunctionBuilder {
 public:
  explicit MilFunctionBuilder(std::string name = "main");

  MilVar input(const std::string& var, const MilType& type);

  MilVar const_string(const std::string& var, const std::string& value);
  MilVar const_int32(const std::string& var, std::int32_t value);
  MilVar const_bool(const std::string& var, bool value);
  MilVar const_fp16(const std::string& var, double value, FloatFormat fmt = FloatFormat::kFixed6);
  MilVar const_int32_vec(const std::string& var, const std::vector<std::int32_t>& values);
  MilVar const_blob(const std::string& var, const MilType& type, const BlobRef& blob);
  // `pt, st, pd, dl, gr` (names prefixed by `prefix`) in the §2.8 order.
  ConvConsts conv_consts(const std::string& prefix = "");

  // W = scale * (q - 0), folded at compile time (§2.6 iOS16 form: empty "()", attributes in
  // alphabetical order). `qtype` is the int8 tensor type; per-channel scales (one per index of
  // `axis`) come from a fp16 vector blob, otherwise `scalar_scale` is printed as a hex float.
  MilVar affine_dequantize(const std::string& var, const MilType& qtype, const BlobRef& data,
                           const BlobRef* vector_scale, double scalar_scale, std::int32_t axis);

  // Generic op; args in print order, a tuple arg has several vars. Result type is inferred.
  MilVar op(const std::string& op_name, const std::string& var, const std::string& name,
            const std::vector<std::pair<std::string, std::vector<MilVar>>>& args);

  MilVar conv(const std::string& var, const std::string& name, const ConvConsts& c,
              const MilVar& weight, const MilVar& x);
  MilVar binary(const std::string& op_name, const std::string& var, const std::string& name,
                const MilVar& x, const MilVar& y);
  MilVar unary(const std::string& op_name, const std::string& var, const std::string& name,
               const MilVar& x);
  MilVar matmul(const std::string& var, const std::string& name, const MilVar& transpose_x,
                const MilVar& transpose_y, const MilVar& x, const MilVar& y);
  MilVar softmax(const std::string& var, const std::string& name, const MilVar& axis,
                 const MilVar& x);
  // MX argument order: x, axes, keep_dims.
  MilVar reduce_sum(const std::string& var, const std::string& name, const MilVar& x,
                    const MilVar& axes, const MilVar& keep_dims);
  MilVar reshape(const std::string& var, const std::string& name, const MilVar& shape,
                 const MilVar& x);
  MilVar transpose(const std::string& var, const std::string& name, const MilVar& perm,
                   const MilVar& x);
  MilVar concat(const std::string& var, const std::string& name, const MilVar& axis,
                const MilVar& interleave, const std::vector<MilVar>& values);
  // MX argument order: x, begin, size.
  MilVar slice_by_size(const std::string& var, const std::string& name, const MilVar& x,
                       const MilVar& begin, const MilVar& size);
  MilVar cast(const std::string& var, const std::string& name, const MilVar& dtype,
              const MilVar& x);

  void output(const MilVar& v);

  const std::string& name() const { return name_; }
  // First error met while building (bad shapes, duplicate names); ok when none.
  const Status& status() const { return status_; }
  // The function block, "    func main<ios18>(...) {\n ... \n    } -> (y);\n".
  std::string text() const;

 private:
  struct VarInfo {
    MilType type;
    bool has_value = false;
    ConstValue value;
  };
  MilVar declare(const std::string& var, const MilType& type, const ConstValue* value);
  void statement(const MilType& type, const std::string& var, const std::string& rhs);
  void fail(const std::string& message);

  std::string name_;
  std::vector<std::pair<MilType, std::string>> params_;
  std::vector<std::string> lines_;
  std::vector<std::string> outputs_;
  std::map<std::string, VarInfo> vars_;  // node-stable: Operand::value points into it
  Status status_;
};

// A whole program: header, buildInfo (with an optional per-program tag, §1.11) and functions.
class MilProgramBuilder {
 public:
  // Adds {"prog-tag", tag} to buildInfo so identical layers get distinct identifiers (§1.11).
  void set_tag(std::string tag) { tag_ = std::move(tag); }
  MilFunctionBuilder& add_function(const std::string& name = "main");
  // Prints the program, or returns the first builder error.
  Status build(std::string* out) const;

 private:
  std::string tag_;
  std::vector<std::unique_ptr<MilFunctionBuilder>> functions_;
};

}  // namespace anelm::ane
