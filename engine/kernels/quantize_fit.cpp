// Least-squares scale search for the block quantizers (see quantize_fit.h).
#include "engine/kernels/quantize_fit.h"

namespace anelm::engine::kernels::fit {

namespace {

// Candidate inverse scales: the extreme value lands on (extreme code + t * kGridStep) for t in
// [-kGrid, kGrid], i.e. up to one code either side of the plain max-to-max scale. Clipping the
// extreme (t > 0) pays off when the rest of the block is small; shrinking (t < 0) when it rounds badly.
constexpr int kGrid = 10;
constexpr float kGridStep = 0.1f;
// Alternating refinement rounds after the grid search; the error rarely falls after two.
constexpr int kRefine = 4;
constexpr int kMaxN = 32;

// Least-squares (scale, offset) for fixed codes, and its squared error given sxx = sum x^2 (the
// residual of a least-squares fit is sxx - solution . right-hand side); false when the codes cannot
// determine a scale.
bool refit_affine(const float* x, const uint8_t* q, int n, double sx, double sxx, bool offset_nonpositive,
                  Affine& a, double& err) {
  int sq = 0, sqq = 0;  // exact in integers: the loop's one floating-point chain is sqx
  double sqx = 0;
  for (int i = 0; i < n; ++i) {
    sq += q[i];
    sqq += q[i] * q[i];
    sqx += q[i] * x[i];
  }
  const double det = static_cast<double>(n) * sqq - static_cast<double>(sq) * sq;
  if (det <= 0) return false;  // every code equal
  double scale = (n * sqx - sq * sx) / det, offset = (sqq * sx - sq * sqx) / det;
  if (offset_nonpositive && offset > 0) {  // constrained optimum lies on offset = 0
    offset = 0;
    scale = sqx / sqq;
  }
  a = {static_cast<float>(scale), static_cast<float>(offset)};
  err = sxx - scale * sqx - offset * sx;
  return true;
}

// Least-squares scale for x ~= scale * level[i]; 0 when every level is 0.
float refit_scale(const float* x, const int* level, int n) {
  int sll = 0;
  double slx = 0;
  for (int i = 0; i < n; ++i) {
    sll += level[i] * level[i];
    slx += level[i] * x[i];
  }
  return sll > 0 ? static_cast<float>(slx / sll) : 0.0f;
}

// The value of largest magnitude, with its sign.
float signed_absmax(const float* x, int n) {
  float v = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > std::fabs(v)) v = x[i];
  }
  return v;
}

// The search shared by the two one-scale fits: `level_of(u)` is the level of the code nearest to
// u = value / scale; `ends` are the extreme levels the largest magnitude may be mapped onto and
// `step` the grid spacing in level units.
template <typename LevelOf>
float search_scale(const float* x, int n, const float (&ends)[2], float step, LevelOf level_of) {
  const float v = signed_absmax(x, n);
  if (v == 0.0f || !std::isfinite(v)) return 0.0f;
  int level[kMaxN];
  auto error_of = [&](float scale) {
    const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
    double e = 0;
    for (int i = 0; i < n; ++i) {
      level[i] = level_of(x[i] * inv);
      const double d = static_cast<double>(scale) * level[i] - x[i];
      e += d * d;
    }
    return e;
  };
  // Grid candidates are ranked by the least-squares error of their own codes (sxx - slx^2 / sll),
  // which bounds the error of the nearest codes for the refitted scale; the refinement below then
  // works with nearest codes.
  float best = 0.0f;
  double best_score = 0;
  for (float end : ends) {
    for (int t = -kGrid; t <= kGrid; ++t) {
      const float inv = (end + t * step) / v;  // maps v onto level end + t * step
      int sll = 0;
      double slx = 0;
      for (int i = 0; i < n; ++i) {
        const int l = level_of(x[i] * inv);
        sll += l * l;
        slx += l * x[i];
      }
      if (sll > 0 && slx * slx / sll > best_score) best_score = slx * slx / sll, best = static_cast<float>(slx / sll);
    }
  }
  double best_err = error_of(best);  // leaves `level` at best's codes, as every accepted round
  for (int r = 0; r < kRefine; ++r) {
    const float s = refit_scale(x, level, n);
    const double e = error_of(s);
    if (!(e < best_err)) break;
    best_err = e, best = s;
  }
  return best;
}

}  // namespace

double codes_affine(const float* x, int n, Affine a, int nmax, uint8_t* q) {
  const float inv = a.scale != 0.0f ? 1.0f / a.scale : 0.0f;
  double e = 0;
  for (int i = 0; i < n; ++i) {
    q[i] = static_cast<uint8_t>(round_clamp((x[i] - a.offset) * inv, 0, nmax));
    const double d = static_cast<double>(a.scale) * q[i] + a.offset - x[i];
    e += d * d;
  }
  return e;
}

double codes_symmetric(const float* x, int n, float scale, int qmin, int qmax, int8_t* q) {
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  double e = 0;
  for (int i = 0; i < n; ++i) {
    q[i] = static_cast<int8_t>(round_clamp(x[i] * inv, qmin, qmax));
    const double d = static_cast<double>(scale) * q[i] - x[i];
    e += d * d;
  }
  return e;
}

double codes_iq4(const float* x, int n, float scale, int8_t* q) {
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  double e = 0;
  for (int i = 0; i < n; ++i) {
    // Scale 0 decodes to 0 whatever the code; pick the level nearest 0 for tidiness.
    q[i] = static_cast<int8_t>(nearest_iq4(x[i] * inv));
    const double d = static_cast<double>(scale) * kIq4nlValues[q[i]] - x[i];
    e += d * d;
  }
  return e;
}

Affine fit_affine(const float* x, int n, int nmax, bool offset_nonpositive) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  if (offset_nonpositive) lo = std::min(lo, 0.0f);
  if (!(hi > lo) || !std::isfinite(hi - lo)) return {0.0f, std::isfinite(lo) ? lo : 0.0f};  // constant
  uint8_t q[kMaxN];
  double sx = 0, sxx = 0;
  for (int i = 0; i < n; ++i) sx += x[i], sxx += static_cast<double>(x[i]) * x[i];
  // Grid candidates are ranked by the least-squares error of their own codes (see search_scale).
  Affine best{(hi - lo) / nmax, lo};
  double best_score = codes_affine(x, n, best, nmax, q);
  for (int t = -kGrid; t <= kGrid; ++t) {
    const float iscale = (nmax + t * kGridStep) / (hi - lo);
    for (int i = 0; i < n; ++i) q[i] = static_cast<uint8_t>(round_clamp(iscale * (x[i] - lo), 0, nmax));
    Affine a;
    double e = 0;
    if (refit_affine(x, q, n, sx, sxx, offset_nonpositive, a, e) && e < best_score) best_score = e, best = a;
  }
  double best_err = codes_affine(x, n, best, nmax, q);
  for (int r = 0; r < kRefine; ++r) {
    Affine a;
    double e = 0;
    if (!refit_affine(x, q, n, sx, sxx, offset_nonpositive, a, e)) break;
    e = codes_affine(x, n, a, nmax, q);
    if (!(e < best_err)) break;
    best_err = e, best = a;
  }
  return best;
}

float fit_symmetric(const float* x, int n, int qmin, int qmax) {
  const float ends[2] = {static_cast<float>(qmin), static_cast<float>(qmax)};
  return search_scale(x, n, ends, kGridStep,
                      [&](float u) { return round_clamp(u, qmin, qmax); });
}

float fit_iq4(const float* x, int n) {
  // The table spans -127..113 in uneven steps of 10..24; a grid step of 1 level unit is ~1/16 of a
  // code step at the ends.
  const float ends[2] = {static_cast<float>(kIq4nlValues[0]), static_cast<float>(kIq4nlValues[15])};
  return search_scale(x, n, ends, 1.0f,
                      [](float u) { return static_cast<int>(kIq4nlValues[nearest_iq4(u)]); });
}

}  // namespace anelm::engine::kernels::fit
