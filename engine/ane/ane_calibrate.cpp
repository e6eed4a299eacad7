// RMSNorm prescale calibration for the ANE programs (see ane_calibrate.h): one 8-token CPU forward.
#include "engine/ane/ane_calibrate.h"

#include <algorithm>
#include <cmath>

#include "engine/activations.h"
#include "engine/cpu_executor.h"
#include "engine/kv_cache.h"
#include "engine/layer_executor.h"

namespace anelm::engine {

namespace {

constexpr int kCalibTokens = 8;
// Inputs up to 4x the calibration's still fit. The calibration sequence starts with BOS, the
// position where massive activations (~1e3 in one channel) live, so the largest values are seen;
// a 16x margin would push p 4x lower for those models and the ordinary tokens' squares (p * rms
// ~1/64) into fp16 subnormals, 2% error with FTZ (table in ane_bridge/README.md).
constexpr double kHeadroom = 4.0;
constexpr double kFp16Max = 65504.0;
constexpr double kMinPrescale = 1.0 / 4096;
// p > 1 lifts small residual streams (embeddings ~0.01) out of the subnormal range of x^2.
constexpr double kMaxPrescale = 1024.0;

// max|x| and max per-token rms over n rows of d.
struct Magnitude {
  double amax = 0, rms = 0;
  void add(const float* x, int n, int d) {
    for (int t = 0; t < n; ++t) {
      double ss = 0;
      for (int i = 0; i < d; ++i) {
        const double v = x[static_cast<long>(t) * d + i];
        amax = std::max(amax, std::fabs(v));
        ss += v * v;
      }
      rms = std::max(rms, std::sqrt(ss / d));
    }
  }
};

double prescale_for(const Magnitude& m, int d) {
  double p = 1.0;
  auto fits = [&](double q) {
    const double a = m.amax * q * kHeadroom, r = m.rms * q * kHeadroom;
    return std::isfinite(a) && a <= 256.0 && d * r * r <= kFp16Max;
  };
  while (p < kMaxPrescale && fits(2 * p)) p *= 2;
  while (p > kMinPrescale && !fits(p)) p /= 2;
  return p;
}

}  // namespace

std::vector<int> ane_calibration_ids(const ModelConfig& cfg) {
  std::vector<int> ids(static_cast<size_t>(kCalibTokens));
  ids[0] =
      cfg.bos_id >= 0 && cfg.bos_id < cfg.vocab_size ? cfg.bos_id : std::min(1, cfg.vocab_size - 1);
  for (int t = 1; t < kCalibTokens; ++t)
    ids[static_cast<size_t>(t)] =
        static_cast<int>((static_cast<long>(t) * 7919 + 13) % cfg.vocab_size);
  return ids;
}

AnePrescales fixed_ane_prescales(const ModelConfig& cfg, double p) {
  AnePrescales s;
  s.attn.assign(static_cast<size_t>(cfg.n_layers), p);
  s.ffn.assign(static_cast<size_t>(cfg.n_layers), p);
  s.head = p;
  if (cfg.post_norms) {
    s.post_attn.assign(static_cast<size_t>(cfg.n_layers), p);
    s.post_ffn.assign(static_cast<size_t>(cfg.n_layers), p);
  }
  return s;
}

AnePrescales calibrate_ane_prescales(const ModelConfig& cfg, const ModelWeights& w,
                                     ThreadPool& pool, const kernels::KernelTable& k) {
  const int d = cfg.d_model, n = kCalibTokens;
  KvCache kv(cfg, n, DType::kF32);
  Activations acts(cfg, n, n, pool.size());
  CpuExecutor cpu(cfg, w, pool, k);
  const std::vector<int> ids = ane_calibration_ids(cfg);
  for (int t = 0; t < n; ++t) {
    k.dequantize_row(w.tok_embd.data, w.tok_embd.dtype, ids[static_cast<size_t>(t)], d,
                     acts.x.data() + static_cast<long>(t) * d);
  }
  // GPT-2's learned positions join the embeddings before the first layer, as in Transformer::step.
  if (cfg.learned_positions && w.pos_embd.rows() >= n) {
    std::vector<float> pe(static_cast<size_t>(d));
    for (int t = 0; t < n; ++t) {
      k.dequantize_row(w.pos_embd.data, w.pos_embd.dtype, t, d, pe.data());
      k.add(acts.x.data() + static_cast<long>(t) * d, pe.data(), d, acts.x.data() + static_cast<long>(t) * d);
    }
  }
  AnePrescales s;
  const SeqRows seq{0, n, 0, &kv};
  for (int l = 0; l < cfg.n_layers; ++l) {
    Magnitude in, out;
    in.add(acts.x.data(), n, d);
    if (l == 0 && cfg.embedding_scale != 1.0f) {  // the executor scales layer 0's input (Gemma 3)
      in.amax *= cfg.embedding_scale;
      in.rms *= cfg.embedding_scale;
    }
    cpu.run_layer(LayerBatch{l, n, acts.x.data(), &acts, {&seq, 1}, false, {}});
    out.add(acts.x.data(), n, d);
    Magnitude both{std::max(in.amax, out.amax), std::max(in.rms, out.rms)};
    s.attn.push_back(prescale_for(in, d));
    s.ffn.push_back(prescale_for(both, d));
    if (cfg.post_norms) {  // Gemma 3: the post-norms' inputs, Wo att and Wd (gelu(g) * u)
      const LayerWeights& L = w.layers[static_cast<size_t>(l)];
      Magnitude o, f;
      const LinearOut wo[] = {{&L.wo, acts.xb.data()}};
      parallel_linear(pool, k, acts.att.data(), n, cfg.q_dim(), wo, acts.xq.data(), acts.xk.data());
      o.add(acts.xb.data(), n, d);
      const LinearOut wd[] = {{&L.w_down, acts.xb.data()}};
      parallel_linear(pool, k, acts.gate.data(), n, cfg.d_ff, wd, acts.xq.data(), acts.xk.data());
      f.add(acts.xb.data(), n, d);
      s.post_attn.push_back(prescale_for(o, d));
      s.post_ffn.push_back(prescale_for(f, d));
    }
  }
  Magnitude fin;
  fin.add(acts.x.data(), n, d);
  s.head = prescale_for(fin, d);
  return s;
}

}  // namespace anelm::engine
