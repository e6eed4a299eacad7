// Placement and program building shared by the ANE backend and the export (ane_programs.h).
#include "engine/ane/ane_programs.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/ane/ane_families.h"
#include "engine/error.h"
#include "engine/kernels/quantize.h"

namespace anelm::engine::ane_programs {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// `what` is a C string so the per-token paths build no message unless something failed.
void check(const ane::Status& s, const char* what, const std::string& name) {
  if (!s.ok()) throw Error(ErrorKind::kInternal, what + name + ": " + s.to_string());
}

// ======================================= placement ============================================

namespace {

std::vector<std::int64_t> checked_buckets(const std::vector<int>& in) {
  std::vector<std::int64_t> b(in.begin(), in.end());
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  for (std::int64_t s : b)
    if (s <= 0 || s % 32 != 0)
      throw Error(ErrorKind::kInvalidArgument,
                  "ANE seq bucket " + std::to_string(s) + " must be a positive multiple of 32");
  if (b.empty() || b[0] != ane::kDecodeSeqLen)
    throw Error(ErrorKind::kInvalidArgument, "ANE seq buckets must contain 32 (the decode bucket)");
  return b;
}

}  // namespace

Placement place_programs(const ModelConfig& cfg, const AneBackendOptions& o, int budget) {
  Placement p;
  p.buckets = checked_buckets(o.seq_buckets);
  if (o.max_live_programs < 0)
    throw Error(ErrorKind::kInvalidArgument,
                "max_live_programs must be >= 0 (0: no limit), got " +
                    std::to_string(o.max_live_programs));
  if (o.lm_head_on_ane) p.chunks = ane::plan_lm_head_chunks(cfg.vocab_size, o.max_lm_head_rows);
  const int n_layers = cfg.n_layers, head = static_cast<int>(p.chunks.size());
  // Every placed program stays loaded, so one count serves both limits: compiles on a cold start
  // and live programs.
  auto need = [&](int layers, std::size_t nb) { return layers * 2 * static_cast<int>(nb) + head; };
  const int live_cap = o.max_live_programs > 0 ? o.max_live_programs : budget;
  const int limit = std::min(budget, live_cap);
  // Optional (prefill) buckets only while the whole model keeps `budget_reserve` compiles spare
  // and stays within the live-program cap: decode needs only S = 32, prefill then runs in S = 32
  // chunks (more dispatches per prompt token, none more per decoded token).
  while (p.buckets.size() > 1 && (need(n_layers, p.buckets.size()) > budget - o.budget_reserve ||
                                  need(n_layers, p.buckets.size()) > live_cap))
    p.buckets.pop_back();
  p.ane_layers = n_layers;
  if (need(n_layers, 1) > limit) {
    const bool by_budget = budget <= live_cap;
    const std::string why =
        "the ANE plan for '" + cfg.name + "' needs " + std::to_string(need(n_layers, 1)) +
        (by_budget ? " compiles (" : " live programs (") + std::to_string(n_layers) +
        " layers x 2 programs + " + std::to_string(head) + " LM-head chunks) but " +
        (by_budget ? "the per-process budget is " + std::to_string(budget)
                   : "at most " + std::to_string(live_cap) +
                         " programs may be loaded at once (max_live_programs)");
    if (!o.cpu_remainder)
      throw Error(ErrorKind::kResourceExhausted,
                  why +
                      "; HINT: enable cpu_remainder, keep the LM head on the CPU, or fill the "
                      "compile cache in an earlier process (cached programs cost no compile)");
    if (head > 0 && head + 2 > limit) p.chunks.clear();
    const int h = static_cast<int>(p.chunks.size());
    p.ane_layers = std::clamp((limit - h) / 2, 0, n_layers);
    if (p.ane_layers < n_layers)
      p.cpu_note = "layers " + std::to_string(p.ane_layers) + "-" + std::to_string(n_layers - 1);
    if (p.chunks.empty()) p.cpu_note += std::string(p.cpu_note.empty() ? "" : ", ") + "lm head";
    spdlog::warn("{}; running {} on the CPU", why, p.cpu_note);
  } else if (!o.lm_head_on_ane) {
    p.cpu_note = "lm head";
  }
  p.total =
      p.ane_layers * 2 * static_cast<int>(p.buckets.size()) + static_cast<int>(p.chunks.size());
  p.live = p.total;
  p.dispatches_per_token = p.ane_layers * 2 + static_cast<int>(p.chunks.size());
  return p;
}

// ==================================== program building ========================================

// `rows` rows of a [rows][cols] weight from `row0`, any storage type, as f32.
std::vector<float> to_f32(const TensorView& t, std::int64_t row0, std::int64_t rows) {
  if (t.empty()) return {};
  const std::int64_t cols = t.cols();
  if (rows < 0) rows = t.rows() - row0;
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  const auto* src =
      static_cast<const std::uint8_t*>(t.data) + row0 * dtype_row_bytes(t.dtype, cols);
  kernels::row_to_f32(t.dtype, src, out.data(), rows * cols);
  return out;
}

LayerF32::LayerF32(const ModelConfig& cfg, int layer, const LayerWeights& L)
    : kind(cfg.mixer(layer)),
      attn_norm(to_f32(L.attn_norm)),
      ffn_norm(to_f32(L.ffn_norm)),
      wg(to_f32(L.w_gate)),
      wu(to_f32(L.w_up)),
      wd(to_f32(L.w_down)),
      attn_norm_b(to_f32(L.attn_norm_b)),
      bo(to_f32(L.bo)),
      ffn_norm_b(to_f32(L.ffn_norm_b)),
      b_up(to_f32(L.b_up)),
      b_down(to_f32(L.b_down)),
      attn_post_norm(to_f32(L.attn_post_norm)),
      ffn_post_norm(to_f32(L.ffn_post_norm)) {
  if (kind == Mixer::kDeltaNet) {
    const DeltaNetWeights& W = L.deltanet;
    dn_qkv = to_f32(W.qkv);
    dn_z = to_f32(W.gate);
    dn_beta = to_f32(W.beta);
    dn_alpha = to_f32(W.alpha);
    wo = to_f32(W.out);
    return;
  }
  wk = to_f32(L.wk);
  wv = to_f32(L.wv);
  bq = to_f32(L.bq);
  bk = to_f32(L.bk);
  bv = to_f32(L.bv);
  wo = to_f32(L.wo);
  const std::vector<float> q = to_f32(L.wq);
  if (!cfg.attn_output_gate) {
    wq = q;
    return;
  }
  // Gated attention's Q rows are [query | gate] per head: split them so program A emits the
  // queries where an ungated layer has them and the gates after v (one contiguous block each).
  const std::size_t hd = static_cast<std::size_t>(cfg.head_dim), d = static_cast<std::size_t>(cfg.d_model);
  wq.reserve(q.size() / 2);
  wq_gate.reserve(q.size() / 2);
  for (std::size_t h = 0; h < static_cast<std::size_t>(cfg.n_heads); ++h) {
    const auto head = q.begin() + static_cast<std::ptrdiff_t>(2 * h * hd * d);
    wq.insert(wq.end(), head, head + static_cast<std::ptrdiff_t>(hd * d));
    wq_gate.insert(wq_gate.end(), head + static_cast<std::ptrdiff_t>(hd * d),
                   head + static_cast<std::ptrdiff_t>(2 * hd * d));
  }
}

std::int64_t ane_in_width(const ModelConfig& c, int layer) {
  if (c.mixer(layer) == Mixer::kDeltaNet) {
    const DeltaNetDims& dn = c.deltanet;
    return static_cast<std::int64_t>(dn.conv_dim()) + dn.value_dim() + 2 * dn.n_v_heads;
  }
  return static_cast<std::int64_t>(c.q_dim()) * (c.attn_output_gate ? 2 : 1) + 2 * c.kv_dim();
}

std::int64_t ane_mixer_width(const ModelConfig& c, int layer) {
  return c.mixer(layer) == Mixer::kDeltaNet ? c.deltanet.value_dim() : c.q_dim();
}

const char* ane_layer_kind(const ModelConfig& c, int layer, bool ffn) {
  if (c.mixer(layer) == Mixer::kDeltaNet) return ffn ? "dn_ffn" : "dn_in";
  return ffn ? "ffn" : "attn_in";
}

ane::LayerShapes layer_shapes(const ModelConfig& c, int layer) {
  ane::LayerShapes s{c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.d_ff, c.rms_eps};
  if (layer >= 0) s.mixer_dim = ane_mixer_width(c, layer);
  return s;
}

ane::BlockOptions block_opts(const std::string& kind, int index, std::int64_t seq, bool int8,
                             double prescale) {
  ane::BlockOptions o;
  o.rms_prescale = prescale;
  o.seq_len = seq;
  o.format = int8 ? ane::WeightFormat::kInt8 : ane::WeightFormat::kFp16;
  o.name = ane::block_name(kind, index, seq);
  return o;
}

// Program A (ffn == false) or B of `layer` for bucket `seq`.
ane::BlockProgram build_layer_block(const ModelConfig& cfg, const LayerF32& w, int layer, bool ffn,
                                    std::int64_t seq, bool int8, const AnePrescales& ps,
                                    bool update_only) {
  if (ane_family_layers(cfg))  // GPT-2, Gemma 3 (ane_families.h)
    return build_family_layer_block(cfg, w, layer, ffn, seq, int8, ps, update_only);
  ane::BlockProgram b;
  const double p = (ffn ? ps.ffn : ps.attn)[static_cast<std::size_t>(layer)];
  const char* kind = ane_layer_kind(cfg, layer, ffn);
  ane::BlockOptions o = block_opts(kind, layer, seq, int8, p);
  o.update_only = ffn && update_only;
  const ane::LayerShapes shapes = layer_shapes(cfg, layer);
  if (ffn) {
    // The same block for both kinds: the output projection (attn_output or ssm_out) of the mixer
    // output, the residual, the FFN norm, SwiGLU and the residual.
    const ane::FfnBlockWeights fw{{w.wo, {}}, w.ffn_norm, {w.wg, {}}, {w.wu, {}}, {w.wd, {}}};
    check(ane::build_ffn_block(shapes, fw, o, &b), "building ", o.name);
  } else if (w.kind == Mixer::kDeltaNet) {
    const ane::DeltaNetInputWeights dw{w.attn_norm, w.dn_qkv, w.dn_z, w.dn_beta, w.dn_alpha};
    check(ane::build_deltanet_input_block(shapes, dw, o, &b), "building ", o.name);
  } else {
    const ane::AttnInputWeights aw{
        w.attn_norm, {w.wq, w.bq}, {w.wk, w.bk}, {w.wv, w.bv}, {w.wq_gate, {}}};
    check(ane::build_attn_input_block(shapes, aw, o, &b), "building ", o.name);
  }
  b.kind = kind;
  b.layer = layer;
  return b;
}

// LM-head chunk `index` at S = 32 with the final norm fused. Only the chunk's rows are dequantised
// (the full f32 head of a 151,936-token vocabulary would be 544 MB): the builder sees a vocabulary
// of chunk.rows, and the output segment is renamed to the real row range afterwards.
ane::BlockProgram build_head_block(const ModelConfig& cfg, const ModelWeights& w,
                                   const std::vector<float>& out_norm, const ane::LmHeadChunk& c,
                                   int index, bool int8, double prescale) {
  if (cfg.layer_norm) return build_ln_head_block(cfg, w, out_norm, c, index, int8, prescale);
  const std::vector<float> rows = to_f32(w.lm_head, c.row_begin, c.rows);
  ane::BlockProgram b;
  const ane::BlockOptions o = block_opts("lm_head", index, ane::kDecodeSeqLen, int8, prescale);
  check(ane::build_lm_head_chunk(layer_shapes(cfg), rows, c.rows, {0, c.rows}, out_norm, o, &b),
        "building ", o.name);
  b.outputs[0].segments[0].name =
      "logits[" + std::to_string(c.row_begin) + ":" + std::to_string(c.row_begin + c.rows) + "]";
  return b;
}

}  // namespace anelm::engine::ane_programs
