// Scale fitting shared by the block quantizers (quantize_legacy.cpp, quantize_kquants.cpp): for a
// short run of values, the scale (and offset) whose integer codes reproduce them with the least
// squared error.
//
// The search is the one ggml describes for its K-quants: try a small grid of inverse scales around
// the one that maps the extreme value onto the extreme code, round every value to its code, refit
// the scale (and offset) to those codes by least squares, and keep the candidate with the least
// error; then alternate "codes from the scale" and "scale from the codes" while the error falls.
// The error is the plain squared error (every element weighs the same): re-quantising at load has no
// activation statistics that would say which elements matter more.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/kernels/dtype.h"

namespace anelm::engine::kernels::fit {

// x ~= scale * q + offset with q in [0, nmax].
struct Affine {
  float scale = 0.0f, offset = 0.0f;
};

// The best Affine for x[0..n), n <= 32. With `offset_nonpositive` the offset stays <= 0: K-quants
// store the minimum as a non-negative magnitude that is subtracted.
Affine fit_affine(const float* x, int n, int nmax, bool offset_nonpositive);

// The best scale for x ~= scale * q, q in [qmin, qmax] (qmin < 0 < qmax), n <= 32. Either sign: the
// largest magnitude may land on either end.
float fit_symmetric(const float* x, int n, int qmin, int qmax);

// The best scale for x ~= scale * kIq4nlValues[q], q in [0, 16), n <= 32.
float fit_iq4(const float* x, int n);

// The nearest codes for a given scale (and offset), written to q; returns the squared error.
double codes_affine(const float* x, int n, Affine a, int nmax, uint8_t* q);
double codes_symmetric(const float* x, int n, float scale, int qmin, int qmax, int8_t* q);
double codes_iq4(const float* x, int n, float scale, int8_t* q);

// Midpoints between neighbouring kIq4nlValues entries (a sentinel last), and for each integer k in
// [-128, 128) the number of midpoints below k.
inline constexpr float kIq4Mid[16] = {-115.5f, -93.5f, -74.0f, -57.0f, -42.0f, -28.5f, -16.0f, -4.5f,
                                      7.0f,    19.0f,  31.5f,  45.5f,  61.0f,  79.0f,  101.0f, 1e30f};
struct Iq4Below {
  uint8_t at[256];
  constexpr Iq4Below() : at() {
    for (int k = -128; k < 128; ++k) {
      for (int i = 0; i < 15; ++i) at[k + 128] += kIq4Mid[i] < static_cast<float>(k);
    }
  }
};
inline constexpr Iq4Below kIq4Below;

// Index of the kIq4nlValues entry nearest to v (a tie takes the lower entry; NaN gives 0). The
// fitting loops call this for every element and candidate, so it is a table lookup on floor(v)
// plus one compare: at most one midpoint lies in [k, k + 1).
inline int nearest_iq4(float v) {
  if (!(v > -128.0f)) return 0;
  if (v >= 127.0f) return 15;
  const int k = static_cast<int>(v + 128.0f) - 128;  // floor(v), as v + 128 > 0
  const int n = kIq4Below.at[k + 128];
  return n + (kIq4Mid[n] < v);
}

// round(v) (half away from zero) clamped to [lo, hi]; NaN gives lo. Not std::nearbyint: without
// SSE4.1 that is a libm call and dominated the quantizers' time.
inline int round_clamp(float v, int lo, int hi) {
  if (!(v > static_cast<float>(lo))) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(v + (v >= 0.0f ? 0.5f : -0.5f));
}

// Codes 0..15 of a 32-element run in the Q4_0 nibble order (byte j: element j | element j+16 << 4),
// as Q4_1, Q5_0, Q5_1, IQ4_NL and each IQ4_XS sub-block store them.
inline void pack_nibbles32(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[16 + j] & 0x0F) << 4));
}

}  // namespace anelm::engine::kernels::fit
