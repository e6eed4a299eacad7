// Gated DeltaNet between the projections (deltanet_core.h): per-sequence state, the conv and the
// recurrence per sequence in token order; everything else over all rows of the batch.
#include "engine/mixers/deltanet_core.h"

#include <algorithm>
#include <cmath>

#include "engine/activations.h"
#include "engine/kv_cache.h"
#include "engine/mixers/cpu_mixer.h"

namespace anelm::engine {

namespace {

// softplus as ggml computes it: x itself above 20, where log1p(exp(x)) == x in float.
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// Channels a thread convolves at once: whole cache lines of every row it touches.
constexpr std::int64_t kConvGrain = 64;

}  // namespace

DeltaNetCore::DeltaNetCore(const ModelConfig& cfg, const kernels::KernelTable& k, ThreadPool& pool,
                           int64_t inline_macs)
    : cfg_(cfg), k_(k), pool_(pool), inline_macs_(inline_macs) {
  const int dk = std::max(cfg.deltanet.d_k, 1);
  key_scale_.assign(static_cast<std::size_t>(dk), 1.0f / std::sqrt(static_cast<float>(dk)));
  query_scale_.assign(static_cast<std::size_t>(dk), 1.0f / static_cast<float>(dk));
}

void DeltaNetCore::run(const DeltaNetWeights& W, const LayerBatch& b) const {
  const DeltaNetDims& dn = cfg_.deltanet;
  Activations& a = *b.acts;
  const int n = b.n, nv = dn.n_v_heads, nk = dn.n_k_heads, dk = dn.d_k, dv = dn.d_v;
  const int conv_dim = dn.conv_dim(), key_dim = dn.key_dim(), value_dim = dn.value_dim();

  // A sequence at position 0 starts from zeros (its slot may hold an earlier sequence's state).
  for (const SeqRows& s : b.seqs) {
    if (s.pos != 0) continue;
    std::fill_n(s.kv->conv_state(b.layer), dn.conv_state_floats(), 0.0f);
    std::fill_n(s.kv->delta_state(b.layer), dn.delta_state_floats(), 0.0f);
  }

  // Causal conv + SiLU per sequence, split by channel ranges (channels are independent).
  const auto* conv_w = static_cast<const float*>(W.conv.data);
  auto conv = [&](std::int64_t c0, std::int64_t c1, int) {
    for (const SeqRows& s : b.seqs) {
      kernels::ConvArgs args;
      args.x = a.dn_qkv.data() + static_cast<std::int64_t>(s.row) * conv_dim + c0;
      args.ld_x = conv_dim;
      args.n = s.n;
      args.channels = static_cast<int>(c1 - c0);
      args.w = conv_w + c0 * dn.conv_kernel;
      args.taps = dn.conv_kernel;
      args.state = s.kv->conv_state(b.layer) + c0;
      args.ld_state = conv_dim;
      args.out = a.dn_conv.data() + static_cast<std::int64_t>(s.row) * conv_dim + c0;
      args.ld_out = conv_dim;
      k_.conv_silu(args);
    }
  };
  if (static_cast<std::int64_t>(n) * conv_dim * dn.conv_kernel < inline_macs_) {
    conv(0, conv_dim, 0);
  } else {
    pool_.parallel_for(conv_dim, conv, kConvGrain);
  }

  // Per row: L2-normalise q and k per key head; beta = sigmoid(b); g = softplus(alpha + dt) * a.
  const auto* dt = static_cast<const float*>(W.dt.data);
  const auto* decay_a = static_cast<const float*>(W.a.data);
  const float eps = cfg_.rms_eps / static_cast<float>(dk);
  for_tokens(pool_, n, [&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) {
      float* row = a.dn_conv.data() + static_cast<std::int64_t>(t) * conv_dim;
      for (int h = 0; h < nk; ++h) {
        k_.rmsnorm(row + h * dk, query_scale_.data(), eps, dk, row + h * dk);
        k_.rmsnorm(row + key_dim + h * dk, key_scale_.data(), eps, dk, row + key_dim + h * dk);
      }
      float* beta = a.dn_beta.data() + static_cast<std::int64_t>(t) * nv;
      float* g = a.dn_g.data() + static_cast<std::int64_t>(t) * nv;
      for (int h = 0; h < nv; ++h) {
        beta[h] = 1.0f / (1.0f + std::exp(-beta[h]));
        g[h] = softplus(g[h] + dt[h]) * decay_a[h];
      }
    }
  });

  // The recurrence: one unit per (sequence, value head); value head h reads key head key_head(h).
  const std::int64_t units = static_cast<std::int64_t>(b.seqs.size()) * nv;
  auto recur = [&](std::int64_t u0, std::int64_t u1, int) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const SeqRows& s = b.seqs[static_cast<std::size_t>(u / nv)];
      const int h = static_cast<int>(u % nv), kh = dn.key_head(h);
      const float* row = a.dn_conv.data() + static_cast<std::int64_t>(s.row) * conv_dim;
      kernels::DeltaRuleArgs args;
      args.state = s.kv->delta_state(b.layer) + static_cast<std::int64_t>(h) * dv * dk;
      args.q = row + kh * dk;
      args.k = row + key_dim + kh * dk;
      args.ld_qk = conv_dim;
      args.v = row + 2 * key_dim + h * dv;
      args.ld_v = conv_dim;
      args.g = a.dn_g.data() + static_cast<std::int64_t>(s.row) * nv + h;
      args.beta = a.dn_beta.data() + static_cast<std::int64_t>(s.row) * nv + h;
      args.ld_gb = nv;
      args.out = a.dn_out.data() + static_cast<std::int64_t>(s.row) * value_dim + h * dv;
      args.ld_out = value_dim;
      args.n = s.n;
      args.d_k = dk;
      args.d_v = dv;
      k_.delta_rule(args);
    }
  };
  if (static_cast<std::int64_t>(n) * nv * dk * dv * 4 < inline_macs_) {
    recur(0, units, 0);
  } else {
    pool_.parallel_for(units, recur);
  }

  // Gated RMSNorm per value head (one weight for all heads), times SiLU(z): program B's input.
  const auto* norm = static_cast<const float*>(W.norm.data);
  for_tokens(pool_, n, [&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) {
      float* o = a.dn_out.data() + static_cast<std::int64_t>(t) * value_dim;
      const float* z = a.dn_z.data() + static_cast<std::int64_t>(t) * value_dim;
      for (int h = 0; h < nv; ++h) k_.rmsnorm(o + h * dv, norm, cfg_.rms_eps, dv, o + h * dv);
      k_.silu_mul(z, o, value_dim, o);
    }
  });
}

}  // namespace anelm::engine
