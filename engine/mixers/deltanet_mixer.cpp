// Gated DeltaNet mixer over a continuous batch: the linears see every row at once; the conv and the
// recurrence run per sequence, in token order, from the state the sequence's KvCache holds.
#include "engine/mixers/deltanet_mixer.h"

#include <algorithm>
#include <cmath>

#include "engine/activations.h"
#include "engine/cpu_executor.h"
#include "engine/kv_cache.h"

namespace anelm::engine {

namespace {

// softplus as ggml computes it: x itself above 20, where log1p(exp(x)) == x in float.
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// Channels a thread convolves at once: whole cache lines of every row it touches.
constexpr int64_t kConvGrain = 64;

}  // namespace

DeltaNetMixer::DeltaNetMixer(const CpuContext& c)
    : c_(c),
      key_scale_(static_cast<size_t>(std::max(c.cfg.deltanet.d_k, 1)), 1.0f / std::sqrt(static_cast<float>(std::max(c.cfg.deltanet.d_k, 1)))),
      query_scale_(static_cast<size_t>(std::max(c.cfg.deltanet.d_k, 1)), 1.0f / static_cast<float>(std::max(c.cfg.deltanet.d_k, 1))) {}

void DeltaNetMixer::mix(const LayerBatch& b) {
  const ModelConfig& cfg = c_.cfg;
  const DeltaNetDims& dn = cfg.deltanet;
  const DeltaNetWeights& W = c_.w.layers[static_cast<size_t>(b.layer)].deltanet;
  const kernels::KernelTable& k = c_.k;
  Activations& a = *b.acts;
  const int n = b.n, d = cfg.d_model, nv = dn.n_v_heads, nk = dn.n_k_heads, dk = dn.d_k, dv = dn.d_v;
  const int conv_dim = dn.conv_dim(), key_dim = dn.key_dim(), value_dim = dn.value_dim();

  const LinearOut in[] = {{&W.qkv, a.dn_qkv.data()}, {&W.gate, a.dn_z.data()},
                          {&W.beta, a.dn_beta.data()}, {&W.alpha, a.dn_g.data()}};
  parallel_linear(c_.pool, k, a.xb.data(), n, d, in, a.xq.data(), a.xk.data(), c_.inline_macs);

  // A sequence at position 0 starts from zeros (its slot may hold an earlier sequence's state).
  for (const SeqRows& s : b.seqs) {
    if (s.pos != 0) continue;
    std::fill_n(s.kv->conv_state(b.layer), dn.conv_state_floats(), 0.0f);
    std::fill_n(s.kv->delta_state(b.layer), dn.delta_state_floats(), 0.0f);
  }

  // Causal conv + SiLU, split by channel ranges (channels are independent, the rows are not).
  const auto* conv_w = static_cast<const float*>(W.conv.data);
  auto conv = [&](int64_t c0, int64_t c1, int) {
    for (const SeqRows& s : b.seqs) {
      kernels::ConvArgs args;
      args.x = a.dn_qkv.data() + static_cast<int64_t>(s.row) * conv_dim + c0;
      args.ld_x = conv_dim;
      args.n = s.n;
      args.channels = static_cast<int>(c1 - c0);
      args.w = conv_w + c0 * dn.conv_kernel;
      args.taps = dn.conv_kernel;
      args.state = s.kv->conv_state(b.layer) + c0;
      args.ld_state = conv_dim;
      args.out = a.dn_conv.data() + static_cast<int64_t>(s.row) * conv_dim + c0;
      args.ld_out = conv_dim;
      k.conv_silu(args);
    }
  };
  if (static_cast<int64_t>(n) * conv_dim * dn.conv_kernel < c_.inline_macs) {
    conv(0, conv_dim, 0);
  } else {
    c_.pool.parallel_for(conv_dim, conv, kConvGrain);
  }

  // Per row: L2-normalise q and k per key head; beta = sigmoid(b); g = softplus(alpha + dt) * a.
  const auto* dt = static_cast<const float*>(W.dt.data);
  const auto* decay_a = static_cast<const float*>(W.a.data);
  const float eps = cfg.rms_eps / static_cast<float>(dk);
  for_tokens(c_.pool, n, [&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) {
      float* row = a.dn_conv.data() + static_cast<int64_t>(t) * conv_dim;
      for (int h = 0; h < nk; ++h) {
        k.rmsnorm(row + h * dk, query_scale_.data(), eps, dk, row + h * dk);
        k.rmsnorm(row + key_dim + h * dk, key_scale_.data(), eps, dk, row + key_dim + h * dk);
      }
      float* beta = a.dn_beta.data() + static_cast<int64_t>(t) * nv;
      float* g = a.dn_g.data() + static_cast<int64_t>(t) * nv;
      for (int h = 0; h < nv; ++h) {
        beta[h] = 1.0f / (1.0f + std::exp(-beta[h]));
        g[h] = softplus(g[h] + dt[h]) * decay_a[h];
      }
    }
  });

  // The recurrence: one unit per (sequence, value head); value head h reads key head key_head(h).
  const int64_t units = static_cast<int64_t>(b.seqs.size()) * nv;
  auto recur = [&](int64_t u0, int64_t u1, int) {
    for (int64_t u = u0; u < u1; ++u) {
      const SeqRows& s = b.seqs[static_cast<size_t>(u / nv)];
      const int h = static_cast<int>(u % nv), kh = dn.key_head(h);
      const float* row = a.dn_conv.data() + static_cast<int64_t>(s.row) * conv_dim;
      kernels::DeltaRuleArgs args;
      args.state = s.kv->delta_state(b.layer) + static_cast<int64_t>(h) * dv * dk;
      args.q = row + kh * dk;
      args.k = row + key_dim + kh * dk;
      args.ld_qk = conv_dim;
      args.v = row + 2 * key_dim + h * dv;
      args.ld_v = conv_dim;
      args.g = a.dn_g.data() + static_cast<int64_t>(s.row) * nv + h;
      args.beta = a.dn_beta.data() + static_cast<int64_t>(s.row) * nv + h;
      args.ld_gb = nv;
      args.out = a.dn_out.data() + static_cast<int64_t>(s.row) * value_dim + h * dv;
      args.ld_out = value_dim;
      args.n = s.n;
      args.d_k = dk;
      args.d_v = dv;
      k.delta_rule(args);
    }
  };
  if (static_cast<int64_t>(n) * nv * dk * dv * 4 < c_.inline_macs) {
    recur(0, units, 0);
  } else {
    c_.pool.parallel_for(units, recur);
  }

  // Gated RMSNorm per value head (one weight for all heads), times SiLU(z); then the output projection.
  const auto* norm = static_cast<const float*>(W.norm.data);
  for_tokens(c_.pool, n, [&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) {
      float* o = a.dn_out.data() + static_cast<int64_t>(t) * value_dim;
      const float* z = a.dn_z.data() + static_cast<int64_t>(t) * value_dim;
      for (int h = 0; h < nv; ++h) k.rmsnorm(o + h * dv, norm, cfg.rms_eps, dv, o + h * dv);
      k.silu_mul(z, o, value_dim, o);
    }
  });
  const LinearOut out[] = {{&W.out, a.proj.data()}};
  parallel_linear(c_.pool, k, a.dn_out.data(), n, value_dim, out, a.xq.data(), a.xk.data(), c_.inline_macs);
}

}  // namespace anelm::engine
