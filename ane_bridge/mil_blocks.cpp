// Fused decoder-layer and LM-head MIL programs (ane-programming-model.md §2.8, §2.9, §6.3, §6.9).
#include "ane_bridge/mil_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ane_bridge/fp16.h"
#include "ane_bridge/mil_writer.h"
#include "ane_bridge/weight_blob.h"

namespace anelm::ane {

namespace {

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
    MilVar sq = f_.binary("mul", px + "sq", px + "rms_sq", xs, xs);
    MilVar ss = f_.reduce_sum(px + "ss", px + "rms_sum", sq, rax_, kd_);
    MilVar me = f_.binary("add", px + "me", px + "rms_eps", ss, eps_);
    MilVar r1 = f_.binary("pow", px + "r1", px + "rms_rsqrt", me, nhalf_);
    MilVar k = f_.binary("mul", px + "k", px + "rms_k", r1, rc_);
    MilVar x2 = f_.binary("mul", px + "x2", px + "rms_rescale", xs, k);
    MilVar sq2 = f_.binary("mul", px + "sq2", px + "rms_sq2", x2, x2);
    MilVar ss2 = f_.reduce_sum(px + "ss2", px + "rms_sum2", sq2, rax_, kd_);
    MilVar t = f_.binary("mul", px + "t", px + "rms_eps_root2", r1, rq_);
    MilVar e2 = f_.binary("mul", px + "e2", px + "rms_eps2", t, t);
    MilVar se2 = f_.binary("add", px + "se2", px + "rms_eps_add2", ss2, e2);
    MilVar me2 = f_.binary("add", px + "me2", px + "rms_floor2", se2, fl_);
    MilVar rr = f_.binary("pow", px + "rr", px + "rms_rsqrt2", me2, nhalf_);
    return f_.binary("mul", px + "xn", px + "rms_norm", x2, rr);
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
  bool have_conv_ = false, have_norm_ = false;
  MilVar rax_, kd_, psc_, eps_, nhalf_, rc_, rq_, fl_;
};

MilType act(std::int64_t c, std::int64_t s) { return MilType::tensor(DType::kFp16, {1, c, 1, s}); }

Status check_span(std::span<const float> v, std::int64_t n, const std::string& what) {
  if (static_cast<std::int64_t>(v.size()) != n)
    return invalid_argument(what + " has " + std::to_string(v.size()) + " values, expected " +
                            std::to_string(n));
  return {};
}

Status check_opts(const LayerShapes& s, const BlockOptions& o) {
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
std::vector<float> fold_gain(std::span<const float> w, std::int64_t rows, std::int64_t cols,
                             std::span<const float> g) {
  std::vector<float> out(w.begin(), w.begin() + rows * cols);
  if (!g.empty())
    for (std::int64_t o = 0; o < rows; ++o)
      for (std::int64_t i = 0; i < cols; ++i) out[o * cols + i] *= g[i];
  return out;
}

// The norm gain times sqrt(D): rms_norm leaves x / (sqrt(D) * rms), so the factor rides on the
// next weights (one fp32 multiply, rounded with them) instead of costing an op per program.
std::vector<float> scaled_gain(std::span<const float> g, std::int64_t d) {
  const float k = static_cast<float>(std::sqrt(static_cast<double>(d)));
  std::vector<float> out(g.begin(), g.end());
  for (float& v : out) v *= k;
  return out;
}

// Appends `lw` rows to a stacked weight and its bias (zeros when absent); returns whether it had
// one.
bool stack_linear(const LinearWeights& lw, std::int64_t rows, std::int64_t cols,
                  std::span<const float> gain, std::vector<float>* w, std::vector<float>* b) {
  const auto folded = fold_gain(lw.weight, rows, cols, gain);
  w->insert(w->end(), folded.begin(), folded.end());
  if (lw.bias.empty())
    b->insert(b->end(), static_cast<std::size_t>(rows), 0.0f);
  else
    b->insert(b->end(), lw.bias.begin(), lw.bias.end());
  return !lw.bias.empty();
}

Status check_linear(const LinearWeights& lw, std::int64_t rows, std::int64_t cols,
                    const std::string& what) {
  ANE_RETURN_IF_ERROR(check_span(lw.weight, rows * cols, what + ".weight"));
  if (!lw.bias.empty()) ANE_RETURN_IF_ERROR(check_span(lw.bias, rows, what + ".bias"));
  return {};
}

// conv(W, x) (+ bias via add: conv bias= is rejected on the ANE, §2.6).
MilVar linear(BlockEmitter& e, const std::string& var, const MilVar& w, const MilVar* bias,
              const MilVar& x) {
  MilFunctionBuilder& f = e.fn();
  if (!bias) return f.conv(var, "conv_" + var, e.conv_consts(), w, x);
  MilVar c = f.conv(var + "_c", "conv_" + var, e.conv_consts(), w, x);
  return f.binary("add", var, "bias_" + var, c, *bias);
}

}  // namespace

std::string block_name(const std::string& kind, int index, std::int64_t seq_len) {
  char buf[96];
  if (kind == "attn_in" || kind == "ffn" || kind == "dn_in" || kind == "dn_ffn")
    std::snprintf(buf, sizeof buf, "L%02d_%s_s%lld", index, kind.c_str(),
                  static_cast<long long>(seq_len));
  else if (kind == "lm_head")
    std::snprintf(buf, sizeof buf, "lm_head_%02d_s%lld", index, static_cast<long long>(seq_len));
  else
    std::snprintf(buf, sizeof buf, "%s_s%lld", kind.c_str(), static_cast<long long>(seq_len));
  return buf;
}

QuantizedRows quantize_rows_int8(std::span<const float> w, std::int64_t rows, std::int64_t cols) {
  QuantizedRows r;
  r.q.resize(static_cast<std::size_t>(rows * cols));
  r.scale.resize(static_cast<std::size_t>(rows));
  for (std::int64_t o = 0; o < rows; ++o) {
    float mx = 0.0f;
    for (std::int64_t i = 0; i < cols; ++i) mx = std::max(mx, std::fabs(w[o * cols + i]));
    std::uint16_t sbits = fp32_to_fp16(std::min(mx / 127.0f, kFp16Max));
    if (fp16_to_fp32(sbits) == 0.0f) sbits = fp32_to_fp16(1.0f);  // zero (or vanishing) row
    r.scale[o] = sbits;
    const float sc = fp16_to_fp32(sbits);
    for (std::int64_t i = 0; i < cols; ++i) {
      const float q = std::nearbyint(w[o * cols + i] / sc);
      r.q[o * cols + i] = static_cast<std::int8_t>(std::clamp(q, -127.0f, 127.0f));
    }
  }
  return r;
}

namespace {

// One projection of a stacked in-projection program: its output segment and rows.
struct StackPart {
  std::string name;
  LinearWeights w;
  std::int64_t rows = 0;
};

// RMSNorm(x) * gain, then every part's rows stacked into one conv (+ one bias add when any part
// has a bias): program A of every layer kind. `wvar`/`wfile` name the stacked weight (the bias is
// "B"/"b" + the rest), kept per kind so Qwen2.5's programs stay byte-identical.
Status build_norm_stack(const LayerShapes& s, std::span<const float> norm_gain,
                        const std::vector<StackPart>& parts, const std::string& kind,
                        const std::string& wvar, const std::string& wfile,
                        const BlockOptions& opts, BlockProgram* out) {
  ANE_RETURN_IF_ERROR(check_opts(s, opts));
  const std::int64_t d = s.d_model, S = opts.seq_len;
  ANE_RETURN_IF_ERROR(check_span(norm_gain, d, "norm_gain"));
  std::int64_t rows = 0;
  for (const StackPart& p : parts) {
    if (p.rows <= 0) return invalid_argument(p.name + " has no rows");
    ANE_RETURN_IF_ERROR(check_linear(p.w, p.rows, d, p.name));
    rows += p.rows;
  }
  *out = BlockProgram{};
  out->source.name = opts.name.empty() ? block_name(kind, 0, S) : opts.name;
  out->kind = kind;
  BlockEmitter e(out->source.name, opts);
  MilFunctionBuilder& f = e.fn();
  MilVar x = f.input("x", act(d, S));
  std::vector<float> ws, bs;
  const std::vector<float> gain = scaled_gain(norm_gain, d);
  bool has_bias = false;
  for (const StackPart& p : parts) has_bias |= stack_linear(p.w, p.rows, d, gain, &ws, &bs);
  e.conv_consts();
  MilVar W = e.weight(wvar, wfile, ws, rows, d);
  MilVar B;
  if (has_bias) B = e.vec("B" + wvar.substr(1), "b" + wfile.substr(1), bs);
  MilVar xn = e.rms_norm(x, d, s.rms_eps, "");
  MilVar y = linear(e, "y", W, has_bias ? &B : nullptr, xn);
  f.output(y);
  ANE_RETURN_IF_ERROR(e.finish(out));
  out->inputs = {IoDesc{"x", act(d, S), {{"x", 0, d}}}};
  std::vector<IoSegment> segs;
  std::int64_t off = 0;
  for (const StackPart& p : parts) {
    segs.push_back({p.name, off, p.rows});
    off += p.rows;
  }
  out->outputs = {IoDesc{"y", y.type, std::move(segs)}};
  return {};
}

// Rows of a [rows][d] span (0 when it is not a whole number of rows).
std::int64_t rows_of(std::span<const float> w, std::int64_t d) {
  const auto n = static_cast<std::int64_t>(w.size());
  return d > 0 && n % d == 0 ? n / d : 0;
}

}  // namespace

Status build_attn_input_block(const LayerShapes& s, const AttnInputWeights& w,
                              const BlockOptions& opts, BlockProgram* out) {
  const std::int64_t qd = s.q_dim(), kvd = s.kv_dim();
  std::vector<StackPart> parts = {{"q", w.q, qd}, {"k", w.k, kvd}, {"v", w.v, kvd}};
  if (!w.gate.weight.empty()) parts.push_back({"gate", w.gate, qd});
  return build_norm_stack(s, w.norm_gain, parts, "attn_in", "Wqkv", "wqkv", opts, out);
}

Status build_deltanet_input_block(const LayerShapes& s, const DeltaNetInputWeights& w,
                                  const BlockOptions& opts, BlockProgram* out) {
  const std::int64_t d = s.d_model;
  const std::vector<StackPart> parts = {{"qkv", {w.qkv, {}}, rows_of(w.qkv, d)},
                                        {"z", {w.z, {}}, rows_of(w.z, d)},
                                        {"beta", {w.beta, {}}, rows_of(w.beta, d)},
                                        {"alpha", {w.alpha, {}}, rows_of(w.alpha, d)}};
  return build_norm_stack(s, w.norm_gain, parts, "dn_in", "Win", "win", opts, out);
}

Status build_ffn_block(const LayerShapes& s, const FfnBlockWeights& w, const BlockOptions& opts,
                       BlockProgram* out) {
  ANE_RETURN_IF_ERROR(check_opts(s, opts));
  const std::int64_t d = s.d_model, qd = s.mix_dim(), ff = s.d_ff, S = opts.seq_len;
  ANE_RETURN_IF_ERROR(check_linear(w.o, d, qd, "o"));
  ANE_RETURN_IF_ERROR(check_span(w.norm_gain, d, "norm_gain"));
  ANE_RETURN_IF_ERROR(check_linear(w.gate, ff, d, "gate"));
  ANE_RETURN_IF_ERROR(check_linear(w.up, ff, d, "up"));
  ANE_RETURN_IF_ERROR(check_linear(w.down, d, ff, "down"));
  *out = BlockProgram{};
  out->source.name = opts.name.empty() ? block_name("ffn", 0, S) : opts.name;
  out->kind = "ffn";
  BlockEmitter e(out->source.name, opts);
  MilFunctionBuilder& f = e.fn();
  MilVar x = f.input("x", act(qd + d, S));
  e.conv_consts();
  // One packed input (§4.5): slice the attention output and the residual back out.
  MilVar ba = f.const_int32_vec("ba", {0, 0, 0, 0});
  MilVar sa =
      f.const_int32_vec("sa", {1, static_cast<std::int32_t>(qd), 1, static_cast<std::int32_t>(S)});
  MilVar br = f.const_int32_vec("br", {0, static_cast<std::int32_t>(qd), 0, 0});
  MilVar sr =
      f.const_int32_vec("sr", {1, static_cast<std::int32_t>(d), 1, static_cast<std::int32_t>(S)});
  auto weight_of = [&](const LinearWeights& lw, std::int64_t rows, std::int64_t cols,
                       std::span<const float> gain, const std::string& var, const std::string& file,
                       MilVar* bias) {
    std::vector<float> wf, bf;
    const bool has_bias = stack_linear(lw, rows, cols, gain, &wf, &bf);
    MilVar W = e.weight(var, file, wf, rows, cols);
    if (has_bias) *bias = e.vec("B" + var.substr(1), "b" + file.substr(1), bf);
    return std::make_pair(W, has_bias);
  };
  MilVar bo, bg, bu, bd;
  const std::vector<float> gain = scaled_gain(w.norm_gain, d);
  auto [Wo, has_bo] = weight_of(w.o, d, qd, {}, "Wo", "wo", &bo);
  auto [Wg, has_bg] = weight_of(w.gate, ff, d, gain, "Wg", "wg", &bg);
  auto [Wu, has_bu] = weight_of(w.up, ff, d, gain, "Wu", "wu", &bu);
  auto [Wd, has_bd] = weight_of(w.down, d, ff, {}, "Wd", "wd", &bd);
  MilVar a = f.slice_by_size("a", "slice_attn", x, ba, sa);
  MilVar r = f.slice_by_size("r", "slice_resid", x, br, sr);
  MilVar o = linear(e, "o", Wo, has_bo ? &bo : nullptr, a);
  MilVar h = f.binary("add", "h", "resid_attn", r, o);
  MilVar hn = e.rms_norm(h, d, s.rms_eps, "");
  MilVar g = linear(e, "g", Wg, has_bg ? &bg : nullptr, hn);
  MilVar u = linear(e, "u", Wu, has_bu ? &bu : nullptr, hn);
  MilVar sg = f.unary("sigmoid", "sg", "silu_sig", g);  // SiLU = g * sigmoid(g), as MX and AI
  MilVar si = f.binary("mul", "si", "silu", g, sg);
  MilVar m = f.binary("mul", "m", "swiglu", si, u);
  MilVar dn = linear(e, "dn", Wd, has_bd ? &bd : nullptr, m);
  MilVar y = opts.update_only ? f.binary("add", "y", "update", o, dn)
                              : f.binary("add", "y", "resid_ffn", h, dn);
  f.output(y);
  ANE_RETURN_IF_ERROR(e.finish(out));
  out->inputs = {IoDesc{"x", act(qd + d, S), {{"attn", 0, qd}, {"residual", qd, d}}}};
  out->outputs = {IoDesc{"y", act(d, S), {{opts.update_only ? "update" : "residual", 0, d}}}};
  return {};
}

std::vector<LmHeadChunk> plan_lm_head_chunks(std::int64_t vocab, std::int64_t max_rows) {
  std::vector<LmHeadChunk> chunks;
  if (vocab <= 0 || max_rows <= 0) return chunks;
  for (std::int64_t b = 0; b < vocab; b += max_rows)
    chunks.push_back({b, std::min(max_rows, vocab - b)});
  return chunks;
}

Status build_lm_head_chunk(const LayerShapes& s, std::span<const float> head_weight,
                           std::int64_t vocab, const LmHeadChunk& chunk,
                           std::span<const float> final_norm_gain, const BlockOptions& opts,
                           BlockProgram* out) {
  ANE_RETURN_IF_ERROR(check_opts(s, opts));
  const std::int64_t d = s.d_model, S = opts.seq_len;
  ANE_RETURN_IF_ERROR(check_span(head_weight, vocab * d, "head_weight"));
  if (chunk.row_begin < 0 || chunk.rows <= 0 || chunk.row_begin + chunk.rows > vocab)
    return invalid_argument("LM head chunk rows out of range");
  if (!final_norm_gain.empty())
    ANE_RETURN_IF_ERROR(check_span(final_norm_gain, d, "final_norm_gain"));
  *out = BlockProgram{};
  out->source.name = opts.name.empty() ? block_name("lm_head", 0, S) : opts.name;
  out->kind = "lm_head";
  BlockEmitter e(out->source.name, opts);
  MilFunctionBuilder& f = e.fn();
  MilVar x = f.input("x", act(d, S));
  e.conv_consts();
  const auto rows = head_weight.subspan(static_cast<std::size_t>(chunk.row_begin * d),
                                        static_cast<std::size_t>(chunk.rows * d));
  const std::vector<float> gain = scaled_gain(final_norm_gain, d);  // empty stays empty
  MilVar W = e.weight("Wh", "wh", fold_gain(rows, chunk.rows, d, gain), chunk.rows, d);
  MilVar in = final_norm_gain.empty() ? x : e.rms_norm(x, d, s.rms_eps, "");
  MilVar y = linear(e, "y", W, nullptr, in);
  f.output(y);
  ANE_RETURN_IF_ERROR(e.finish(out));
  out->inputs = {IoDesc{"x", act(d, S), {{final_norm_gain.empty() ? "normed" : "residual", 0, d}}}};
  out->outputs = {IoDesc{"y",
                         y.type,
                         {{"logits[" + std::to_string(chunk.row_begin) + ":" +
                               std::to_string(chunk.row_begin + chunk.rows) + "]",
                           0, chunk.rows}}}};
  return {};
}

Status build_final_norm(const LayerShapes& s, std::span<const float> gain, const BlockOptions& opts,
                        BlockProgram* out) {
  ANE_RETURN_IF_ERROR(check_opts(s, opts));
  const std::int64_t d = s.d_model, S = opts.seq_len;
  ANE_RETURN_IF_ERROR(check_span(gain, d, "gain"));
  *out = BlockProgram{};
  out->source.name = opts.name.empty() ? block_name("final_norm", 0, S) : opts.name;
  out->kind = "final_norm";
  BlockEmitter e(out->source.name, opts);
  MilFunctionBuilder& f = e.fn();
  MilVar x = f.input("x", act(d, S));
  MilVar g = e.vec("g", "norm_gain", scaled_gain(gain, d));
  MilVar xn = e.rms_norm(x, d, s.rms_eps, "");
  MilVar y = f.binary("mul", "y", "rms_gain", xn, g);
  f.output(y);
  ANE_RETURN_IF_ERROR(e.finish(out));
  out->inputs = {IoDesc{"x", act(d, S), {{"residual", 0, d}}}};
  out->outputs = {IoDesc{"y", act(d, S), {{"normed", 0, d}}}};
  return {};
}

ProgramPlan plan_programs(const ModelShapes& m, const ProgramPlanOptions& o) {
  ProgramPlan p;
  const int buckets = static_cast<int>(o.seq_buckets.size());
  p.layer_programs = static_cast<int>(m.n_layers) * p.programs_per_layer * buckets;
  if (o.lm_head_on_ane) {
    p.lm_head_programs = static_cast<int>(plan_lm_head_chunks(m.vocab, o.max_lm_head_rows).size());
    p.final_norm_programs = o.fuse_final_norm ? 0 : 1;
  }
  p.total_programs = p.layer_programs + p.lm_head_programs + p.final_norm_programs;
  p.decode_dispatches_per_token = static_cast<int>(m.n_layers) * p.programs_per_layer +
                                  p.lm_head_programs + p.final_norm_programs;
  return p;
}

}  // namespace anelm::ane
