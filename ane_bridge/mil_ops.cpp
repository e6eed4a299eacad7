// Op catalog and type inference: every rule here is the CT (coremltools) semantics of §2.5/§2.6.
#include "ane_bridge/mil_ops.h"

#include <algorithm>
#include <cmath>

namespace anelm::ane {

namespace {

OpArgSpec req(std::string_view n) { return {n, true, false, false}; }
OpArgSpec req_const(std::string_view n) { return {n, true, true, false}; }
OpArgSpec opt(std::string_view n) { return {n, false, false, false}; }
OpArgSpec opt_const(std::string_view n) { return {n, false, true, false}; }

std::vector<OpSpec> build_catalog() {
  return {
      {"cast", {req_const("dtype"), req("x")}},
      {"conv",
       {req_const("dilations"), req_const("groups"), req_const("pad"), req_const("pad_type"),
        req_const("strides"), req("weight"), req("x")}},
      {"matmul", {req_const("transpose_x"), req_const("transpose_y"), req("x"), req("y")}},
      {"add", {req("x"), req("y")}},
      {"sub", {req("x"), req("y")}},
      {"mul", {req("x"), req("y")}},
      {"pow", {req("x"), req("y")}},
      {"sigmoid", {req("x")}},
      {"identity", {req("x")}},
      {"softmax", {req_const("axis"), req("x")}},
      {"reduce_sum", {req("x"), opt_const("axes"), opt_const("keep_dims")}},
      {"reshape", {req_const("shape"), req("x")}},
      {"transpose", {req_const("perm"), req("x")}},
      {"concat", {req_const("axis"), req_const("interleave"), {"values", true, false, true}}},
      {"slice_by_size", {req("x"), req_const("begin"), req_const("size")}},
      {"quantize",
       {req("input"), req_const("output_dtype"), req("scale"), opt("zero_point"),
        opt_const("axis")}},
      {"dequantize", {req("input"), req("scale"), opt("zero_point"), opt_const("axis")}},
  };
}

const Operand* single(const OpArgs& args, std::string_view name) {
  auto it = args.find(name);
  if (it == args.end() || it->second.size() != 1) return nullptr;
  return &it->second[0];
}

// Reads an int vector const (rank-1 tensor, or scalar when allow_scalar).
bool const_ints(const Operand* o, std::vector<std::int64_t>* out) {
  if (!o || !o->value || o->type.dtype != DType::kInt32) return false;
  out->clear();
  for (double v : o->value->nums) out->push_back(static_cast<std::int64_t>(v));
  return true;
}

bool const_bool(const Operand* o, bool* out) {
  if (!o || !o->value || o->type.dtype != DType::kBool || !o->type.scalar) return false;
  *out = o->value->nums.at(0) != 0.0;
  return true;
}

std::string type_err(std::string_view arg, std::string_view want, const MilType& got) {
  return "argument '" + std::string(arg) + "' must be " + std::string(want) + ", got " + got.str();
}

std::int64_t norm_axis(std::int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

std::string infer_conv(const OpArgs& a, MilType* out) {
  const Operand* x = single(a, "x");
  const Operand* w = single(a, "weight");
  if (x->type.scalar || x->type.rank() != 4)
    return type_err("x", "a rank-4 tensor [N, C, H, W]", x->type);
  if (w->type.scalar || w->type.rank() != 4) return type_err("weight", "a rank-4 tensor", w->type);
  if (x->type.dtype != DType::kFp16 || w->type.dtype != DType::kFp16)
    return "conv needs fp16 x and weight, got " + x->type.str() + " and " + w->type.str();
  std::vector<std::int64_t> dil, pad, strides, groups_v;
  if (!const_ints(single(a, "dilations"), &dil) || dil.size() != 2)
    return "conv 'dilations' must be int32[2]";
  if (!const_ints(single(a, "strides"), &strides) || strides.size() != 2)
    return "conv 'strides' must be int32[2]";
  if (!const_ints(single(a, "pad"), &pad) || pad.size() != 4) return "conv 'pad' must be int32[4]";
  const Operand* g = single(a, "groups");
  if (!const_ints(g, &groups_v) || !g->type.scalar) return "conv 'groups' must be an int32 scalar";
  const Operand* pt = single(a, "pad_type");
  if (!pt->value || pt->type.dtype != DType::kString)
    return "conv 'pad_type' must be a string const";
  const std::string& ptype = pt->value->text;
  const std::int64_t groups = groups_v[0];
  const auto& xs = x->type.shape;
  const auto& ws = w->type.shape;
  if (groups < 1 || xs[1] % groups != 0 || ws[0] % groups != 0)
    return "conv groups must divide C_in and C_out";
  if (ws[1] * groups != xs[1])
    return "conv weight " + w->type.str() + " does not match input channels " +
           std::to_string(xs[1]) + " with groups " + std::to_string(groups);
  std::int64_t o[2];
  for (int i = 0; i < 2; ++i) {
    const std::int64_t in = xs[2 + i], k = ws[2 + i], s = strides[i], d = dil[i];
    if (s < 1 || d < 1) return "conv strides and dilations must be >= 1";
    if (ptype == "valid") {
      o[i] = (in - (k - 1) * d - 1) / s + 1;
    } else if (ptype == "custom") {
      o[i] = (in + pad[2 * i] + pad[2 * i + 1] - (k - 1) * d - 1) / s + 1;
    } else if (ptype == "same" || ptype == "same_lower") {
      o[i] = (in + s - 1) / s;
    } else {
      return "conv pad_type '" + ptype + "' is not one of valid, custom, same, same_lower";
    }
    if (o[i] < 1) return "conv output spatial size is empty";
  }
  *out = MilType::tensor(DType::kFp16, {xs[0], ws[0], o[0], o[1]});
  return "";
}

std::string infer_matmul(const OpArgs& a, MilType* out) {
  const Operand* x = single(a, "x");
  const Operand* y = single(a, "y");
  bool tx = false, ty = false;
  if (!const_bool(single(a, "transpose_x"), &tx))
    return "matmul 'transpose_x' must be a bool const";
  if (!const_bool(single(a, "transpose_y"), &ty))
    return "matmul 'transpose_y' must be a bool const";
  if (x->type.scalar || x->type.rank() < 2) return type_err("x", "a tensor of rank >= 2", x->type);
  if (y->type.scalar || y->type.rank() < 2) return type_err("y", "a tensor of rank >= 2", y->type);
  if (x->type.dtype != y->type.dtype || x->type.dtype != DType::kFp16)
    return "matmul needs fp16 x and y, got " + x->type.str() + " and " + y->type.str();
  auto xs = x->type.shape, ys = y->type.shape;
  if (tx) std::swap(xs[xs.size() - 1], xs[xs.size() - 2]);
  if (ty) std::swap(ys[ys.size() - 1], ys[ys.size() - 2]);
  const std::int64_t m = xs[xs.size() - 2], k = xs.back(), k2 = ys[ys.size() - 2], n = ys.back();
  if (k != k2)
    return "matmul inner dimensions differ: " + std::to_string(k) + " vs " + std::to_string(k2);
  std::vector<std::int64_t> bx(xs.begin(), xs.end() - 2), by(ys.begin(), ys.end() - 2), b;
  if (!broadcast_shapes(bx, by, &b)) return "matmul batch dimensions do not broadcast";
  b.push_back(m);
  b.push_back(n);
  *out = MilType::tensor(DType::kFp16, b);
  return "";
}

std::string infer_elementwise(const OpArgs& a, MilType* out) {
  const Operand* x = single(a, "x");
  const Operand* y = single(a, "y");
  if (x->type.dtype != y->type.dtype)
    return "x and y dtypes differ: " + x->type.str() + " vs " + y->type.str();
  if (x->type.dtype != DType::kFp16 && x->type.dtype != DType::kFp32)
    return "elementwise ops need fp16 or fp32, got " + x->type.str();
  if (x->type.scalar && y->type.scalar) {
    *out = x->type;
    return "";
  }
  std::vector<std::int64_t> s;
  if (!broadcast_shapes(x->type.shape, y->type.shape, &s))
    return "shapes do not broadcast: " + x->type.str() + " and " + y->type.str();
  *out = MilType::tensor(x->type.dtype, s);
  return "";
}

std::string infer_reduce(const OpArgs& a, MilType* out) {
  const Operand* x = single(a, "x");
  if (x->type.scalar) return type_err("x", "a tensor", x->type);
  std::vector<std::int64_t> axes;
  const Operand* ax = single(a, "axes");
  if (ax && !const_ints(ax, &axes)) return "reduce_sum 'axes' must be an int32 const";
  if (!ax)
    for (int i = 0; i < x->type.rank(); ++i) axes.push_back(i);
  bool keep = false;
  const Operand* kd = single(a, "keep_dims");
  if (kd && !const_bool(kd, &keep)) return "reduce_sum 'keep_dims' must be a bool const";
  std::vector<bool> red(x->type.rank(), false);
  for (std::int64_t axis : axes) {
    const std::int64_t n = norm_axis(axis, x->type.rank());
    if (n < 0 || n >= x->type.rank())
      return "reduce_sum axis " + std::to_string(axis) + " out of range";
    red[n] = true;
  }
  std::vector<std::int64_t> s;
  for (int i = 0; i < x->type.rank(); ++i) {
    if (!red[i])
      s.push_back(x->type.shape[i]);
    else if (keep)
      s.push_back(1);
  }
  *out = s.empty() ? MilType::scalar_of(x->type.dtype) : MilType::tensor(x->type.dtype, s);
  return "";
}

std::string infer_reshape(const OpArgs& a, MilType* out) {
  const Operand* x = single(a, "x");
  std::vector<std::int64_t> shape;
  if (!const_ints(single(a, "shape"), &shape)) return "reshape 'shape' must be an int32 const";
  std::int64_t known = 1;
  int infer_at = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && i < x->type.shape.size()) shape[i] = x->type.shape[i];  // CT: 0 copies
    if (shape[i] == -1) {
      if (infer_at >= 0) return "reshape has more than one -1";
      infer_at = static_cast<int>(i);
    } else if (shape[i] <= 0) {
      return "reshape dimension " + std::to_string(shape[i]) + " is invalid";
    } else {
      known *= shape[i];
    }
  }
  if (infer_at >= 0) shape[infer_at] = known ? x->type.numel() / known : 0;
  MilType t = MilType::tensor(x->type.dtype, shape);
  if (t.numel() != x->type.numel())
    return "reshape changes the element count: " + x->type.str() + " -> " + dims_str(shape);
  *out = t;
  return "";
}

std::string infer_transpose(const OpArgs& a, MilType* out) {
  const Operand* x = single(a, "x");
  std::vector<std::int64_t> perm;
  if (!const_ints(single(a, "perm"), &perm)) return "transpose 'perm' must be an int32 const";
  if (static_cast<int>(perm.size()) != x->type.rank())
    return "transpose 'perm' length differs from the rank";
  std::vector<bool> seen(perm.size(), false);
  std::vector<std::int64_t> s;
  for (std::int64_t p : perm) {
    const std::int64_t n = norm_axis(p, x->type.rank());
    if (n < 0 || n >= x->type.rank() || seen[n]) return "transpose 'perm' is not a permutation";
    seen[n] = true;
    s.push_back(x->type.shape[n]);
  }
  *out = MilType::tensor(x->type.dtype, s);
  return "";
}

std::string infer_concat(const OpArgs& a, MilType* out) {
  const Operand* ax = single(a, "axis");
  std::vector<std::int64_t> axis_v;
  if (!const_ints(ax, &axis_v) || !ax->type.scalar)
    return "concat 'axis' must be an int32 scalar const";
  bool interleave = true;
  if (!const_bool(single(a, "interleave"), &interleave))
    return "concat 'interleave' must be a bool const";
  if (interleave) return "concat interleave = true is not supported (only false is proven)";
  const auto& vals = a.find("values")->second;
  if (vals.empty()) return "concat needs at least one value";
  const MilType& t0 = vals[0].type;
  if (t0.scalar) return "concat values must be tensors";
  const std::int64_t axis = norm_axis(axis_v[0], t0.rank());
  if (axis < 0 || axis >= t0.rank()) return "concat axis out of range";
  std::vector<std::int64_t> s = t0.shape;
  s[axis] = 0;
  for (const Operand& v : vals) {
    if (v.type.dtype != t0.dtype || v.type.rank() != t0.rank())
      return "concat values differ in dtype or rank";
    for (int i = 0; i < t0.rank(); ++i)
      if (i != axis && v.type.shape[i] != t0.shape[i])
        return "concat values differ off the concat axis";
    s[axis] += v.type.shape[axis];
  }
  *out = MilType::tensor(t0.dtype, s);
  return "";
}

std::string infer_slice(const OpArgs& a, MilType* out) {
  const Operand* x = single(a, "x");
  std::vector<std::int64_t> begin, size;
  if (!const_ints(single(a, "begin"), &begin))
    return "slice_by_size 'begin' must be an int32 const";
  if (!const_ints(single(a, "size"), &size)) return "slice_by_size 'size' must be an int32 const";
  const int r = x->type.rank();
  if (static_cast<int>(begin.size()) != r || static_cast<int>(size.size()) != r)
    return "slice_by_size 'begin' and 'size' must have rank " + std::to_string(r);
  std::vector<std::int64_t> s(r);
  for (int i = 0; i < r; ++i) {
    const std::int64_t d = x->type.shape[i];
    const std::int64_t b = begin[i] < 0 ? begin[i] + d : begin[i];
    const std::int64_t n = size[i] == -1 ? d - b : size[i];
    if (b < 0 || n < 1 || b + n > d)
      return "slice_by_size box out of range on axis " + std::to_string(i) + " (begin " +
             std::to_string(begin[i]) + ", size " + std::to_string(size[i]) + ", dim " +
             std::to_string(d) + ")";
    s[i] = n;
  }
  *out = MilType::tensor(x->type.dtype, s);
  return "";
}

std::string infer_cast(const OpArgs& a, MilType* out) {
  const Operand* d = single(a, "dtype");
  const Operand* x = single(a, "x");
  if (!d->value || d->type.dtype != DType::kString) return "cast 'dtype' must be a string const";
  DType to;
  if (!dtype_from_name(d->value->text, &to) ||
      (to != DType::kFp16 && to != DType::kFp32 && to != DType::kInt32 && to != DType::kBool))
    return "cast to '" + d->value->text + "' is not supported (fp16, fp32, int32, bool)";
  *out = x->type;
  out->dtype = to;
  return "";
}

std::string check_scale_zp(const Operand* data, const OpArgs& a, DType* scale_dtype) {
  const Operand* scale = single(a, "scale");
  if (scale->type.dtype != DType::kFp16 && scale->type.dtype != DType::kFp32)
    return type_err("scale", "fp16 or fp32", scale->type);
  if (!scale->type.scalar && scale->type.rank() != 1)
    return type_err("scale", "a scalar or a 1-D vector", scale->type);
  *scale_dtype = scale->type.dtype;
  (void)data;
  return "";
}

std::string infer_quantize(const OpArgs& a, MilType* out) {
  const Operand* in = single(a, "input");
  const Operand* od = single(a, "output_dtype");
  if (in->type.dtype != DType::kFp16 && in->type.dtype != DType::kFp32)
    return type_err("input", "fp16 or fp32", in->type);
  if (!od->value || od->type.dtype != DType::kString)
    return "quantize 'output_dtype' must be a string const";
  DType to;
  if (!dtype_from_name(od->value->text, &to) || (to != DType::kInt8 && to != DType::kUint8))
    return "quantize output_dtype must be int8 or uint8, got '" + od->value->text + "'";
  DType sd;
  if (auto e = check_scale_zp(in, a, &sd); !e.empty()) return e;
  *out = in->type;
  out->dtype = to;
  return "";
}

std::string infer_dequantize(const OpArgs& a, MilType* out) {
  const Operand* in = single(a, "input");
  if (in->type.dtype != DType::kInt8 && in->type.dtype != DType::kUint8)
    return type_err("input", "int8 or uint8", in->type);
  DType sd;
  if (auto e = check_scale_zp(in, a, &sd); !e.empty()) return e;
  *out = in->type;
  out->dtype = sd;
  return "";
}

}  // namespace

const std::vector<OpSpec>& op_catalog() {
  static const std::vector<OpSpec> catalog = build_catalog();
  return catalog;
}

const OpSpec* find_op(std::string_view name) {
  for (const OpSpec& s : op_catalog())
    if (s.name == name) return &s;
  return nullptr;
}

bool broadcast_shapes(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b,
                      std::vector<std::int64_t>* out) {
  const std::size_t r = std::max(a.size(), b.size());
  out->assign(r, 1);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const std::int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}

std::string infer_op_type(std::string_view op, const OpArgs& args, MilType* out) {
  const OpSpec* spec = find_op(op);
  if (!spec) return "op '" + std::string(op) + "' is not in the supported op catalog";
  for (const OpArgSpec& s : spec->args) {
    auto it = args.find(s.name);
    if (it == args.end()) {
      if (s.required) return "missing argument '" + std::string(s.name) + "'";
      continue;
    }
    if (!s.tuple && it->second.size() != 1)
      return "argument '" + std::string(s.name) + "' must not be a tuple";
    if (s.must_be_const)
      for (const Operand& o : it->second)
        if (!o.value) return "argument '" + std::string(s.name) + "' must be a const";
  }
  for (const auto& [name, _] : args) {
    bool known = false;
    for (const OpArgSpec& s : spec->args) known |= (s.name == name);
    if (!known) {
      if (op == "conv" && name == "bias")
        return "conv 'bias' is rejected on the ANE (OR codegen.m); emit a separate add";
      return "unknown argument '" + name + "' for op '" + std::string(op) + "'";
    }
  }
  if (op == "conv") return infer_conv(args, out);
  if (op == "matmul") return infer_matmul(args, out);
  if (op == "add" || op == "sub" || op == "mul" || op == "pow") return infer_elementwise(args, out);
  if (op == "sigmoid" || op == "identity") {
    *out = single(args, "x")->type;
    if (out->dtype != DType::kFp16 && out->dtype != DType::kFp32)
      return type_err("x", "fp16 or fp32", *out);
    return "";
  }
  if (op == "softmax") {
    const Operand* x = single(args, "x");
    std::vector<std::int64_t> axis;
    if (!const_ints(single(args, "axis"), &axis) || axis.size() != 1)
      return "softmax 'axis' must be an int32 scalar const";
    if (x->type.scalar) return type_err("x", "a tensor", x->type);
    const std::int64_t n = norm_axis(axis[0], x->type.rank());
    if (n < 0 || n >= x->type.rank()) return "softmax axis out of range";
    *out = x->type;
    return "";
  }
  if (op == "reduce_sum") return infer_reduce(args, out);
  if (op == "reshape") return infer_reshape(args, out);
  if (op == "transpose") return infer_transpose(args, out);
  if (op == "concat") return infer_concat(args, out);
  if (op == "slice_by_size") return infer_slice(args, out);
  if (op == "cast") return infer_cast(args, out);
  if (op == "quantize") return infer_quantize(args, out);
  if (op == "dequantize") return infer_dequantize(args, out);
  return "op '" + std::string(op) + "' has no type rule";
}

std::string infer_affine_dequantize(const MilType& data, const MilType& scale,
                                    const MilType& zero_point, std::int64_t axis, MilType* out) {
  if (data.scalar || (data.dtype != DType::kInt8 && data.dtype != DType::kUint8))
    return "quantized_data must be an int8 or uint8 tensor, got " + data.str();
  if (scale.dtype != DType::kFp16 && scale.dtype != DType::kFp32)
    return "scale must be fp16 or fp32, got " + scale.str();
  if (zero_point.dtype != data.dtype)
    return "zero_point dtype must equal quantized_data's, got " + zero_point.str();
  const std::int64_t ax = norm_axis(axis, data.rank());
  if (ax < 0 || ax >= data.rank()) return "axis " + std::to_string(axis) + " out of range";
  for (const MilType* t : {&scale, &zero_point}) {
    if (t->scalar) continue;
    if (t->rank() != 1 || t->shape[0] != data.shape[ax])
      return "scale/zero_point must be scalars or vectors of length " +
             std::to_string(data.shape[ax]) + ", got " + t->str();
  }
  *out = MilType::tensor(scale.dtype, data.shape);
  return "";
}

}  // namespace anelm::ane
