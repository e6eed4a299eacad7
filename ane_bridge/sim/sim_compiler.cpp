// Type checking, blob resolution, constexpr folding and limit checks for the simulator.
#include "ane_bridge/sim/sim_compiler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "ane_bridge/fp16.h"
#include "ane_bridge/mil_ops.h"
#include "ane_bridge/weight_blob.h"

namespace anelm::ane::sim {

namespace {

class FunctionCompiler {
 public:
  FunctionCompiler(const std::vector<WeightFile>& weights, const SimulatorOptions& o,
                   CompiledProgram* prog, ConstMode mode)
      : weights_(weights), opt_(o), prog_(prog), mode_(mode) {
    num_.ftz = o.fp16_ftz;
  }

  Status compile(const FunctionAst& f, CompiledFunction* out) {
    out_ = out;
    out->name = f.name;
    for (const ParamAst& p : f.params) {
      ANE_RETURN_IF_ERROR(check_io_type(p.type, p.loc, "input '" + p.name + "'"));
      int slot;
      ANE_RETURN_IF_ERROR(define(p.name, p.type, p.loc, nullptr, &slot));
      out->inputs.push_back({p.name, p.type});
      out->input_slots.push_back(slot);
    }
    for (const StatementAst& st : f.body) ANE_RETURN_IF_ERROR(statement(st));
    if (f.outputs.empty())
      return invalid_mil(at(f.loc) + "function '" + f.name + "' returns nothing");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < f.outputs.size(); ++i) {
      auto it = slots_.find(f.outputs[i]);
      if (it == slots_.end())
        return invalid_mil(at(f.output_locs[i]) + "returned variable '" + f.outputs[i] +
                           "' is not defined");
      if (!seen.insert(f.outputs[i]).second)
        return invalid_mil(at(f.output_locs[i]) + "variable '" + f.outputs[i] +
                           "' is returned twice");
      const MilType& t = out->slot_types[it->second];
      ANE_RETURN_IF_ERROR(check_io_type(t, f.output_locs[i], "output '" + f.outputs[i] + "'"));
      out->outputs.push_back({f.outputs[i], t});
      out->output_slots.push_back(it->second);
    }
    if (opt_.binding_order == BindingOrder::kSorted) {
      sort_binding(&out->inputs, &out->input_slots);
      sort_binding(&out->outputs, &out->output_slots);
    }
    return {};
  }

 private:
  static void sort_binding(std::vector<TensorDesc>* descs, std::vector<int>* slots) {
    std::vector<std::size_t> order(descs->size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](auto a, auto b) { return (*descs)[a].name < (*descs)[b].name; });
    std::vector<TensorDesc> d;
    std::vector<int> s;
    for (auto i : order) {
      d.push_back((*descs)[i]);
      s.push_back((*slots)[i]);
    }
    *descs = std::move(d);
    *slots = std::move(s);
  }

  Status check_io_type(const MilType& t, const SrcLoc& loc, const std::string& what) {
    if (t.scalar) return invalid_mil(at(loc) + what + " must be a tensor, got " + t.str());
    const bool ok = t.dtype == DType::kFp16 || (t.dtype == DType::kFp32 && opt_.allow_fp32_io) ||
                    (t.dtype == DType::kBool && opt_.allow_bool_io);
    if (!ok)
      return invalid_mil(
          at(loc) + what + " has dtype " + std::string(dtype_name(t.dtype)) +
          "; function I/O must be fp16" + (opt_.allow_fp32_io ? " or fp32" : "") +
          (t.dtype == DType::kFp32 ? " (fp32 I/O is off: SimulatorOptions::allow_fp32_io)" : ""));
    return check_limits(t, loc, what);
  }

  // Dimension limits of activations (§5.1, §7.1 item 5): channels (axis 1 of rank 4) and H/W.
  Status check_limits(const MilType& t, const SrcLoc& loc, const std::string& what) {
    if (t.scalar || t.rank() != 4) return {};
    if (t.shape[1] > opt_.max_channels)
      return compile_failed(at(loc) + what + " has " + std::to_string(t.shape[1]) +
                            " channels, over the limit " + std::to_string(opt_.max_channels));
    if (t.shape[2] > opt_.max_spatial || t.shape[3] > opt_.max_spatial)
      return compile_failed(at(loc) + what + " " + t.str() + " exceeds the spatial limit " +
                            std::to_string(opt_.max_spatial));
    return {};
  }

  Status define(const std::string& name, const MilType& type, const SrcLoc& loc,
                std::shared_ptr<const SimTensor> value, int* slot) {
    if (slots_.count(name))
      return invalid_mil(at(loc) + "variable '" + name + "' is defined twice");
    *slot = out_->num_slots++;
    slots_[name] = *slot;
    out_->slot_types.push_back(type);
    out_->consts.push_back(std::move(value));
    return {};
  }

  Status name_attr(const StatementAst& st, std::set<std::string> allowed) {
    bool has_name = false;
    for (const AttrAst& a : st.attrs) {
      if (!allowed.count(a.name))
        return invalid_mil(at(a.loc) + "unexpected attribute '" + a.name + "' on " + st.op);
      if (a.name == "name") {
        if (!a.value.type.scalar || a.value.type.dtype != DType::kString)
          return invalid_mil(at(a.loc) + "attribute 'name' must be a string");
        has_name = true;
      }
    }
    if (!has_name)
      return invalid_mil(at(st.op_loc) + "statement '" + st.var + "' has no name attribute");
    return {};
  }

  const AttrAst* attr(const StatementAst& st, std::string_view name) {
    for (const AttrAst& a : st.attrs)
      if (a.name == name) return &a;
    return nullptr;
  }

  // Integer literals must be integral and in range; bools 0/1 (true/false).
  static Status check_literal_range(const Literal& lit) {
    double lo = 0, hi = 0;
    switch (lit.type.dtype) {
      case DType::kInt8:
        lo = -128;
        hi = 127;
        break;
      case DType::kUint8:
        lo = 0;
        hi = 255;
        break;
      case DType::kInt32:
        lo = -2147483648.0;
        hi = 2147483647.0;
        break;
      case DType::kUint64:
        lo = 0;
        hi = 1.8446744073709552e19;
        break;
      case DType::kBool:
        lo = 0;
        hi = 1;
        break;
      default:
        return {};
    }
    for (double v : lit.value.nums)
      if (v != std::floor(v) || v < lo || v > hi)
        return invalid_mil(at(lit.loc) + "value " + std::to_string(v) + " is not a valid " +
                           std::string(dtype_name(lit.type.dtype)));
    return {};
  }

  // Turns a literal (inline or BLOBFILE) into a tensor, checking the blob strictly or leniently.
  Status literal_value(const Literal& lit, SimTensor* t) {
    t->type = lit.type;
    if (!lit.is_blob) {
      ANE_RETURN_IF_ERROR(check_literal_range(lit));
      t->text = lit.value.text;
      for (double v : lit.value.nums) t->data.push_back(static_cast<float>(v));
      if (lit.type.dtype == DType::kFp16)
        for (std::size_t i = 0; i < t->data.size(); ++i)
          t->data[i] =
              fp16_to_fp32(fp64_to_fp16(lit.value.nums[i]));  // one rounding from the text (§7.2)
      if (lit.type.dtype == DType::kFp16) round_to_dtype(t, num_);
      return {};
    }
    const WeightFile* file = nullptr;
    for (const WeightFile& w : weights_)
      if (w.path == lit.blob_path) file = &w;
    if (!file)
      return compile_failed(at(lit.loc) + "BLOBFILE path \"" + lit.blob_path +
                            "\" is not a key of the weights dictionary");
    BlobCheck check;
    check.strict = opt_.blob_strict;
    const int eb = dtype_bytes(lit.type.dtype);
    if (eb == 0)
      return invalid_mil(at(lit.loc) + "BLOBFILE of " + lit.type.str() + " is not supported");
    check.expect_bytes = static_cast<std::uint64_t>(lit.type.numel()) * eb;
    switch (lit.type.dtype) {
      case DType::kFp16:
        check.dtype_codes = {1};
        break;
      case DType::kFp32:
        check.dtype_codes = {2};
        break;
      case DType::kInt8:
        check.dtype_codes = opt_.int8_blob_dtype_codes;
        break;
      case DType::kUint8:
        check.dtype_codes = {3};
        break;
      case DType::kInt32:
        check.dtype_codes = {14};
        break;
      default:
        return invalid_mil(at(lit.loc) + "BLOBFILE of " + lit.type.str() + " is not supported");
    }
    BlobRecord rec;
    std::span<const std::uint8_t> payload;
    const Status s = read_blob_record(file->bytes, lit.blob_offset, check, &rec, &payload);
    if (!s.ok())
      return compile_failed(at(lit.loc) + "weights \"" + lit.blob_path + "\": " + s.message());
    prog_->weight_bytes += static_cast<std::int64_t>(payload.size());
    if (!materialize(lit.type)) return {};  // checked; the values stay in the blob
    t->data.resize(static_cast<std::size_t>(lit.type.numel()));
    for (std::size_t i = 0; i < t->data.size(); ++i) {
      const std::uint8_t* p = payload.data() + i * eb;
      switch (lit.type.dtype) {
        case DType::kFp16:
          t->data[i] = fp16_to_fp32(static_cast<std::uint16_t>(p[0] | p[1] << 8));
          break;
        case DType::kFp32:
          std::memcpy(&t->data[i], p, 4);
          break;
        case DType::kInt8:
          t->data[i] = static_cast<float>(static_cast<std::int8_t>(p[0]));
          break;
        case DType::kUint8:
          t->data[i] = static_cast<float>(p[0]);
          break;
        default:
          t->data[i] = static_cast<float>(static_cast<std::int32_t>(read_u32_le(p)));
          break;
      }
    }
    if (lit.type.dtype == DType::kFp16 && num_.ftz) round_to_dtype(t, num_);
    return {};
  }

  Status const_statement(const StatementAst& st) {
    ANE_RETURN_IF_ERROR(name_attr(st, {"name", "val"}));
    if (!st.args.empty()) return invalid_mil(at(st.args[0].loc) + "const takes no arguments");
    const AttrAst* val = attr(st, "val");
    if (!val) return invalid_mil(at(st.op_loc) + "const '" + st.var + "' has no val attribute");
    if (!(val->value.type == st.type))
      return invalid_mil(at(val->value.loc) + "const '" + st.var + "' is declared " +
                         st.type.str() + " but its value is " + val->value.type.str());
    auto t = std::make_shared<SimTensor>();
    ANE_RETURN_IF_ERROR(literal_value(val->value, t.get()));
    int slot;
    return define(st.var, st.type, st.loc, std::move(t), &slot);
  }

  Status affine_statement(const StatementAst& st) {
    ANE_RETURN_IF_ERROR(name_attr(st, {"axis", "name", "quantized_data", "scale", "zero_point"}));
    if (!st.args.empty())
      return invalid_mil(at(st.args[0].loc) +
                         "constexpr_affine_dequantize (iOS16 op) takes its inputs as attributes; "
                         "the argument list must be empty");
    const AttrAst* ax = attr(st, "axis");
    const AttrAst* qd = attr(st, "quantized_data");
    const AttrAst* sc = attr(st, "scale");
    const AttrAst* zp = attr(st, "zero_point");
    if (!ax || !qd || !sc || !zp)
      return invalid_mil(
          at(st.op_loc) +
          "constexpr_affine_dequantize needs axis, quantized_data, scale and zero_point");
    if (!ax->value.type.scalar || ax->value.type.dtype != DType::kInt32)
      return invalid_mil(at(ax->loc) + "axis must be an int32 scalar");
    const auto axis = static_cast<std::int64_t>(ax->value.value.nums.at(0));
    MilType out_t;
    if (auto e =
            infer_affine_dequantize(qd->value.type, sc->value.type, zp->value.type, axis, &out_t);
        !e.empty())
      return invalid_mil(at(st.op_loc) + "constexpr_affine_dequantize: " + e);
    if (!(out_t == st.type))
      return invalid_mil(at(st.loc) + "declared type " + st.type.str() +
                         " does not match inferred " + out_t.str());
    SimTensor q, s, z;
    ANE_RETURN_IF_ERROR(literal_value(qd->value, &q));
    ANE_RETURN_IF_ERROR(literal_value(sc->value, &s));
    ANE_RETURN_IF_ERROR(literal_value(zp->value, &z));
    auto t = std::make_shared<SimTensor>();
    t->type = out_t;
    const int a = static_cast<int>(axis < 0 ? axis + q.type.rank() : axis);
    if (materialize(out_t)) affine_dequantize(q, s.data, z.data, a, num_, t.get());
    int slot;
    return define(st.var, st.type, st.loc, std::move(t), &slot);
  }

  Status op_limits(const StatementAst& st, const OpArgs& operands, const MilType& out_t) {
    if (st.op == "conv") {
      const MilType& w = operands.at("weight")[0].type;
      const std::int64_t cin = operands.at("x")[0].type.shape[1];
      if (cin > opt_.max_conv_in_channels)
        return compile_failed(at(st.op_loc) + "conv input channels " + std::to_string(cin) +
                              " exceed the limit " + std::to_string(opt_.max_conv_in_channels));
      if (w.shape[3] > opt_.max_kernel_width || w.shape[2] > opt_.max_kernel_width)
        return compile_failed(at(st.op_loc) + "conv kernel " + std::to_string(w.shape[2]) + "x" +
                              std::to_string(w.shape[3]) + " exceeds the kernel-width limit " +
                              std::to_string(opt_.max_kernel_width));
    }
    if (st.op == "matmul") {
      const MilType& x = operands.at("x")[0].type;
      const bool tx = operands.at("transpose_x")[0].value->nums[0] != 0;
      const std::int64_t k = tx ? x.shape[x.rank() - 2] : x.shape.back();
      if (k > opt_.max_matmul_inner)
        return compile_failed(at(st.op_loc) + "matmul inner dimension " + std::to_string(k) +
                              " exceeds the limit " + std::to_string(opt_.max_matmul_inner));
    }
    return check_limits(out_t, st.loc, st.op + " result '" + st.var + "'");
  }

  Status statement(const StatementAst& st) {
    if (st.op == "const") return const_statement(st);
    if (st.op == "constexpr_affine_dequantize") return affine_statement(st);
    if (!find_op(st.op))
      return compile_failed(at(st.op_loc) + "op '" + st.op +
                            "' is not in the supported op catalog" +
                            (st.op == "gather" ? " (dynamic gather is rejected on the ANE)" : ""));
    ANE_RETURN_IF_ERROR(name_attr(st, {"name"}));
    OpArgs operands;
    Step step;
    step.op = st.op;
    step.loc = st.loc;
    std::vector<std::unique_ptr<ConstValue>> held;
    for (const ArgAst& a : st.args) {
      if (operands.count(a.name))
        return invalid_mil(at(a.loc) + "argument '" + a.name + "' given twice");
      auto& list = operands[a.name];
      for (const std::string& v : a.vars) {
        auto it = slots_.find(v);
        if (it == slots_.end()) return invalid_mil(at(a.loc) + "undefined variable '" + v + "'");
        Operand o{out_->slot_types[it->second], nullptr};
        if (const auto& c = out_->consts[it->second]) {
          held.push_back(std::make_unique<ConstValue>());
          held.back()->text = c->text;
          held.back()->nums.assign(c->data.begin(), c->data.end());
          o.value = held.back().get();
        }
        list.push_back(o);
        step.args[a.name].push_back(it->second);
      }
    }
    MilType out_t;
    if (auto e = infer_op_type(st.op, operands, &out_t); !e.empty())
      return invalid_mil(at(st.op_loc) + st.op + " '" + st.var + "': " + e);
    if (!(out_t == st.type))
      return invalid_mil(at(st.loc) + "declared type " + st.type.str() + " of '" + st.var +
                         "' does not match the inferred " + out_t.str());
    ANE_RETURN_IF_ERROR(op_limits(st, operands, out_t));
    ANE_RETURN_IF_ERROR(define(st.var, st.type, st.loc, nullptr, &step.out));
    out_->steps.push_back(std::move(step));
    return {};
  }

  bool materialize(const MilType& t) const {
    return mode_ == ConstMode::kMaterialize || t.numel() <= kSmallConstElems;
  }

  const std::vector<WeightFile>& weights_;
  const SimulatorOptions& opt_;
  CompiledProgram* prog_;
  ConstMode mode_;
  CompiledFunction* out_ = nullptr;
  Numerics num_;
  std::map<std::string, int> slots_;
};

}  // namespace

std::int64_t const_bytes(const CompiledProgram& p) {
  std::int64_t n = 0;
  for (const CompiledFunction& f : p.functions)
    for (const auto& c : f.consts)
      if (c) n += static_cast<std::int64_t>(c->data.size() * sizeof(float));
  return n;
}

Status compile_program(const ProgramAst& ast, const std::vector<WeightFile>& weights,
                       const SimulatorOptions& options, CompiledProgram* out, ConstMode mode) {
  *out = CompiledProgram{};
  std::set<std::string> names;
  for (const FunctionAst& f : ast.functions) {
    if (!names.insert(f.name).second)
      return invalid_mil(at(f.loc) + "function '" + f.name + "' is defined twice");
    out->functions.emplace_back();
    FunctionCompiler fc(weights, options, out, mode);
    ANE_RETURN_IF_ERROR(fc.compile(f, &out->functions.back()));
    out->functions.back().weights_materialized = mode == ConstMode::kMaterialize;
  }
  if (options.max_program_weight_bytes > 0 && out->weight_bytes > options.max_program_weight_bytes)
    return compile_failed("program holds " + std::to_string(out->weight_bytes) +
                          " bytes of weights, over the limit " +
                          std::to_string(options.max_program_weight_bytes));
  return {};
}

}  // namespace anelm::ane::sim
