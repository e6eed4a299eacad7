// GPT-2 and Gemma 3 layer programs (mil_blocks_families.h) over the shared emitter.
#include "ane_bridge/mil_blocks_families.h"

#include "ane_bridge/block_emitter.h"

namespace anelm::ane {

using namespace detail;

namespace {

// The packed (mixer output, residual) input of every program B, sliced back apart (§4.5).
struct PackedInput {
  MilVar a, r;
};
PackedInput slice_packed(MilFunctionBuilder& f, const MilVar& x, std::int64_t qd, std::int64_t d,
                         std::int64_t S) {
  MilVar ba = f.const_int32_vec("ba", {0, 0, 0, 0});
  MilVar sa =
      f.const_int32_vec("sa", {1, static_cast<std::int32_t>(qd), 1, static_cast<std::int32_t>(S)});
  MilVar br = f.const_int32_vec("br", {0, static_cast<std::int32_t>(qd), 0, 0});
  MilVar sr =
      f.const_int32_vec("sr", {1, static_cast<std::int32_t>(d), 1, static_cast<std::int32_t>(S)});
  return {f.slice_by_size("a", "slice_attn", x, ba, sa),
          f.slice_by_size("r", "slice_resid", x, br, sr)};
}

void set_b_io(BlockProgram* out, std::int64_t qd, std::int64_t d, std::int64_t S, bool update) {
  out->inputs = {IoDesc{"x", act(qd + d, S), {{"attn", 0, qd}, {"residual", qd, d}}}};
  out->outputs = {IoDesc{"y", act(d, S), {{update ? "update" : "residual", 0, d}}}};
}

}  // namespace

Status build_ln_attn_input_block(const LayerShapes& s, const AttnInputWeights& w,
                                 std::span<const float> norm_bias, const BlockOptions& opts,
                                 BlockProgram* out) {
  ANE_RETURN_IF_ERROR(check_opts(s, opts));
  const std::int64_t d = s.d_model, S = opts.seq_len, qd = s.q_dim(), kvd = s.kv_dim();
  ANE_RETURN_IF_ERROR(check_span(w.norm_gain, d, "norm_gain"));
  ANE_RETURN_IF_ERROR(check_span(norm_bias, d, "norm_bias"));
  const LinearWeights* parts[3] = {&w.q, &w.k, &w.v};
  const std::int64_t rows_of[3] = {qd, kvd, kvd};
  const char* names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i)
    ANE_RETURN_IF_ERROR(check_linear(*parts[i], rows_of[i], d, names[i]));
  *out = BlockProgram{};
  out->source.name = opts.name.empty() ? block_name("attn_in", 0, S) : opts.name;
  out->kind = "attn_in";
  BlockEmitter e(out->source.name, opts);
  MilFunctionBuilder& f = e.fn();
  MilVar x = f.input("x", act(d, S));
  const std::vector<float> gain = scaled_gain(w.norm_gain, d);
  std::vector<float> ws, bs;
  for (int i = 0; i < 3; ++i) {
    const std::vector<float> folded = fold_gain(parts[i]->weight, rows_of[i], d, gain);
    ws.insert(ws.end(), folded.begin(), folded.end());
    const std::vector<float> b =
        fold_norm_bias(parts[i]->weight, parts[i]->bias, rows_of[i], d, norm_bias);
    bs.insert(bs.end(), b.begin(), b.end());
  }
  e.conv_consts();
  MilVar W = e.weight("Wqkv", "wqkv", ws, qd + 2 * kvd, d);
  MilVar B = e.vec("Bqkv", "bqkv", bs);
  MilVar xn = e.layer_norm(x, d, s.rms_eps, "");
  MilVar y = linear(e, "y", W, &B, xn);
  f.output(y);
  ANE_RETURN_IF_ERROR(e.finish(out));
  out->inputs = {IoDesc{"x", act(d, S), {{"x", 0, d}}}};
  out->outputs = {IoDesc{"y", y.type, {{"q", 0, qd}, {"k", qd, kvd}, {"v", qd + kvd, kvd}}}};
  return {};
}

Status build_ln_ffn_block(const LayerShapes& s, const LnFfnBlockWeights& w,
                          const BlockOptions& opts, BlockProgram* out) {
  ANE_RETURN_IF_ERROR(check_opts(s, opts));
  const std::int64_t d = s.d_model, qd = s.mix_dim(), ff = s.d_ff, S = opts.seq_len;
  ANE_RETURN_IF_ERROR(check_linear(w.o, d, qd, "o"));
  ANE_RETURN_IF_ERROR(check_span(w.norm_gain, d, "norm_gain"));
  ANE_RETURN_IF_ERROR(check_span(w.norm_bias, d, "norm_bias"));
  ANE_RETURN_IF_ERROR(check_linear(w.up, ff, d, "up"));
  ANE_RETURN_IF_ERROR(check_linear(w.down, d, ff, "down"));
  *out = BlockProgram{};
  out->source.name = opts.name.empty() ? block_name("ffn", 0, S) : opts.name;
  out->kind = "ffn";
  BlockEmitter e(out->source.name, opts);
  MilFunctionBuilder& f = e.fn();
  MilVar x = f.input("x", act(qd + d, S));
  e.conv_consts();
  const PackedInput in = slice_packed(f, x, qd, d, S);
  const std::vector<float> gain = scaled_gain(w.norm_gain, d);
  auto bias_or_zero = [](std::span<const float> b, std::int64_t n) {
    return b.empty() ? std::vector<float>(static_cast<std::size_t>(n), 0.0f)
                     : std::vector<float>(b.begin(), b.end());
  };
  MilVar Wo = e.weight("Wo", "wo", fold_gain(w.o.weight, d, qd, {}), d, qd);
  MilVar Bo = e.vec("Bo", "bo", bias_or_zero(w.o.bias, d));
  MilVar Wu = e.weight("Wu", "wu", fold_gain(w.up.weight, ff, d, gain), ff, d);
  MilVar Bu = e.vec("Bu", "bu", fold_norm_bias(w.up.weight, w.up.bias, ff, d, w.norm_bias));
  MilVar Wd = e.weight("Wd", "wd", fold_gain(w.down.weight, d, ff, {}), d, ff);
  MilVar Bd = e.vec("Bd", "bd", bias_or_zero(w.down.bias, d));
  MilVar o = linear(e, "o", Wo, &Bo, in.a);
  MilVar h = f.binary("add", "h", "resid_attn", in.r, o);
  MilVar hn = e.layer_norm(h, d, s.rms_eps, "");
  MilVar u = linear(e, "u", Wu, &Bu, hn);
  MilVar g = e.gelu_tanh(u, "");
  MilVar dn = linear(e, "dn", Wd, &Bd, g);
  MilVar y = opts.update_only ? f.binary("add", "y", "update", o, dn)
                              : f.binary("add", "y", "resid_ffn", h, dn);
  f.output(y);
  ANE_RETURN_IF_ERROR(e.finish(out));
  set_b_io(out, qd, d, S, opts.update_only);
  return {};
}

Status build_ln_lm_head_chunk(const LayerShapes& s, std::span<const float> head_weight,
                              std::int64_t vocab, const LmHeadChunk& chunk,
                              std::span<const float> norm_gain, std::span<const float> norm_bias,
                              const BlockOptions& opts, BlockProgram* out) {
  return build_head_chunk(s, head_weight, vocab, chunk, norm_gain, norm_bias, true, opts, out);
}

Status build_post_norm_ffn_block(const LayerShapes& s, const PostNormFfnBlockWeights& w,
                                 const PostNormPrescales& ps, const BlockOptions& opts,
                                 BlockProgram* out) {
  ANE_RETURN_IF_ERROR(check_opts(s, opts));
  const std::int64_t d = s.d_model, qd = s.mix_dim(), ff = s.d_ff, S = opts.seq_len;
  ANE_RETURN_IF_ERROR(check_linear(w.o, d, qd, "o"));
  ANE_RETURN_IF_ERROR(check_span(w.post_attn_gain, d, "post_attn_gain"));
  ANE_RETURN_IF_ERROR(check_span(w.norm_gain, d, "norm_gain"));
  ANE_RETURN_IF_ERROR(check_linear(w.gate, ff, d, "gate"));
  ANE_RETURN_IF_ERROR(check_linear(w.up, ff, d, "up"));
  ANE_RETURN_IF_ERROR(check_linear(w.down, d, ff, "down"));
  ANE_RETURN_IF_ERROR(check_span(w.post_ffn_gain, d, "post_ffn_gain"));
  for (double p : {ps.post_attn, ps.post_ffn}) {
    const double l2 = std::log2(p);
    if (p <= 0 || l2 != std::floor(l2)) return invalid_argument("post-norm prescales must be powers of two");
  }
  *out = BlockProgram{};
  out->source.name = opts.name.empty() ? block_name("ffn", 0, S) : opts.name;
  out->kind = "ffn";
  BlockEmitter e(out->source.name, opts);
  MilFunctionBuilder& f = e.fn();
  MilVar x = f.input("x", act(qd + d, S));
  e.conv_consts();
  const PackedInput in = slice_packed(f, x, qd, d, S);
  const std::vector<float> gain = scaled_gain(w.norm_gain, d);
  MilVar Wo = e.weight("Wo", "wo", fold_gain(w.o.weight, d, qd, {}), d, qd);
  MilVar Wg = e.weight("Wg", "wg", fold_gain(w.gate.weight, ff, d, gain), ff, d);
  MilVar Wu = e.weight("Wu", "wu", fold_gain(w.up.weight, ff, d, gain), ff, d);
  MilVar Wd = e.weight("Wd", "wd", fold_gain(w.down.weight, d, ff, {}), d, ff);
  // The post-norms' gains feed the residual, not a projection: an explicit multiply (times
  // sqrt(D), which rms_norm leaves out).
  MilVar Ga = e.vec("Gpa", "gpa", scaled_gain(w.post_attn_gain, d));
  MilVar Gf = e.vec("Gpf", "gpf", scaled_gain(w.post_ffn_gain, d));
  MilVar o = linear(e, "o", Wo, nullptr, in.a);
  MilVar on = e.rms_norm_at(o, d, s.rms_eps, ps.post_attn, "pa_");
  MilVar og = f.binary("mul", "og", "post_attn_gain", on, Ga);
  MilVar h = f.binary("add", "h", "resid_attn", in.r, og);
  MilVar hn = e.rms_norm(h, d, s.rms_eps, "");
  MilVar g = linear(e, "g", Wg, nullptr, hn);
  MilVar u = linear(e, "u", Wu, nullptr, hn);
  MilVar ge = e.gelu_tanh(g, "");
  MilVar m = f.binary("mul", "m", "geglu", ge, u);
  MilVar dn = linear(e, "dn", Wd, nullptr, m);
  MilVar fnn = e.rms_norm_at(dn, d, s.rms_eps, ps.post_ffn, "pf_");
  MilVar fg = f.binary("mul", "fg", "post_ffn_gain", fnn, Gf);
  MilVar y = opts.update_only ? f.binary("add", "y", "update", og, fg)
                              : f.binary("add", "y", "resid_ffn", h, fg);
  f.output(y);
  ANE_RETURN_IF_ERROR(e.finish(out));
  set_b_io(out, qd, d, S, opts.update_only);
  return {};
}

}  // namespace anelm::ane
