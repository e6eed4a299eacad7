// Fused decoder-layer and LM-head MIL programs (ane-programming-model.md §2.8, §2.9, §6.3, §6.9).
#include "ane_bridge/mil_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ane_bridge/block_emitter.h"
#include "ane_bridge/fp16.h"
#include "ane_bridge/mil_writer.h"
#include "ane_bridge/weight_blob.h"

namespace anelm::ane {

using namespace detail;

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

Status detail::build_head_chunk(const LayerShapes& s, std::span<const float> head_weight, std::int64_t vocab,
                        const LmHeadChunk& chunk, std::span<const float> norm_gain,
                        std::span<const float> ln_bias, bool layer_norm, const BlockOptions& opts,
                        BlockProgram* out) {
  ANE_RETURN_IF_ERROR(check_opts(s, opts));
  const std::int64_t d = s.d_model, S = opts.seq_len;
  ANE_RETURN_IF_ERROR(check_span(head_weight, vocab * d, "head_weight"));
  if (chunk.row_begin < 0 || chunk.rows <= 0 || chunk.row_begin + chunk.rows > vocab)
    return invalid_argument("LM head chunk rows out of range");
  if (layer_norm || !norm_gain.empty())
    ANE_RETURN_IF_ERROR(check_span(norm_gain, d, "final_norm_gain"));
  if (layer_norm) ANE_RETURN_IF_ERROR(check_span(ln_bias, d, "final_norm_bias"));
  *out = BlockProgram{};
  out->source.name = opts.name.empty() ? block_name("lm_head", 0, S) : opts.name;
  out->kind = "lm_head";
  BlockEmitter e(out->source.name, opts);
  MilFunctionBuilder& f = e.fn();
  MilVar x = f.input("x", act(d, S));
  e.conv_consts();
  const auto rows = head_weight.subspan(static_cast<std::size_t>(chunk.row_begin * d),
                                        static_cast<std::size_t>(chunk.rows * d));
  const std::vector<float> gain = scaled_gain(norm_gain, d);  // empty stays empty
  MilVar W = e.weight("Wh", "wh", fold_gain(rows, chunk.rows, d, gain), chunk.rows, d);
  MilVar y;
  if (layer_norm) {  // the LayerNorm's bias folded into the head's bias
    MilVar B = e.vec("Bh", "bh", fold_norm_bias(rows, {}, chunk.rows, d, ln_bias));
    y = linear(e, "y", W, &B, e.layer_norm(x, d, s.rms_eps, ""));
  } else {
    y = linear(e, "y", W, nullptr, norm_gain.empty() ? x : e.rms_norm(x, d, s.rms_eps, ""));
  }
  f.output(y);
  ANE_RETURN_IF_ERROR(e.finish(out));
  const bool normed_input = !layer_norm && norm_gain.empty();
  out->inputs = {IoDesc{"x", act(d, S), {{normed_input ? "normed" : "residual", 0, d}}}};
  out->outputs = {IoDesc{"y",
                         y.type,
                         {{"logits[" + std::to_string(chunk.row_begin) + ":" +
                               std::to_string(chunk.row_begin + chunk.rows) + "]",
                           0, chunk.rows}}}};
  return {};
}

Status build_lm_head_chunk(const LayerShapes& s, std::span<const float> head_weight,
                           std::int64_t vocab, const LmHeadChunk& chunk,
                           std::span<const float> final_norm_gain, const BlockOptions& opts,
                           BlockProgram* out) {
  return build_head_chunk(s, head_weight, vocab, chunk, final_norm_gain, {}, false, opts, out);
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
