// The fused blocks' shared emitter (internal to ane_bridge): weight files, the FTZ-safe two-pass
// RMSNorm, LayerNorm and tanh-GELU patterns, conv + bias, and the shape/weight checks. Used by
// mil_blocks.cpp (Qwen/Llama layers) and mil_blocks_families.cpp (GPT-2, Gemma 3).
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "ane_bridge/fp16.h"
#include "ane_bridge/mil_blocks.h"
#include "ane_bridge/mil_writer.h"
#include "ane_bridge/weight_blob.h"

namespace anelm::ane::detail {

// Builds one block: collects weight files (one tensor per file: the MX per-matrix convention that
// also works on M1, §3.2) and emits the shared RMSNorm and linear patterns.
class BlockEmitter {
 public:
  BlockEmitter(const std::string& name, const BlockOptions& opts)
      : opts_(opts), f_(prog_.add_function("main")) {
    prog_.set_tag(name);
  }

  MilFunctionBuilder& fn() { return f_; }

  // Weight [rows, cols, 1, 1] from fp32 rows (already gain-folded); fp16 const or int8 + scales.
  MilVar weight(const std::string& var, const std::string& file, const std::vector<float>& w,
                std::int64_t rows, std::int64_t cols) {
    const std::vector<std::int64_t> shape{rows, cols, 1, 1};
    if (opts_.format == WeightFormat::kFp16) {
      WeightBlobWriter blob;
      const std::uint64_t off = blob.add_fp16_from_fp32(w);
      add_file(file, blob.take());
      return f_.const_blob(var, MilType::tensor(DType::kFp16, shape), BlobRef{path(file), off});
    }
    const QuantizedRows qr = quantize_rows_int8(w, rows, cols);
    WeightBlobWriter qblob(BlobMode::kCanonical, opts_.int8_blob_dtype_code), sblob;
    const std::uint64_t qoff = qblob.add_int8(qr.q);
    const std::uint64_t soff = sblob.add_fp16(qr.scale);
    add_file(file, qblob.take());
    const std::string sfile = file + "_scale";
    add_file(sfile, sblob.take());
    const BlobRef scale_ref{path(sfile), soff};
    return f_.affine_dequantize(var, MilType::tensor(DType::kInt8, shape),
                                BlobRef{path(file), qoff}, &scale_ref, 1.0, 0);
  }

  // A [1, C, 1, 1] fp16 vector const (biases, gains); always fp16.
  MilVar vec(const std::string& var, const std::string& file, const std::vector<float>& v) {
    WeightBlobWriter blob;
    const std::uint64_t off = blob.add_fp16_from_fp32(v);
    add_file(file, blob.take());
    return f_.const_blob(
        var, MilType::tensor(DType::kFp16, {1, static_cast<std::int64_t>(v.size()), 1, 1}),
        BlobRef{path(file), off});
  }

  // Normalises x [1, D, 1, S] over channels without the gain and without sqrt(D) (both folded
  // into the next weights, see scaled_gain); returns x / (sqrt(D) * sqrt(mean(x^2) + eps)).
  // Pass 1: xs = x*p; r1 = (sum(xs^2) + max(D*eps*p^2, 2^-14))^-0.5. Not dividing by D keeps the
  // value fed to pow an fp16 normal (FTZ-safe). Its sum is coarse for a token far below the
  // calibrated p (squares of |xs| < 2^-7 flush to zero on an FTZ chip), but r1 is finite and
  // within a few x of 1 / (sqrt(D) * rms(xs)), so pass 2 rescales every token to elements ~1:
  // x2 = xs * r1 * c (c ~ sqrt(D)), whose squares are all normals, and the exact norm follows
  // from x2 with eps in x2's units, (r1 * c * sqrt(D*eps) * p)^2. The usable band of p * rms
  // grows from [1/32, 4] to [~2^-9, 4] (ane_bridge/README.md): one p now serves a BOS token with
  // a ~1e3 outlier and ordinary tokens of rms ~0.05 in the same program.
  MilVar rms_norm(const MilVar& x, std::int64_t d, double eps, const std::string& px) {
    norm_consts(d, eps);
    MilVar xs = f_.binary("mul", px + "xs", px + "rms_scale", x, psc_);
    return rms_core(xs, {psc_, eps_, rq_}, px);
  }

  // rms_norm with its own prescale `p` (a program with several norms on differently sized streams:
  // Gemma 3's post-norms); its consts are named with the prefix `px`.
  MilVar rms_norm_at(const MilVar& x, std::int64_t d, double eps, double p, const std::string& px) {
    const NormSet ns = norm_set(d, eps, p, px);
    MilVar xs = f_.binary("mul", px + "xs", px + "rms_scale", x, ns.psc);
    return rms_core(xs, ns, px);
  }

  // LayerNorm without gain and bias (both folded into the next weights and bias, as the RMSNorm
  // gain is), times 1/sqrt(D) like rms_norm: (x - mean) / (sqrt(D) * sqrt(var + eps)). The mean is
  // taken of the prescaled xs = x*p, so the sum stays finite wherever the squares' sum does
  // (|sum xs| <= sqrt(D * sum xs^2), Cauchy-Schwarz) and the calibration that keeps RMSNorm finite
  // keeps this finite too; the centred xs then goes through the same FTZ-safe two passes.
  MilVar layer_norm(const MilVar& x, std::int64_t d, double eps, const std::string& px) {
    norm_consts(d, eps);
    if (!have_mean_) {
      have_mean_ = true;
      inv_d_ = f_.const_fp16("inv_d", 1.0 / static_cast<double>(d), FloatFormat::kExact);
    }
    MilVar xs = f_.binary("mul", px + "xs", px + "ln_scale", x, psc_);
    MilVar s1 = f_.reduce_sum(px + "s1", px + "ln_sum", xs, rax_, kd_);
    MilVar mu = f_.binary("mul", px + "mu", px + "ln_mean", s1, inv_d_);
    MilVar xc = f_.binary("sub", px + "xc", px + "ln_centre", xs, mu);
    return rms_core(xc, {psc_, eps_, rq_}, px);
  }

  // GELU, tanh approximation, from ops the specification documents as compiling (gelu itself is
  // reported to fail, §2.6): 0.5 u (1 + tanh(z)) == u * sigmoid(2 z), z = sqrt(2/pi) (u + 0.044715
  // u^3), written u * sigmoid(u * (a + b u^2)) with a = 2 sqrt(2/pi), b = 0.044715 a. Where u^2
  // overflows (|u| > 255) the sigmoid's argument is +-inf and the result u or 0, as GELU's.
  MilVar gelu_tanh(const MilVar& u, const std::string& px) {
    if (!have_gelu_) {
      have_gelu_ = true;
      const double a = 2.0 * std::sqrt(2.0 / 3.14159265358979323846);
      ga_ = f_.const_fp16("gelu_a", a, FloatFormat::kExact);
      gb_ = f_.const_fp16("gelu_b", 0.044715 * a, FloatFormat::kExact);
    }
    MilVar u2 = f_.binary("mul", px + "u2", px + "gelu_sq", u, u);
    MilVar k = f_.binary("mul", px + "gk", px + "gelu_cube", u2, gb_);
    MilVar k2 = f_.binary("add", px + "gk2", px + "gelu_lin", k, ga_);
    MilVar z = f_.binary("mul", px + "gz", px + "gelu_arg", u, k2);
    MilVar sg = f_.unary("sigmoid", px + "gs", px + "gelu_sig", z);
    return f_.binary("mul", px + "gelu", px + "gelu_mul", u, sg);
  }

  ConvConsts& conv_consts() {
    if (!have_conv_) {
      cc_ = f_.conv_consts();
      have_conv_ = true;
    }
    return cc_;
  }

  Status finish(BlockProgram* out) {
    ANE_RETURN_IF_ERROR(prog_.build(&out->source.mil_text));
    out->weight_bytes = 0;
    for (const WeightFile& w : files_) out->weight_bytes += w.bytes.size();
    out->source.weights = std::move(files_);
    out->seq_len = opts_.seq_len;
    out->format = opts_.format;
    return {};
  }

 private:
  static std::string path(const std::string& file) {
    return "@model_path/weights/" + file + ".bin";
  }
  void add_file(const std::string& file, std::vector<std::uint8_t> bytes) {
    files_.push_back(WeightFile{path(file), std::move(bytes)});
  }

  // The prescale-dependent consts of one norm.
  struct NormSet {
    MilVar psc, eps, rq;
  };

  NormSet norm_set(std::int64_t d, double eps, double p, const std::string& px) {
    norm_consts(d, eps);
    NormSet n;
    n.psc = f_.const_fp16(px + "psc", p, FloatFormat::kExact);
    n.eps = f_.const_fp16(px + "eps",
                          std::max(static_cast<double>(d) * eps * p * p,
                                   static_cast<double>(kFp16MinNormal)),
                          FloatFormat::kExact);
    const double c = std::exp2(std::floor(std::log2(std::sqrt(static_cast<double>(d)))));
    n.rq = f_.const_fp16(px + "rq", c * std::sqrt(static_cast<double>(d) * eps) * p,
                         FloatFormat::kExact);
    return n;
  }

  // The two passes of rms_norm over an already prescaled xs (see rms_norm).
  MilVar rms_core(const MilVar& xs, const NormSet& ns, const std::string& px) {
    MilVar sq = f_.binary("mul", px + "sq", px + "rms_sq", xs, xs);
    MilVar ss = f_.reduce_sum(px + "ss", px + "rms_sum", sq, rax_, kd_);
    MilVar me = f_.binary("add", px + "me", px + "rms_eps", ss, ns.eps);
    MilVar r1 = f_.binary("pow", px + "r1", px + "rms_rsqrt", me, nhalf_);
    MilVar k = f_.binary("mul", px + "k", px + "rms_k", r1, rc_);
    MilVar x2 = f_.binary("mul", px + "x2", px + "rms_rescale", xs, k);
    MilVar sq2 = f_.binary("mul", px + "sq2", px + "rms_sq2", x2, x2);
    MilVar ss2 = f_.reduce_sum(px + "ss2", px + "rms_sum2", sq2, rax_, kd_);
    MilVar t = f_.binary("mul", px + "t", px + "rms_eps_root2", r1, ns.rq);
    MilVar e2 = f_.binary("mul", px + "e2", px + "rms_eps2", t, t);
    MilVar se2 = f_.binary("add", px + "se2", px + "rms_eps_add2", ss2, e2);
    MilVar me2 = f_.binary("add", px + "me2", px + "rms_floor2", se2, fl_);
    MilVar rr = f_.binary("pow", px + "rr", px + "rms_rsqrt2", me2, nhalf_);
    return f_.binary("mul", px + "xn", px + "rms_norm", x2, rr);
  }

  void norm_consts(std::int64_t d, double eps) {
    if (have_norm_) return;
    have_norm_ = true;
    const double p = opts_.rms_prescale;
    rax_ = f_.const_int32_vec("rax", {1});
    kd_ = f_.const_bool("kd", true);
    psc_ = f_.const_fp16("psc", p, FloatFormat::kExact);
    // eps is compared with sum(xs^2) = D * p^2 * mean(x^2). Raised to the smallest fp16 *normal*
    // (2^-14), never a subnormal: a chip that flushes subnormals (the safe reading, §10.6) would
    // otherwise see 0, and an all-zero lane (decode padding) would give 0 * inf = NaN. The raise
    // only matters where sum(xs^2) itself is near 2^-14, i.e. below the calibrated range.
    eps_ = f_.const_fp16("eps",
                         std::max(static_cast<double>(d) * eps * p * p,
                                  static_cast<double>(kFp16MinNormal)),
                         FloatFormat::kExact);
    nhalf_ = f_.const_fp16("nhalf", -0.5, FloatFormat::kExact);
    // Pass 2 (see rms_norm): c, the power of two nearest below sqrt(D), puts x2's elements near 1
    // (largest possible square D, sum ~c^2); q = c * sqrt(D*eps) * p carries eps into x2's units
    // (it flushes only for p so small that eps is negligible next to the stream). fl = 2^-14 keeps
    // the last pow finite where x2 is all zero (padding lanes, or a pass-1 sum that overflowed to
    // give r1 = 0): 0 * 128 instead of 0 * inf; next to a sum of ~c^2 it is below fp16 resolution.
    const double c = std::exp2(std::floor(std::log2(std::sqrt(static_cast<double>(d)))));
    rc_ = f_.const_fp16("rc", c, FloatFormat::kExact);
    rq_ = f_.const_fp16("rq", c * std::sqrt(static_cast<double>(d) * eps) * p, FloatFormat::kExact);
    fl_ = f_.const_fp16("fl", kFp16MinNormal, FloatFormat::kExact);
  }

  BlockOptions opts_;
  MilProgramBuilder prog_;
  MilFunctionBuilder& f_;
  std::vector<WeightFile> files_;
  ConvConsts cc_;
  bool have_conv_ = false, have_norm_ = false, have_mean_ = false, have_gelu_ = false;
  MilVar rax_, kd_, psc_, eps_, nhalf_, rc_, rq_, fl_, inv_d_, ga_, gb_;
};

inline MilType act(std::int64_t c, std::int64_t s) { return MilType::tensor(DType::kFp16, {1, c, 1, s}); }

inline Status check_span(std::span<const float> v, std::int64_t n, const std::string& what) {
  if (static_cast<std::int64_t>(v.size()) != n)
    return invalid_argument(what + " has " + std::to_string(v.size()) + " values, expected " +
                            std::to_string(n));
  return {};
}

inline Status check_opts(const LayerShapes& s, const BlockOptions& o) {
  if (s.d_model <= 0 || s.n_heads <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 || s.d_ff <= 0)
    return invalid_argument("layer shapes must be positive");
  if (o.seq_len <= 0 || o.seq_len % 32 != 0)
    return invalid_argument(
        "seq_len " + std::to_string(o.seq_len) +
        " must be a positive multiple of 32 (64-byte fp16 rows, §4.3); decode uses 32");
  const double l2 = std::log2(o.rms_prescale);
  if (o.rms_prescale <= 0 || l2 != std::floor(l2))
    return invalid_argument("rms_prescale must be a power of two");
  return {};
}

// W[o][i] * g[i] in fp32 (g empty: plain copy), optionally over a row range.
inline std::vector<float> fold_gain(std::span<const float> w, std::int64_t rows, std::int64_t cols,
                             std::span<const float> g) {
  std::vector<float> out(w.begin(), w.begin() + rows * cols);
  if (!g.empty())
    for (std::int64_t o = 0; o < rows; ++o)
      for (std::int64_t i = 0; i < cols; ++i) out[o * cols + i] *= g[i];
  return out;
}

// The norm gain times sqrt(D): rms_norm leaves x / (sqrt(D) * rms), so the factor rides on the
// next weights (one fp32 multiply, rounded with them) instead of costing an op per program.
inline std::vector<float> scaled_gain(std::span<const float> g, std::int64_t d) {
  const float k = static_cast<float>(std::sqrt(static_cast<double>(d)));
  std::vector<float> out(g.begin(), g.end());
  for (float& v : out) v *= k;
  return out;
}

// Appends `lw` rows to a stacked weight and its bias (zeros when absent); returns whether it had
// one.
inline bool stack_linear(const LinearWeights& lw, std::int64_t rows, std::int64_t cols,
                  std::span<const float> gain, std::vector<float>* w, std::vector<float>* b) {
  const auto folded = fold_gain(lw.weight, rows, cols, gain);
  w->insert(w->end(), folded.begin(), folded.end());
  if (lw.bias.empty())
    b->insert(b->end(), static_cast<std::size_t>(rows), 0.0f);
  else
    b->insert(b->end(), lw.bias.begin(), lw.bias.end());
  return !lw.bias.empty();
}

inline Status check_linear(const LinearWeights& lw, std::int64_t rows, std::int64_t cols,
                    const std::string& what) {
  ANE_RETURN_IF_ERROR(check_span(lw.weight, rows * cols, what + ".weight"));
  if (!lw.bias.empty()) ANE_RETURN_IF_ERROR(check_span(lw.bias, rows, what + ".bias"));
  return {};
}

// conv(W, x) (+ bias via add: conv bias= is rejected on the ANE, §2.6).
inline MilVar linear(BlockEmitter& e, const std::string& var, const MilVar& w, const MilVar* bias,
              const MilVar& x) {
  MilFunctionBuilder& f = e.fn();
  if (!bias) return f.conv(var, "conv_" + var, e.conv_consts(), w, x);
  MilVar c = f.conv(var + "_c", "conv_" + var, e.conv_consts(), w, x);
  return f.binary("add", var, "bias_" + var, c, *bias);
}


// b + W . nb per row in fp64 (b empty: zeros): a norm's bias carried through the next projection.
inline std::vector<float> fold_norm_bias(std::span<const float> w, std::span<const float> b,
                                  std::int64_t rows, std::int64_t cols,
                                  std::span<const float> nb) {
  std::vector<float> out(static_cast<std::size_t>(rows));
  for (std::int64_t o = 0; o < rows; ++o) {
    double s = b.empty() ? 0.0 : b[static_cast<std::size_t>(o)];
    for (std::int64_t i = 0; i < cols; ++i)
      s += static_cast<double>(w[static_cast<std::size_t>(o * cols + i)]) * nb[static_cast<std::size_t>(i)];
    out[static_cast<std::size_t>(o)] = static_cast<float>(s);
  }
  return out;
}

// One LM-head chunk: no norm (norm_gain empty), RMSNorm (gain), or LayerNorm (gain and ln_bias, the
// bias folded into the head's bias): mil_blocks.cpp's build_lm_head_chunk and GPT-2's head.
Status build_head_chunk(const LayerShapes& s, std::span<const float> head_weight, std::int64_t vocab,
                        const LmHeadChunk& chunk, std::span<const float> norm_gain,
                        std::span<const float> ln_bias, bool layer_norm, const BlockOptions& opts,
                        BlockProgram* out);

}  // namespace anelm::ane::detail
