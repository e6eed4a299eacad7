// Quantizers for the 256-element super-block types: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS.
//
// A super-block is quantised in three steps:
//  1. each sub-block gets its own best float scale (and min) from the search of quantize_fit.h;
//  2. those are stored as small integers times one f16 super-scale d (and dmin): d maps the largest
//     sub-block scale onto the end of the integer range, and each sub-block then takes the floor or
//     the ceiling of its ideal integer, whichever reconstructs the sub-block better (codes retaken
//     for each);
//  3. with the integers fixed, d (and dmin) are refitted to the whole super-block by least squares
//     and step 2's integer choice is repeated, kept only while the super-block's error falls.
// Codes are always taken against the f16-rounded super-scales that are stored.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "engine/kernels/fp16.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/quantize_fit.h"

namespace anelm::engine::kernels {

namespace {

constexpr int kMaxSub = 16;  // sub-blocks per super-block (16 of 16 elements, or 8 of 32)
constexpr int kRefits = 2;   // step 3 rounds; a third one almost never lowers the error

// Super-block with unsigned scales and mins (Q2_K, Q4_K, Q5_K): value = d*sc*q - dmin*mn.
struct AffineSuper {
  uint16_t d = 0, dmin = 0;
  uint8_t sc[kMaxSub] = {}, mn[kMaxSub] = {};
  uint8_t q[kQKBlock] = {};
};

// Super-block with signed scales (Q3_K, Q6_K, IQ4_XS): value = d*sc*level(q).
struct SignedSuper {
  uint16_t d = 0;
  int sc[kMaxSub] = {};
  int8_t q[kQKBlock] = {};
};

int clamp_int(double v, int lo, int hi) {
  return v >= hi ? hi : v > lo ? static_cast<int>(v) : lo;
}

// Step 2 for AffineSuper: integer scale and min of each sub-block for the stored d / dmin.
double choose_affine_ints(const float* x, const fit::Affine* sub, int nsub, int len, int nmax, int smax,
                          AffineSuper& s) {
  const float d = half_to_float(s.d), dmin = half_to_float(s.dmin);
  uint8_t q[kQBlock];
  double total = 0;
  for (int j = 0; j < nsub; ++j) {
    const double ideal_sc = d > 0 ? sub[j].scale / d : 0.0, ideal_mn = dmin > 0 ? -sub[j].offset / dmin : 0.0;
    double best = std::numeric_limits<double>::infinity();
    for (int a = 0; a < 4; ++a) {
      const int sc = clamp_int(std::floor(ideal_sc) + (a & 1), 0, smax);
      const int mn = clamp_int(std::floor(ideal_mn) + (a >> 1), 0, smax);
      const double e = fit::codes_affine(x + j * len, len, {d * sc, -dmin * mn}, nmax, q);
      if (e < best) {
        best = e;
        s.sc[j] = static_cast<uint8_t>(sc);
        s.mn[j] = static_cast<uint8_t>(mn);
        std::memcpy(s.q + j * len, q, len);
      }
    }
    total += best;
  }
  return total;
}

// Step 3 for AffineSuper: least-squares (d, dmin >= 0) for x ~= d * (sc*q) - dmin * mn.
void refit_affine_super(const float* x, int len, AffineSuper& s) {
  double saa = 0, sab = 0, sbb = 0, sax = 0, sbx = 0;
  for (int i = 0; i < kQKBlock; ++i) {
    const double a = static_cast<double>(s.sc[i / len]) * s.q[i], b = s.mn[i / len];
    saa += a * a, sab += a * b, sbb += b * b, sax += a * x[i], sbx += b * x[i];
  }
  if (saa <= 0) return;
  double d = sax / saa, m = half_to_float(s.dmin);  // no min in use: only d moves
  const double det = sab * sab - saa * sbb;
  if (sbb > 0 && det != 0) {
    d = (sab * sbx - sax * sbb) / det;
    m = (saa * sbx - sab * sax) / det;
    if (m < 0) d = sax / saa, m = 0;
  }
  if (d < 0) return;
  s.d = float_to_half(static_cast<float>(d));
  s.dmin = float_to_half(static_cast<float>(m));
}

// Steps 1-3 for a super-block of nsub sub-blocks of len elements, codes 0..nmax, integers 0..smax.
AffineSuper quantize_affine_super(const float* x, int nsub, int len, int nmax, int smax) {
  fit::Affine sub[kMaxSub];
  float max_sc = 0, max_mn = 0;
  for (int j = 0; j < nsub; ++j) {
    sub[j] = fit::fit_affine(x + j * len, len, nmax, /*offset_nonpositive=*/true);
    max_sc = std::max(max_sc, sub[j].scale);
    max_mn = std::max(max_mn, -sub[j].offset);
  }
  AffineSuper best;
  best.d = float_to_half(max_sc / smax);
  best.dmin = float_to_half(max_mn / smax);
  double best_err = choose_affine_ints(x, sub, nsub, len, nmax, smax, best);
  for (int r = 0; r < kRefits; ++r) {
    AffineSuper t = best;
    refit_affine_super(x, len, t);
    const double e = choose_affine_ints(x, sub, nsub, len, nmax, smax, t);
    if (!(e < best_err)) break;
    best = t, best_err = e;
  }
  return best;
}

// The codes of the signed types: symmetric integers (Q3_K, Q6_K) or IQ4 table indices (IQ4_XS).
struct SymmetricCodes {
  int qmin, qmax;
  float fit(const float* x, int n) const { return fit::fit_symmetric(x, n, qmin, qmax); }
  double codes(const float* x, int n, float scale, int8_t* q) const {
    return fit::codes_symmetric(x, n, scale, qmin, qmax, q);
  }
  float level(int8_t q) const { return q; }
};
struct Iq4Codes {
  float fit(const float* x, int n) const { return fit::fit_iq4(x, n); }
  double codes(const float* x, int n, float scale, int8_t* q) const { return fit::codes_iq4(x, n, scale, q); }
  float level(int8_t q) const { return kIq4nlValues[q]; }
};

// Step 2 for SignedSuper.
template <typename Codes>
double choose_signed_ints(const Codes& c, const float* x, const float* sub, int nsub, int len, int smin,
                          int smax, SignedSuper& s) {
  const float d = half_to_float(s.d);
  int8_t q[kQBlock];
  double total = 0;
  for (int j = 0; j < nsub; ++j) {
    const double ideal = d != 0 ? sub[j] / d : 0.0;
    double best = std::numeric_limits<double>::infinity();
    for (int a = 0; a < 2; ++a) {
      const int sc = clamp_int(std::floor(ideal) + a, smin, smax);
      const double e = c.codes(x + j * len, len, d * sc, q);
      if (e < best) {
        best = e;
        s.sc[j] = sc;
        std::memcpy(s.q + j * len, q, len);
      }
    }
    total += best;
  }
  return total;
}

// Steps 1-3 for the signed types; integers smin..smax (smin = -smax - 1).
template <typename Codes>
SignedSuper quantize_signed_super(const Codes& c, const float* x, int nsub, int len, int smin, int smax) {
  float sub[kMaxSub], v = 0;
  for (int j = 0; j < nsub; ++j) {
    sub[j] = c.fit(x + j * len, len);
    if (std::fabs(sub[j]) > std::fabs(v)) v = sub[j];
  }
  SignedSuper best;
  best.d = float_to_half(v / smin);  // the largest scale takes smin, the end with one more step
  double best_err = choose_signed_ints(c, x, sub, nsub, len, smin, smax, best);
  for (int r = 0; r < kRefits; ++r) {
    double saa = 0, sax = 0;
    for (int i = 0; i < kQKBlock; ++i) {
      const double a = static_cast<double>(best.sc[i / len]) * c.level(best.q[i]);
      saa += a * a, sax += a * x[i];
    }
    if (saa <= 0) break;
    SignedSuper t = best;
    t.d = float_to_half(static_cast<float>(sax / saa));
    const double e = choose_signed_ints(c, x, sub, nsub, len, smin, smax, t);
    if (!(e < best_err)) break;
    best = t, best_err = e;
  }
  return best;
}

// Q4_K / Q5_K: 6-bit scales and mins of 8 sub-blocks in 12 bytes (the inverse of k4_scale_min).
void pack_k4_scales(const AffineSuper& s, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(s.sc[j] | ((s.sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>(s.mn[j] | ((s.mn[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((s.sc[j + 4] & 0x0F) | ((s.mn[j + 4] & 0x0F) << 4));
  }
}

}  // namespace

void quantize_row_q2_k(const float* x, BlockQ2_K* out, int64_t k) {
  for (int64_t b = 0; b < k / kQKBlock; ++b, x += kQKBlock) {
    const AffineSuper s = quantize_affine_super(x, 16, 16, 3, 15);
    BlockQ2_K& o = out[b];
    std::memset(&o, 0, sizeof o);
    o.d = s.d, o.dmin = s.dmin;
    for (int j = 0; j < 16; ++j) o.scales[j] = static_cast<uint8_t>(s.sc[j] | (s.mn[j] << 4));
    for (int e = 0; e < kQKBlock; ++e) {  // element 128h + 32s + l: bits 2s of qs[32h + l]
      const int h = e / 128, sub = (e % 128) / 32, l = e % 32;
      o.qs[32 * h + l] |= static_cast<uint8_t>(s.q[e] << (2 * sub));
    }
  }
}

void quantize_row_q3_k(const float* x, BlockQ3_K* out, int64_t k) {
  for (int64_t b = 0; b < k / kQKBlock; ++b, x += kQKBlock) {
    const SignedSuper s = quantize_signed_super(SymmetricCodes{-4, 3}, x, 16, 16, -32, 31);
    BlockQ3_K& o = out[b];
    std::memset(&o, 0, sizeof o);
    o.d = s.d;
    for (int j = 0; j < 16; ++j) {  // the inverse of k3_scale
      const int v = s.sc[j] + 32;
      o.scales[j % 8] |= static_cast<uint8_t>((v & 0x0F) << (j < 8 ? 0 : 4));
      o.scales[8 + j % 4] |= static_cast<uint8_t>((v >> 4) << (2 * (j / 4)));
    }
    for (int e = 0; e < kQKBlock; ++e) {
      // Stored u = q + 4: 2 low bits as Q2_K; the high bit set means "no -4".
      const int h = e / 128, sub = (e % 128) / 32, l = e % 32, u = s.q[e] + 4;
      o.qs[32 * h + l] |= static_cast<uint8_t>((u & 3) << (2 * sub));
      if (u & 4) o.hmask[l] |= static_cast<uint8_t>(1 << (4 * h + sub));
    }
  }
}

// Q4_K and Q5_K share everything but the fifth bit.
template <typename Block>
void quantize_row_k45(const float* x, Block* out, int64_t k, int nmax) {
  constexpr bool kFive = std::is_same_v<Block, BlockQ5_K>;
  for (int64_t b = 0; b < k / kQKBlock; ++b, x += kQKBlock) {
    const AffineSuper s = quantize_affine_super(x, 8, 32, nmax, 63);
    Block& o = out[b];
    std::memset(&o, 0, sizeof o);
    o.d = s.d, o.dmin = s.dmin;
    pack_k4_scales(s, o.scales);
    for (int e = 0; e < kQKBlock; ++e) {  // element 64j + l: nibble (l >= 32) of qs[32j + l % 32]
      const int j = e / 64, l = e % 64, hi = l >= 32;
      o.qs[32 * j + l % 32] |= static_cast<uint8_t>((s.q[e] & 0x0F) << (4 * hi));
      if constexpr (kFive) o.qh[l % 32] |= static_cast<uint8_t>((s.q[e] >> 4) << (2 * j + hi));
    }
  }
}

void quantize_row_q4_k(const float* x, BlockQ4_K* out, int64_t k) { quantize_row_k45(x, out, k, 15); }
void quantize_row_q5_k(const float* x, BlockQ5_K* out, int64_t k) { quantize_row_k45(x, out, k, 31); }

void quantize_row_q6_k(const float* x, BlockQ6_K* out, int64_t k) {
  for (int64_t b = 0; b < k / kQKBlock; ++b, x += kQKBlock) {
    const SignedSuper s = quantize_signed_super(SymmetricCodes{-32, 31}, x, 16, 16, -128, 127);
    BlockQ6_K& o = out[b];
    std::memset(&o, 0, sizeof o);
    o.d = s.d;
    for (int j = 0; j < 16; ++j) o.scales[j] = static_cast<int8_t>(s.sc[j]);
    for (int e = 0; e < kQKBlock; ++e) {
      // Stored u = q + 32: low 4 bits in ql (nibble by s / 2), high 2 bits at bits 2s of qh.
      const int h = e / 128, sub = (e % 128) / 32, l = e % 32, u = s.q[e] + 32;
      o.ql[64 * h + l + 32 * (sub & 1)] |= static_cast<uint8_t>((u & 0x0F) << (sub < 2 ? 0 : 4));
      o.qh[32 * h + l] |= static_cast<uint8_t>((u >> 4) << (2 * sub));
    }
  }
}

void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* out, int64_t k) {
  for (int64_t b = 0; b < k / kQKBlock; ++b, x += kQKBlock) {
    const SignedSuper s = quantize_signed_super(Iq4Codes{}, x, 8, 32, -32, 31);
    BlockIQ4_XS& o = out[b];
    std::memset(&o, 0, sizeof o);
    o.d = s.d;
    for (int ib = 0; ib < 8; ++ib) {
      const int v = s.sc[ib] + 32;  // stored with offset 32: low 4 bits in scales_l, high 2 in scales_h
      o.scales_l[ib / 2] |= static_cast<uint8_t>((v & 0x0F) << (4 * (ib % 2)));
      o.scales_h |= static_cast<uint16_t>((v >> 4) << (2 * ib));
      uint8_t q[kQBlock];
      for (int i = 0; i < kQBlock; ++i) q[i] = static_cast<uint8_t>(s.q[32 * ib + i]);
      fit::pack_nibbles32(q, o.qs + 16 * ib);
    }
  }
}

}  // namespace anelm::engine::kernels
