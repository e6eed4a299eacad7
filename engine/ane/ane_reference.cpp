// fp32 references of the ANE programs (ane_reference.h): plain loops, double accumulators.
#include "engine/ane/ane_reference.h"

#include <cmath>
#include <utility>

namespace anelm::engine::ane_reference {

namespace {

using Vec = std::vector<float>;

Vec rms_norm(const float* x, int n, std::int64_t d, const Vec& gain, double eps) {
  Vec out(static_cast<std::size_t>(n * d));
  for (int t = 0; t < n; ++t) {
    const float* r = x + t * d;
    double ss = 0;
    for (std::int64_t i = 0; i < d; ++i) ss += static_cast<double>(r[i]) * r[i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
    for (std::int64_t i = 0; i < d; ++i)
      out[static_cast<std::size_t>(t * d + i)] = static_cast<float>(r[i] * inv * gain[i]);
  }
  return out;
}

// LayerNorm with gain and bias (GPT-2), two-pass mean and variance in double.
Vec layer_norm(const float* x, int n, std::int64_t d, const Vec& gain, const Vec& bias,
               double eps) {
  Vec out(static_cast<std::size_t>(n * d));
  for (int t = 0; t < n; ++t) {
    const float* r = x + t * d;
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < d; ++i) mean += r[i];
    mean /= static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) var += (r[i] - mean) * (r[i] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(d) + eps);
    for (std::int64_t i = 0; i < d; ++i)
      out[static_cast<std::size_t>(t * d + i)] =
          static_cast<float>((r[i] - mean) * inv * gain[i] + (bias.empty() ? 0.0 : bias[i]));
  }
  return out;
}

// GELU, tanh approximation (GPT-2's and Gemma 3's), in double.
double gelu_tanh(double u) {
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * u * (1.0 + std::tanh(k * (u + 0.044715 * u * u * u)));
}

// The layer's pre-norm: LayerNorm with bias (GPT-2) or RMSNorm.
Vec pre_norm(const ModelConfig& c, const float* x, int n, const Vec& gain, const Vec& bias) {
  return c.layer_norm ? layer_norm(x, n, c.d_model, gain, bias, c.rms_eps)
                      : rms_norm(x, n, c.d_model, gain, c.rms_eps);
}

// y[n][rows] (written at column `col0` of rows `ld` wide) = W[rows][cols] . x[n][cols] + bias.
void linear(const Vec& w, const Vec& bias, std::int64_t rows, std::int64_t cols, const float* x,
            int n, float* y, std::int64_t ld, std::int64_t col0 = 0) {
  for (int t = 0; t < n; ++t)
    for (std::int64_t o = 0; o < rows; ++o) {
      const float* wr = w.data() + o * cols;
      const float* xr = x + t * cols;
      double s = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < cols; ++i) s += static_cast<double>(wr[i]) * xr[i];
      y[t * ld + col0 + o] = static_cast<float>(s);
    }
}

}  // namespace

std::vector<float> attn_input(const ModelConfig& c, const ane_programs::LayerF32& w,
                              const float* x, int n) {
  const std::int64_t d = c.d_model;
  const Vec xn = pre_norm(c, x, n, w.attn_norm, w.attn_norm_b);
  // (weight, bias) per output segment, in program A's order (ane_programs::ane_in_width).
  std::vector<std::pair<const Vec*, const Vec*>> parts;
  const Vec none;
  if (w.kind == Mixer::kDeltaNet) {
    parts = {{&w.dn_qkv, &none}, {&w.dn_z, &none}, {&w.dn_beta, &none}, {&w.dn_alpha, &none}};
  } else {
    parts = {{&w.wq, &w.bq}, {&w.wk, &w.bk}, {&w.wv, &w.bv}};
    if (!w.wq_gate.empty()) parts.push_back({&w.wq_gate, &none});
  }
  std::int64_t out = 0;
  for (const auto& [wt, b] : parts) out += static_cast<std::int64_t>(wt->size()) / d;
  Vec y(static_cast<std::size_t>(n * out));
  std::int64_t col = 0;
  for (const auto& [wt, b] : parts) {
    const std::int64_t rows = static_cast<std::int64_t>(wt->size()) / d;
    linear(*wt, *b, rows, d, xn.data(), n, y.data(), out, col);
    col += rows;
  }
  return y;
}

std::vector<float> ffn(const ModelConfig& c, const ane_programs::LayerF32& w, const float* att,
                       const float* x, int n, bool update_only) {
  const std::int64_t d = c.d_model, f = c.d_ff;
  const std::int64_t qd = static_cast<std::int64_t>(w.wo.size()) / d;  // the mixer width
  Vec o(static_cast<std::size_t>(n * d)), h(o.size());
  linear(w.wo, w.bo, d, qd, att, n, o.data(), d);
  // Gemma 3: the attention output is normed before its residual add, the FFN output likewise.
  if (!w.attn_post_norm.empty()) o = rms_norm(o.data(), n, d, w.attn_post_norm, c.rms_eps);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = o[i] + x[i];
  const Vec hn = pre_norm(c, h.data(), n, w.ffn_norm, w.ffn_norm_b);
  Vec g(static_cast<std::size_t>(n * f)), u(g.size());
  if (!c.gated_ffn) {  // GPT-2: gelu(Wu hn + bu)
    linear(w.wu, w.b_up, f, d, hn.data(), n, g.data(), f);
    for (float& v : g) v = static_cast<float>(gelu_tanh(v));
  } else {
    linear(w.wg, {}, f, d, hn.data(), n, g.data(), f);
    linear(w.wu, {}, f, d, hn.data(), n, u.data(), f);
    const bool gelu = c.ffn_act == FfnAct::kGeluTanh;
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double gv = g[i];
      g[i] = static_cast<float>((gelu ? gelu_tanh(gv) : gv / (1.0 + std::exp(-gv))) * u[i]);
    }
  }
  Vec y(static_cast<std::size_t>(n * d));
  linear(w.wd, w.b_down, d, f, g.data(), n, y.data(), d);
  if (!w.ffn_post_norm.empty()) y = rms_norm(y.data(), n, d, w.ffn_post_norm, c.rms_eps);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += update_only ? o[i] : h[i];
  return y;
}

std::vector<float> lm_head(const ModelConfig& c, const std::vector<float>& head_rows,
                           std::int64_t rows, const std::vector<float>& out_norm, const float* x,
                           int n, const std::vector<float>& out_norm_b) {
  const std::int64_t d = c.d_model;
  const Vec xn = pre_norm(c, x, n, out_norm, out_norm_b);
  Vec y(static_cast<std::size_t>(n * rows));
  linear(head_rows, {}, rows, d, xn.data(), n, y.data(), rows);
  return y;
}

}  // namespace anelm::engine::ane_reference
