// Dialect-A MIL printer: indentation 4/8, ", " separators, consts before use, a name on every op.
#include "ane_bridge/mil_writer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ane_bridge/fp16.h"
#include "ane_bridge/mil_ops.h"

namespace anelm::ane {

const char* const kBuildInfoPairs =
    "{\"coremlc-component-MIL\", \"3510.2.1\"}, {\"coremlc-version\", \"3505.4.1\"}, "
    "{\"coremltools-component-milinternal\", \"\"}, {\"coremltools-version\", \"9.0\"}";

namespace {

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::string blob_literal(const MilType& type, const BlobRef& b) {
  return type.str() + "(BLOBFILE(path = string(" + quoted(b.path) + "), offset = uint64(" +
         std::to_string(b.offset) + ")))";
}

}  // namespace

std::string format_float(double value, FloatFormat fmt) {
  char buf[512];  // "%.40f" of the largest fp16 (65504) and of any double up to ~1e300
  if (fmt == FloatFormat::kFixed6 || !std::isfinite(value)) {
    std::snprintf(buf, sizeof buf, "%f", value);
    return buf;
  }
  // 40 decimals hold every fp16 value exactly (the smallest subnormal is 2^-24) and 17 significant
  // digits of any double down to 1e-23, which is all a literal rounded to fp16 can use.
  for (int prec = 0; prec <= 40; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*f", prec, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

MilFunctionBuilder::MilFunctionBuilder(std::string name) : name_(std::move(name)) {}

void MilFunctionBuilder::fail(const std::string& message) {
  if (status_.ok()) status_ = invalid_mil("MIL builder, function '" + name_ + "': " + message);
}

MilVar MilFunctionBuilder::declare(const std::string& var, const MilType& type,
                                   const ConstValue* value) {
  if (vars_.count(var)) fail("variable '" + var + "' is defined twice");
  VarInfo& info = vars_[var];
  info.type = type;
  if (value) {
    info.has_value = true;
    info.value = *value;
  }
  return MilVar{var, type};
}

void MilFunctionBuilder::statement(const MilType& type, const std::string& var,
                                   const std::string& rhs) {
  lines_.push_back("        " + type.str() + " " + var + " = " + rhs + ";");
}

MilVar MilFunctionBuilder::input(const std::string& var, const MilType& type) {
  params_.emplace_back(type, var);
  return declare(var, type, nullptr);
}

MilVar MilFunctionBuilder::const_string(const std::string& var, const std::string& value) {
  const MilType t = MilType::scalar_of(DType::kString);
  statement(t, var,
            "const()[name = string(" + quoted(var) + "), val = string(" + quoted(value) + ")]");
  ConstValue cv{{}, value};
  return declare(var, t, &cv);
}

MilVar MilFunctionBuilder::const_int32(const std::string& var, std::int32_t value) {
  const MilType t = MilType::scalar_of(DType::kInt32);
  statement(
      t, var,
      "const()[name = string(" + quoted(var) + "), val = int32(" + std::to_string(value) + ")]");
  ConstValue cv{{static_cast<double>(value)}, ""};
  return declare(var, t, &cv);
}

MilVar MilFunctionBuilder::const_bool(const std::string& var, bool value) {
  const MilType t = MilType::scalar_of(DType::kBool);
  statement(t, var,
            "const()[name = string(" + quoted(var) + "), val = bool(" + (value ? "true" : "false") +
                ")]");
  ConstValue cv{{value ? 1.0 : 0.0}, ""};
  return declare(var, t, &cv);
}

MilVar MilFunctionBuilder::const_fp16(const std::string& var, double value, FloatFormat fmt) {
  const MilType t = MilType::scalar_of(DType::kFp16);
  const std::string text = format_float(value, fmt);
  statement(t, var, "const()[name = string(" + quoted(var) + "), val = fp16(" + text + ")]");
  // The value the compiler sees is the printed text rounded once to fp16 (§7.2).
  ConstValue cv{{fp16_to_fp32(fp64_to_fp16(std::strtod(text.c_str(), nullptr)))}, ""};
  return declare(var, t, &cv);
}

MilVar MilFunctionBuilder::const_int32_vec(const std::string& var,
                                           const std::vector<std::int32_t>& values) {
  const MilType t = MilType::tensor(DType::kInt32, {static_cast<std::int64_t>(values.size())});
  std::string list;
  ConstValue cv;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) list += ", ";
    list += std::to_string(values[i]);
    cv.nums.push_back(values[i]);
  }
  statement(t, var,
            "const()[name = string(" + quoted(var) + "), val = " + t.str() + "([" + list + "])]");
  return declare(var, t, &cv);
}

MilVar MilFunctionBuilder::const_blob(const std::string& var, const MilType& type,
                                      const BlobRef& blob) {
  statement(type, var,
            "const()[name = string(" + quoted(var) + "), val = " + blob_literal(type, blob) + "]");
  return declare(var, type, nullptr);
}

ConvConsts MilFunctionBuilder::conv_consts(const std::string& prefix) {
  ConvConsts c;
  c.pad_type = const_string(prefix + "pt", "valid");
  c.strides = const_int32_vec(prefix + "st", {1, 1});
  c.pad = const_int32_vec(prefix + "pd", {0, 0, 0, 0});
  c.dilations = const_int32_vec(prefix + "dl", {1, 1});
  c.groups = const_int32(prefix + "gr", 1);
  return c;
}

MilVar MilFunctionBuilder::affine_dequantize(const std::string& var, const MilType& qtype,
                                             const BlobRef& data, const BlobRef* vector_scale,
                                             double scalar_scale, std::int32_t axis) {
  MilType scale_t = MilType::scalar_of(DType::kFp16);
  std::string scale_text = "fp16(" + format_float(scalar_scale, FloatFormat::kExact) + ")";
  if (vector_scale) {
    const std::int64_t n = qtype.shape.at(axis < 0 ? axis + qtype.rank() : axis);
    scale_t = MilType::tensor(DType::kFp16, {n});
    scale_text = blob_literal(scale_t, *vector_scale);
  }
  MilType out;
  if (auto e = infer_affine_dequantize(qtype, scale_t, MilType::scalar_of(qtype.dtype), axis, &out);
      !e.empty()) {
    fail("constexpr_affine_dequantize '" + var + "': " + e);
    out = MilType::tensor(DType::kFp16, qtype.shape);
  }
  const std::string zp = std::string(dtype_name(qtype.dtype)) + "(0)";
  statement(out, var,
            "constexpr_affine_dequantize()[axis = int32(" + std::to_string(axis) +
                "), name = string(" + quoted(var) +
                "), quantized_data = " + blob_literal(qtype, data) + ", scale = " + scale_text +
                ", zero_point = " + zp + "]");
  return declare(var, out, nullptr);
}

MilVar MilFunctionBuilder::op(
    const std::string& op_name, const std::string& var, const std::string& name,
    const std::vector<std::pair<std::string, std::vector<MilVar>>>& args) {
  OpArgs operands;
  std::string arg_text;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& [arg, vs] = args[i];
    if (i) arg_text += ", ";
    arg_text += arg + " = ";
    const bool tuple = arg == "values";
    if (tuple) arg_text += "(";
    for (std::size_t j = 0; j < vs.size(); ++j) {
      if (j) arg_text += ", ";
      arg_text += vs[j].name;
      auto it = vars_.find(vs[j].name);
      if (it == vars_.end()) {
        fail("op '" + var + "' uses undefined variable '" + vs[j].name + "'");
        operands[arg].push_back(Operand{vs[j].type, nullptr});
      } else {
        operands[arg].push_back(
            Operand{it->second.type, it->second.has_value ? &it->second.value : nullptr});
      }
    }
    if (tuple) arg_text += ")";
  }
  MilType out;
  if (auto e = infer_op_type(op_name, operands, &out); !e.empty()) {
    fail(op_name + " '" + var + "': " + e);
    out = args.empty() || args.back().second.empty() ? MilType{} : args.back().second[0].type;
  }
  statement(out, var, op_name + "(" + arg_text + ")[name = string(" + quoted(name) + ")]");
  return declare(var, out, nullptr);
}

MilVar MilFunctionBuilder::conv(const std::string& var, const std::string& name,
                                const ConvConsts& c, const MilVar& weight, const MilVar& x) {
  // Alphabetical argument order, as MX and AI print conv.
  return op("conv", var, name,
            {{"dilations", {c.dilations}},
             {"groups", {c.groups}},
             {"pad", {c.pad}},
             {"pad_type", {c.pad_type}},
             {"strides", {c.strides}},
             {"weight", {weight}},
             {"x", {x}}});
}

MilVar MilFunctionBuilder::binary(const std::string& op_name, const std::string& var,
                                  const std::string& name, const MilVar& x, const MilVar& y) {
  return op(op_name, var, name, {{"x", {x}}, {"y", {y}}});
}

MilVar MilFunctionBuilder::unary(const std::string& op_name, const std::string& var,
                                 const std::string& name, const MilVar& x) {
  return op(op_name, var, name, {{"x", {x}}});
}

MilVar MilFunctionBuilder::matmul(const std::string& var, const std::string& name,
                                  const MilVar& transpose_x, const MilVar& transpose_y,
                                  const MilVar& x, const MilVar& y) {
  return op(
      "matmul", var, name,
      {{"transpose_x", {transpose_x}}, {"transpose_y", {transpose_y}}, {"x", {x}}, {"y", {y}}});
}

MilVar MilFunctionBuilder::softmax(const std::string& var, const std::string& name,
                                   const MilVar& axis, const MilVar& x) {
  return op("softmax", var, name, {{"axis", {axis}}, {"x", {x}}});
}

MilVar MilFunctionBuilder::reduce_sum(const std::string& var, const std::string& name,
                                      const MilVar& x, const MilVar& axes,
                                      const MilVar& keep_dims) {
  return op("reduce_sum", var, name, {{"x", {x}}, {"axes", {axes}}, {"keep_dims", {keep_dims}}});
}

MilVar MilFunctionBuilder::reshape(const std::string& var, const std::string& name,
                                   const MilVar& shape, const MilVar& x) {
  return op("reshape", var, name, {{"shape", {shape}}, {"x", {x}}});
}

MilVar MilFunctionBuilder::transpose(const std::string& var, const std::string& name,
                                     const MilVar& perm, const MilVar& x) {
  return op("transpose", var, name, {{"perm", {perm}}, {"x", {x}}});
}

MilVar MilFunctionBuilder::concat(const std::string& var, const std::string& name,
                                  const MilVar& axis, const MilVar& interleave,
                                  const std::vector<MilVar>& values) {
  return op("concat", var, name,
            {{"axis", {axis}}, {"interleave", {interleave}}, {"values", values}});
}

MilVar MilFunctionBuilder::slice_by_size(const std::string& var, const std::string& name,
                                         const MilVar& x, const MilVar& begin, const MilVar& size) {
  return op("slice_by_size", var, name, {{"x", {x}}, {"begin", {begin}}, {"size", {size}}});
}

MilVar MilFunctionBuilder::cast(const std::string& var, const std::string& name,
                                const MilVar& dtype, const MilVar& x) {
  return op("cast", var, name, {{"dtype", {dtype}}, {"x", {x}}});
}

void MilFunctionBuilder::output(const MilVar& v) {
  if (!vars_.count(v.name)) fail("output '" + v.name + "' is not defined");
  outputs_.push_back(v.name);
}

std::string MilFunctionBuilder::text() const {
  std::string s = "    func " + name_ + "<ios18>(";
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (i) s += ", ";
    s += params_[i].first.str() + " " + params_[i].second;
  }
  s += ") {\n";
  for (const std::string& line : lines_) s += line + "\n";
  s += "    } -> (";
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    if (i) s += ", ";
    s += outputs_[i];
  }
  return s + ");\n";
}

MilFunctionBuilder& MilProgramBuilder::add_function(const std::string& name) {
  functions_.push_back(std::make_unique<MilFunctionBuilder>(name));
  return *functions_.back();
}

Status MilProgramBuilder::build(std::string* out) const {
  if (functions_.empty()) return invalid_mil("MIL builder: a program needs at least one function");
  std::string s = "program(1.3)\n[buildInfo = dict<string, string>({";
  s += kBuildInfoPairs;
  if (!tag_.empty()) s += ", {\"prog-tag\", \"" + tag_ + "\"}";
  s += "})]\n{\n";
  for (std::size_t i = 0; i < functions_.size(); ++i) {
    ANE_RETURN_IF_ERROR(functions_[i]->status());
    if (i) s += "\n";  // a blank line separates functions (§2.7)
    s += functions_[i]->text();
  }
  *out = s + "}\n";
  return {};
}

}  // namespace anelm::ane
