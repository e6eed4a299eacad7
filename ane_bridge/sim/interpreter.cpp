// Op kernels of the simulator: plain loops, fp32 math, one fp16 rounding per op result.
#include "ane_bridge/sim/interpreter.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ane_bridge/fp16.h"

namespace anelm::ane::sim {

namespace {

using Shape = std::vector<std::int64_t>;

std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Strides of `in` viewed with the broadcast output shape `out` (0 on broadcast axes).
std::vector<std::int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<std::int64_t> st(out.size(), 0);
  const auto own = strides_of(in);
  const std::size_t lead = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) st[lead + i] = in[i] == 1 ? 0 : own[i];
  return st;
}

// Calls f(out_index, a_index, b_index) for every element of the broadcast output.
template <typename F>
void for_each_broadcast(const Shape& out, const Shape& a, const Shape& b, F f) {
  const auto sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  std::vector<std::int64_t> idx(out.size(), 0);
  std::int64_t n = 1;
  for (auto d : out) n *= d;
  std::int64_t ia = 0, ib = 0;
  for (std::int64_t o = 0; o < n; ++o) {
    f(o, ia, ib);
    for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
      ++idx[d];
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < out[d]) break;
      ia -= sa[d] * out[d];
      ib -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

const SimTensor& arg(const SimArgs& a, std::string_view name) {
  return *a.find(name)->second.at(0);
}
const SimTensor* opt_arg(const SimArgs& a, std::string_view name) {
  auto it = a.find(name);
  return it == a.end() ? nullptr : it->second.at(0);
}
std::int64_t norm_axis(std::int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }
Shape shape_of(const SimTensor& t) { return t.type.scalar ? Shape{} : t.type.shape; }

// The running-sum policy: fp32, or fp16 after every add when the pessimistic knob is on.
struct Acc {
  bool fp16;
  float add(float acc, float v) const { return fp16 ? round_to_fp16(acc + v) : acc + v; }
};

void run_conv(const SimArgs& a, const Numerics& num, SimTensor* out) {
  const SimTensor& x = arg(a, "x");
  const SimTensor& w = arg(a, "weight");
  const auto& strides = arg(a, "strides").data;
  const auto& dil = arg(a, "dilations").data;
  const auto& pad = arg(a, "pad").data;
  const std::string& pt = arg(a, "pad_type").text;
  const std::int64_t groups = static_cast<std::int64_t>(arg(a, "groups").data[0]);
  const std::int64_t n = x.type.shape[0], cin = x.type.shape[1], h = x.type.shape[2],
                     wd = x.type.shape[3];
  const std::int64_t cout = w.type.shape[0], cpg = w.type.shape[1], kh = w.type.shape[2],
                     kw = w.type.shape[3];
  const std::int64_t oh = out->type.shape[2], ow = out->type.shape[3];
  const std::int64_t sh = static_cast<std::int64_t>(strides[0]),
                     sw = static_cast<std::int64_t>(strides[1]);
  const std::int64_t dh = static_cast<std::int64_t>(dil[0]), dw = static_cast<std::int64_t>(dil[1]);
  std::int64_t pt_h = 0, pt_w = 0;  // top/left padding
  if (pt == "custom") {
    pt_h = static_cast<std::int64_t>(pad[0]);
    pt_w = static_cast<std::int64_t>(pad[2]);
  } else if (pt == "same" || pt == "same_lower") {
    const std::int64_t tot_h = std::max<std::int64_t>(0, (oh - 1) * sh + (kh - 1) * dh + 1 - h);
    const std::int64_t tot_w = std::max<std::int64_t>(0, (ow - 1) * sw + (kw - 1) * dw + 1 - wd);
    pt_h = pt == "same" ? tot_h / 2 : (tot_h + 1) / 2;
    pt_w = pt == "same" ? tot_w / 2 : (tot_w + 1) / 2;
  }
  const Acc acc_policy{num.fp16_accumulate};
  const std::int64_t opg = cout / groups;
  out->data.assign(static_cast<std::size_t>(n * cout * oh * ow), 0.0f);
  const bool pointwise =
      kh == 1 && kw == 1 && sh == 1 && sw == 1 && pt_h == 0 && pt_w == 0 && oh == h && ow == wd;
  std::vector<float> acc;
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t o = 0; o < cout; ++o) {
      const std::int64_t g = o / opg;
      float* y = out->data.data() + ((b * cout + o) * oh * ow);
      if (pointwise) {
        // 1x1 conv = W[o, :] . x[:, s]; summed over input channels in order, per lane.
        acc.assign(static_cast<std::size_t>(oh * ow), 0.0f);
        for (std::int64_t i = 0; i < cpg; ++i) {
          const float wv = w.data[o * cpg + i];
          const float* xr = x.data.data() + ((b * cin + g * cpg + i) * h * wd);
          for (std::int64_t s = 0; s < oh * ow; ++s) acc[s] = acc_policy.add(acc[s], wv * xr[s]);
        }
        std::copy(acc.begin(), acc.end(), y);
        continue;
      }
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          float s = 0.0f;
          for (std::int64_t i = 0; i < cpg; ++i) {
            for (std::int64_t ky = 0; ky < kh; ++ky) {
              const std::int64_t iy = oy * sh + ky * dh - pt_h;
              if (iy < 0 || iy >= h) continue;
              for (std::int64_t kx = 0; kx < kw; ++kx) {
                const std::int64_t ix = ox * sw + kx * dw - pt_w;
                if (ix < 0 || ix >= wd) continue;
                const float wv = w.data[((o * cpg + i) * kh + ky) * kw + kx];
                s = acc_policy.add(s, wv * x.data[((b * cin + g * cpg + i) * h + iy) * wd + ix]);
              }
            }
          }
          y[oy * ow + ox] = s;
        }
      }
    }
  }
}

void run_matmul(const SimArgs& a, const Numerics& num, SimTensor* out) {
  const SimTensor& x = arg(a, "x");
  const SimTensor& y = arg(a, "y");
  const bool tx = arg(a, "transpose_x").data[0] != 0, ty = arg(a, "transpose_y").data[0] != 0;
  const Shape& os = out->type.shape;
  const int r = static_cast<int>(os.size());
  const std::int64_t m = os[r - 2], n = os[r - 1];
  const Shape& xs = x.type.shape;
  const Shape& ys = y.type.shape;
  const std::int64_t k = tx ? xs[xs.size() - 2] : xs.back();
  Shape bo(os.begin(), os.end() - 2), bx(xs.begin(), xs.end() - 2), by(ys.begin(), ys.end() - 2);
  const std::int64_t xmat = xs[xs.size() - 2] * xs.back(), ymat = ys[ys.size() - 2] * ys.back();
  const Acc acc_policy{num.fp16_accumulate};
  out->data.assign(static_cast<std::size_t>(out->type.numel()), 0.0f);
  const Shape one{1};
  for_each_broadcast(bo.empty() ? one : bo, bx.empty() ? one : bx, by.empty() ? one : by,
                     [&](std::int64_t ob, std::int64_t ixb, std::int64_t iyb) {
                       const float* xp = x.data.data() + ixb * xmat;
                       const float* yp = y.data.data() + iyb * ymat;
                       float* op = out->data.data() + ob * m * n;
                       for (std::int64_t i = 0; i < m; ++i) {
                         for (std::int64_t j = 0; j < n; ++j) {
                           float s = 0.0f;
                           for (std::int64_t kk = 0; kk < k; ++kk) {
                             const float xv = tx ? xp[kk * m + i] : xp[i * k + kk];
                             const float yv = ty ? yp[j * k + kk] : yp[kk * n + j];
                             s = acc_policy.add(s, xv * yv);
                           }
                           op[i * n + j] = s;
                         }
                       }
                     });
}

void run_elementwise(const std::string& op, const SimArgs& a, SimTensor* out) {
  const SimTensor& x = arg(a, "x");
  const SimTensor& y = arg(a, "y");
  out->data.assign(static_cast<std::size_t>(out->type.scalar ? 1 : out->type.numel()), 0.0f);
  const Shape os = shape_of(*out);
  const Shape one{1};
  auto apply = [&](auto f) {
    for_each_broadcast(os.empty() ? one : os, shape_of(x).empty() ? one : shape_of(x),
                       shape_of(y).empty() ? one : shape_of(y),
                       [&](std::int64_t o, std::int64_t i, std::int64_t j) {
                         out->data[o] = f(x.data[i], y.data[j]);
                       });
  };
  if (op == "add")
    apply([](float p, float q) { return p + q; });
  else if (op == "sub")
    apply([](float p, float q) { return p - q; });
  else if (op == "mul")
    apply([](float p, float q) { return p * q; });
  else
    apply([](float p, float q) { return std::pow(p, q); });
}

void run_reduce_sum(const SimArgs& a, const Numerics& num, SimTensor* out) {
  const SimTensor& x = arg(a, "x");
  const int r = x.type.rank();
  std::vector<bool> red(r, false);
  if (const SimTensor* axes = opt_arg(a, "axes")) {
    for (float v : axes->data) red[norm_axis(static_cast<std::int64_t>(v), r)] = true;
  } else {
    std::fill(red.begin(), red.end(), true);
  }
  // Output index = input index with reduced axes dropped (keep_dims only changes the shape).
  Shape kept(r);
  for (int i = 0; i < r; ++i) kept[i] = red[i] ? 1 : x.type.shape[i];
  const auto ks = strides_of(kept);
  std::int64_t on = 1;
  for (auto d : kept) on *= d;
  std::vector<float> acc(static_cast<std::size_t>(on), 0.0f);
  const Acc acc_policy{num.fp16_accumulate};
  std::vector<std::int64_t> idx(r, 0);
  for (std::int64_t e = 0; e < x.type.numel(); ++e) {
    std::int64_t o = 0;
    for (int d = 0; d < r; ++d) o += red[d] ? 0 : idx[d] * ks[d];
    acc[o] = acc_policy.add(acc[o], x.data[e]);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[d] < x.type.shape[d]) break;
      idx[d] = 0;
    }
  }
  out->data = std::move(acc);
}

void run_softmax(const SimArgs& a, SimTensor* out) {
  const SimTensor& x = arg(a, "x");
  const int r = x.type.rank();
  const std::int64_t axis = norm_axis(static_cast<std::int64_t>(arg(a, "axis").data[0]), r);
  const auto st = strides_of(x.type.shape);
  const std::int64_t len = x.type.shape[axis], stride = st[axis];
  const std::int64_t outer = x.type.numel() / (len * stride);
  out->data.assign(x.data.size(), 0.0f);
  std::vector<float> e(static_cast<std::size_t>(len));
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t in = 0; in < stride; ++in) {
      const std::int64_t base = o * len * stride + in;
      float mx = -std::numeric_limits<float>::infinity();
      bool nan = false;
      for (std::int64_t i = 0; i < len; ++i) {
        const float v = x.data[base + i * stride];
        nan |= std::isnan(v);
        mx = std::max(mx, v);
      }
      float sum = 0.0f;
      for (std::int64_t i = 0; i < len; ++i) {
        e[i] = nan ? std::numeric_limits<float>::quiet_NaN()
                   : std::exp(x.data[base + i * stride] - mx);
        sum += e[i];
      }
      for (std::int64_t i = 0; i < len; ++i) out->data[base + i * stride] = e[i] / sum;
    }
  }
}

void run_transpose(const SimArgs& a, SimTensor* out) {
  const SimTensor& x = arg(a, "x");
  const auto& perm = arg(a, "perm").data;
  const int r = x.type.rank();
  const auto xs = strides_of(x.type.shape);
  std::vector<std::int64_t> src_stride(r);
  for (int i = 0; i < r; ++i) src_stride[i] = xs[norm_axis(static_cast<std::int64_t>(perm[i]), r)];
  out->data.assign(x.data.size(), 0.0f);
  std::vector<std::int64_t> idx(r, 0);
  std::int64_t src = 0;
  for (std::int64_t o = 0; o < out->type.numel(); ++o) {
    out->data[o] = x.data[src];
    for (int d = r - 1; d >= 0; --d) {
      ++idx[d];
      src += src_stride[d];
      if (idx[d] < out->type.shape[d]) break;
      src -= src_stride[d] * out->type.shape[d];
      idx[d] = 0;
    }
  }
}

void run_concat(const SimArgs& a, SimTensor* out) {
  const auto& vals = a.find("values")->second;
  const int r = out->type.rank();
  const std::int64_t axis = norm_axis(static_cast<std::int64_t>(arg(a, "axis").data[0]), r);
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= out->type.shape[i];
  for (int i = static_cast<int>(axis) + 1; i < r; ++i) inner *= out->type.shape[i];
  out->data.clear();
  out->data.reserve(static_cast<std::size_t>(out->type.numel()));
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const SimTensor* v : vals) {
      const std::int64_t chunk = v->type.shape[axis] * inner;
      out->data.insert(out->data.end(), v->data.begin() + o * chunk,
                       v->data.begin() + (o + 1) * chunk);
    }
  }
}

void run_slice(const SimArgs& a, SimTensor* out) {
  const SimTensor& x = arg(a, "x");
  const auto& begin = arg(a, "begin").data;
  const int r = x.type.rank();
  const auto xs = strides_of(x.type.shape);
  std::int64_t base = 0;
  for (int i = 0; i < r; ++i) {
    std::int64_t b = static_cast<std::int64_t>(begin[i]);
    if (b < 0) b += x.type.shape[i];
    base += b * xs[i];
  }
  out->data.assign(static_cast<std::size_t>(out->type.numel()), 0.0f);
  std::vector<std::int64_t> idx(r, 0);
  std::int64_t src = base;
  for (std::int64_t o = 0; o < out->type.numel(); ++o) {
    out->data[o] = x.data[src];
    for (int d = r - 1; d >= 0; --d) {
      ++idx[d];
      src += xs[d];
      if (idx[d] < out->type.shape[d]) break;
      src -= xs[d] * out->type.shape[d];
      idx[d] = 0;
    }
  }
}

// Per-element parameter index along `axis` for per-channel quantization parameters.
std::int64_t channel_of(std::int64_t e, const Shape& s, int axis) {
  std::int64_t inner = 1;
  for (int i = axis + 1; i < static_cast<int>(s.size()); ++i) inner *= s[i];
  return (e / inner) % s[axis];
}

float param_at(const SimTensor* p, std::int64_t e, const Shape& s, int axis, float dflt) {
  if (!p) return dflt;
  if (p->data.size() == 1) return p->data[0];
  return p->data[channel_of(e, s, axis)];
}

void run_quant(const std::string& op, const SimArgs& a, SimTensor* out) {
  const SimTensor& in = arg(a, "input");
  const SimTensor* scale = opt_arg(a, "scale");
  const SimTensor* zp = opt_arg(a, "zero_point");
  const SimTensor* axis_t = opt_arg(a, "axis");
  const Shape s = shape_of(in);
  const int axis =
      axis_t
          ? static_cast<int>(norm_axis(static_cast<std::int64_t>(axis_t->data[0]), in.type.rank()))
          : 0;
  out->data.assign(in.data.size(), 0.0f);
  const float lo = out->type.dtype == DType::kUint8 ? 0.0f : -128.0f;
  const float hi = out->type.dtype == DType::kUint8 ? 255.0f : 127.0f;
  for (std::size_t e = 0; e < in.data.size(); ++e) {
    const float sc = param_at(scale, static_cast<std::int64_t>(e), s, axis, 1.0f);
    const float z = param_at(zp, static_cast<std::int64_t>(e), s, axis, 0.0f);
    if (op == "quantize") {
      // round half to even (nearbyint in the default rounding mode), then clip (CT iOS17)
      const float q = std::nearbyint(in.data[e] / sc) + z;
      out->data[e] = std::isnan(q) ? 0.0f : std::clamp(q, lo, hi);
    } else {
      out->data[e] = sc * (in.data[e] - z);
    }
  }
}

void run_cast(const SimArgs& a, SimTensor* out) {
  const SimTensor& x = arg(a, "x");
  out->data = x.data;
  if (out->type.dtype == DType::kInt32)
    for (float& v : out->data) v = std::isnan(v) ? 0.0f : std::trunc(v);
  if (out->type.dtype == DType::kBool)
    for (float& v : out->data) v = v != 0.0f ? 1.0f : 0.0f;
}

}  // namespace

void round_to_dtype(SimTensor* t, const Numerics& num) {
  if (t->type.dtype != DType::kFp16) return;
  for (float& v : t->data) {
    v = round_to_fp16(v);
    if (num.ftz) v = flush_fp16_subnormal(v);
  }
}

Status run_op(const std::string& op, const SimArgs& args, const Numerics& num, SimTensor* out) {
  if (op == "conv")
    run_conv(args, num, out);
  else if (op == "matmul")
    run_matmul(args, num, out);
  else if (op == "add" || op == "sub" || op == "mul" || op == "pow")
    run_elementwise(op, args, out);
  else if (op == "sigmoid") {
    out->data = arg(args, "x").data;
    for (float& v : out->data) v = 1.0f / (1.0f + std::exp(-v));
  } else if (op == "identity" || op == "reshape")
    out->data = arg(args, "x").data;
  else if (op == "softmax")
    run_softmax(args, out);
  else if (op == "reduce_sum")
    run_reduce_sum(args, num, out);
  else if (op == "transpose")
    run_transpose(args, out);
  else if (op == "concat")
    run_concat(args, out);
  else if (op == "slice_by_size")
    run_slice(args, out);
  else if (op == "cast")
    run_cast(args, out);
  else if (op == "quantize" || op == "dequantize")
    run_quant(op, args, out);
  else
    return Status(StatusCode::kEvalFailed, "simulator has no kernel for op '" + op + "'");
  round_to_dtype(out, num);
  return {};
}

void affine_dequantize(const SimTensor& q, const std::vector<float>& scale,
                       const std::vector<float>& zero_point, int axis, const Numerics& num,
                       SimTensor* out) {
  out->data.assign(q.data.size(), 0.0f);
  for (std::size_t e = 0; e < q.data.size(); ++e) {
    const std::int64_t c = channel_of(static_cast<std::int64_t>(e), q.type.shape, axis);
    const float sc = scale.size() == 1 ? scale[0] : scale[c];
    const float z = zero_point.size() == 1 ? zero_point[0] : zero_point[c];
    out->data[e] = sc * (q.data[e] - z);
  }
  round_to_dtype(out, num);
}

}  // namespace anelm::ane::sim
