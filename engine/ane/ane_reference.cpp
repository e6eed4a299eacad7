// fp32 references of the ANE programs (ane_reference.h): plain loops, double accumulators.
#include "engine/ane/ane_reference.h"

#include <cmath>

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
  const std::int64_t d = c.d_model, qd = c.q_dim(), kvd = c.kv_dim(), out = qd + 2 * kvd;
  const Vec xn = rms_norm(x, n, d, w.attn_norm, c.rms_eps);
  Vec y(static_cast<std::size_t>(n * out));
  linear(w.wq, w.bq, qd, d, xn.data(), n, y.data(), out, 0);
  linear(w.wk, w.bk, kvd, d, xn.data(), n, y.data(), out, qd);
  linear(w.wv, w.bv, kvd, d, xn.data(), n, y.data(), out, qd + kvd);
  return y;
}

std::vector<float> ffn(const ModelConfig& c, const ane_programs::LayerF32& w, const float* att,
                       const float* x, int n, bool update_only) {
  const std::int64_t d = c.d_model, qd = c.q_dim(), f = c.d_ff;
  Vec o(static_cast<std::size_t>(n * d)), h(o.size());
  linear(w.wo, {}, d, qd, att, n, o.data(), d);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = o[i] + x[i];
  const Vec hn = rms_norm(h.data(), n, d, w.ffn_norm, c.rms_eps);
  Vec g(static_cast<std::size_t>(n * f)), u(g.size());
  linear(w.wg, {}, f, d, hn.data(), n, g.data(), f);
  linear(w.wu, {}, f, d, hn.data(), n, u.data(), f);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double gv = g[i];
    g[i] = static_cast<float>(gv / (1.0 + std::exp(-gv)) * u[i]);
  }
  Vec y(static_cast<std::size_t>(n * d));
  linear(w.wd, {}, d, f, g.data(), n, y.data(), d);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += update_only ? o[i] : h[i];
  return y;
}

std::vector<float> lm_head(const ModelConfig& c, const std::vector<float>& head_rows,
                           std::int64_t rows, const std::vector<float>& out_norm, const float* x,
                           int n) {
  const std::int64_t d = c.d_model;
  const Vec xn = rms_norm(x, n, d, out_norm, c.rms_eps);
  Vec y(static_cast<std::size_t>(n * rows));
  linear(head_rows, {}, rows, d, xn.data(), n, y.data(), rows);
  return y;
}

}  // namespace anelm::engine::ane_reference
