// GPT-2 and Gemma 3 programs from engine weights (ane_families.h).
#include "engine/ane/ane_families.h"

#include "ane_bridge/mil_blocks_families.h"

namespace anelm::engine::ane_programs {

bool ane_family_layers(const ModelConfig& cfg) { return cfg.layer_norm || cfg.post_norms; }

namespace {

double at(const std::vector<double>& v, int layer, double fallback) {
  return static_cast<std::size_t>(layer) < v.size() ? v[static_cast<std::size_t>(layer)] : fallback;
}

}  // namespace

ane::BlockProgram build_family_layer_block(const ModelConfig& cfg, const LayerF32& w, int layer,
                                           bool ffn, std::int64_t seq, bool int8,
                                           const AnePrescales& ps, bool update_only) {
  ane::BlockProgram b;
  const double p = (ffn ? ps.ffn : ps.attn)[static_cast<std::size_t>(layer)];
  const char* kind = ffn ? "ffn" : "attn_in";
  ane::BlockOptions o = block_opts(kind, layer, seq, int8, p);
  o.update_only = ffn && update_only;
  const ane::LayerShapes shapes = layer_shapes(cfg, layer);
  if (!ffn && cfg.layer_norm) {
    const ane::AttnInputWeights aw{w.attn_norm, {w.wq, w.bq}, {w.wk, w.bk}, {w.wv, w.bv}};
    check(ane::build_ln_attn_input_block(shapes, aw, w.attn_norm_b, o, &b), "building ", o.name);
  } else if (!ffn) {  // Gemma 3's A is Llama's: RMSNorm (gain 1 + w, as stored) + q | k | v
    const ane::AttnInputWeights aw{w.attn_norm, {w.wq, w.bq}, {w.wk, w.bk}, {w.wv, w.bv}};
    check(ane::build_attn_input_block(shapes, aw, o, &b), "building ", o.name);
  } else if (cfg.layer_norm) {
    const ane::LnFfnBlockWeights fw{{w.wo, w.bo}, w.ffn_norm, w.ffn_norm_b, {w.wu, w.b_up},
                                    {w.wd, w.b_down}};
    check(ane::build_ln_ffn_block(shapes, fw, o, &b), "building ", o.name);
  } else {
    const ane::PostNormFfnBlockWeights fw{{w.wo, {}},      w.attn_post_norm, w.ffn_norm,
                                          {w.wg, {}},      {w.wu, {}},       {w.wd, {}},
                                          w.ffn_post_norm};
    const ane::PostNormPrescales pp{at(ps.post_attn, layer, 1.0), at(ps.post_ffn, layer, 1.0)};
    check(ane::build_post_norm_ffn_block(shapes, fw, pp, o, &b), "building ", o.name);
  }
  b.kind = kind;
  b.layer = layer;
  return b;
}

ane::BlockProgram build_ln_head_block(const ModelConfig& cfg, const ModelWeights& w,
                                      const std::vector<float>& out_norm,
                                      const ane::LmHeadChunk& c, int index, bool int8,
                                      double prescale) {
  const std::vector<float> rows = to_f32(w.lm_head, c.row_begin, c.rows);
  const std::vector<float> bias = to_f32(w.out_norm_b);
  ane::BlockProgram b;
  const ane::BlockOptions o = block_opts("lm_head", index, ane::kDecodeSeqLen, int8, prescale);
  check(ane::build_ln_lm_head_chunk(layer_shapes(cfg), rows, c.rows, {0, c.rows}, out_norm, bias,
                                    o, &b),
        "building ", o.name);
  b.outputs[0].segments[0].name =
      "logits[" + std::to_string(c.row_begin) + ":" + std::to_string(c.row_begin + c.rows) + "]";
  return b;
}

}  // namespace anelm::engine::ane_programs
