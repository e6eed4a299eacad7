// Gated DeltaNet prefill: the engine's recurrent delta rule (engine/kernels/deltanet_generic-inl.h,
// every kernel table this CPU runs) against the chunkwise form of flash-linear-attention (the WY/UT
// representation of Yang et al., "Gated Delta Networks"), which is written here only to measure it:
// issue 24 asks for it where it is faster. Both are first checked against the scalar reference.
// Layout and sizes are Qwen3.5-0.8B's (16 value heads of 128, q/k/v rows of one token 6144 floats
// apart as in the mixer's conv output), one thread (the engine splits heads over its threads).
// Usage: bench_deltanet [reps=5]. One JSON line per (method, tokens): ns per token and head.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/kernels.h"
#include "engine/kernels/reference.h"

using namespace anelm::engine;
using namespace anelm::engine::kernels;

namespace {

constexpr int kHeads = 16, kDim = 128, kLd = 3 * kHeads * kDim;

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

typedef float f8 __attribute__((vector_size(32)));
inline f8 ld8(const float* p) { f8 v; std::memcpy(&v, p, sizeof v); return v; }
inline void st8(float* p, f8 v) { std::memcpy(p, &v, sizeof v); }

// c[m][n] = c_scale c[m][n] + a[m][k] b[k][n] (row-major, m % 4 == 0, n % 16 == 0; c_scale 0 does not
// read c): 4 rows x 16 columns in registers.
// lower: only the blocks that hold some column j <= row i (a causal product).
void gemm(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int m, int n, int k, bool lower,
          float c_scale) {
  // Column blocks outside: one block of b (k x 16 floats) stays in L1 while every row block passes.
  for (int j0 = 0; j0 < n; j0 += 16) {
    for (int i0 = lower ? std::max(0, j0 - 3) / 4 * 4 : 0; i0 < m; i0 += 4) {
      f8 acc[4][2] = {};
      if (c_scale != 0.0f) {
        for (int i = 0; i < 4; ++i) {
          acc[i][0] = c_scale * ld8(c + (i0 + i) * ldc + j0);
          acc[i][1] = c_scale * ld8(c + (i0 + i) * ldc + j0 + 8);
        }
      }
      for (int p = 0; p < k; ++p) {
        const f8 b0 = ld8(b + p * ldb + j0), b1 = ld8(b + p * ldb + j0 + 8);
        for (int i = 0; i < 4; ++i) {
          const float ai = a[(i0 + i) * lda + p];
          acc[i][0] += ai * b0;
          acc[i][1] += ai * b1;
        }
      }
      for (int i = 0; i < 4; ++i) {
        st8(c + (i0 + i) * ldc + j0, acc[i][0]);
        st8(c + (i0 + i) * ldc + j0 + 8, acc[i][1]);
      }
    }
  }
}

// e^x on eight lanes (x <= 0 here: decays), the engine's polynomial (deltanet_generic-inl.h):
// std::exp per (i, j) pair cost a tenth of the chunkwise form.
inline f8 exp8(f8 x) {
  x = x < -87.3f ? -87.3f : x;
  const f8 n = (x * 1.44269504089f + 12582912.0f) - 12582912.0f;
  f8 r = x - n * 0.693145751953125f;
  r = r - n * 1.428606765330187e-06f;
  f8 p = r * (1.0f / 720) + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  typedef int32_t i8v __attribute__((vector_size(32)));
  const i8v e = (__builtin_convertvector(n, i8v) + 127) << 23;
  f8 scale;
  std::memcpy(&scale, &e, sizeof scale);
  return p * scale;
}

// w[j] = sign * e^(G_i - G_j) * a[j] for j < n (n rounded up to 8 within the chunk's arrays).
void decay_row(float* w, const float* g, float gi, const float* a, int n, float sign) {
  for (int j = 0; j < n; j += 8) st8(w + j, sign * exp8(gi - ld8(g + j)) * ld8(a + j));
}

// One row of the chunk's triangular parts: out = s0 * x + sum_{j < n} w[j] * d[j] (rows of dv floats),
// the row's 128 sums in 16 registers.
void combine_row(float* out, float s0, const float* x, const float* w, const float* d, int n, int dv) {
  for (int b0 = 0; b0 < dv; b0 += 64) {
    f8 acc[8];
    for (int u = 0; u < 8; ++u) acc[u] = s0 * ld8(x + b0 + 8 * u);
    for (int j = 0; j < n; ++j) {
      const float wj = w[j];
      for (int u = 0; u < 8; ++u) acc[u] += wj * ld8(d + j * dv + b0 + 8 * u);
    }
    for (int u = 0; u < 8; ++u) st8(out + b0 + 8 * u, acc[u]);
  }
}

// The chunkwise gated delta rule over one head (DeltaRuleArgs' contract, d_k = d_v = a multiple of 64).
// Within a chunk of c tokens with cumulative log decay G_i (from the chunk's start) and start state
// S0 (M = S0^T, [d_k][d_v]):
//   delta_i = beta_i (v_i - e^G_i S0 k_i - sum_{j<i} e^(G_i-G_j) (k_i.k_j) delta_j)   (forward substitution)
//   out_i   = e^G_i S0 q_i + sum_{j<=i} e^(G_i-G_j) (q_i.k_j) delta_j
//   M      <- e^G_c M + sum_j e^(G_c-G_j) k_j delta_j^T
// so the state is read and written once per chunk and the rest is matrix products. Sequential over
// chunks (the GPU kernels' W/U factors exist to run chunks in parallel; one CPU thread need not).
struct Chunkwise {
  int C;  // tokens per chunk, a multiple of 16
  std::vector<float> m, kq, kt, x, att, dl, g, w;

  explicit Chunkwise(int c) : C(c) {}

  void run(const DeltaRuleArgs& a) {
    const int dk = a.d_k, dv = a.d_v;
    m.resize(static_cast<size_t>(dk) * dv);
    kq.resize(static_cast<size_t>(2 * C) * dk);
    kt.resize(static_cast<size_t>(dk) * C);
    x.resize(static_cast<size_t>(2 * C) * dv);
    att.resize(static_cast<size_t>(2 * C) * C);
    dl.resize(static_cast<size_t>(C) * dv);
    g.resize(static_cast<size_t>(C));
    w.resize(static_cast<size_t>(C));
    for (int b = 0; b < dv; ++b) {
      for (int e = 0; e < dk; ++e) m[e * dv + b] = a.state[b * dk + e];
    }
    for (int t0 = 0; t0 < a.n; t0 += C) {
      const int c = std::min(C, a.n - t0);
      std::fill(kq.begin(), kq.end(), 0.0f);
      float G = 0.0f;
      for (int i = 0; i < c; ++i) {
        const int64_t t = t0 + i;
        std::memcpy(&kq[i * dk], a.k + t * a.ld_qk, sizeof(float) * dk);
        std::memcpy(&kq[(C + i) * dk], a.q + t * a.ld_qk, sizeof(float) * dk);
        G += a.g[t * a.ld_gb];
        g[i] = G;
      }
      for (int e = 0; e < dk; ++e) {
        for (int j = 0; j < C; ++j) kt[e * C + j] = kq[j * dk + e];
      }
      gemm(kq.data(), dk, m.data(), dv, x.data(), dv, 2 * C, dv, dk, false, 0.0f);  // [K; Q] S0^T
      gemm(kq.data(), dk, kt.data(), C, att.data(), C, C, C, dk, true, 0.0f);  // K K^T, lower part
      gemm(kq.data() + C * dk, dk, kt.data(), C, att.data() + C * C, C, C, C, dk, true, 0.0f);  // Q K^T
      for (int i = 0; i < c; ++i) {
        const float beta = a.beta[(t0 + i) * a.ld_gb];
        decay_row(w.data(), g.data(), g[i], &att[i * C], i, -1.0f);
        float* di = &dl[i * dv];
        combine_row(di, -std::exp(g[i]), &x[i * dv], w.data(), dl.data(), i, dv);
        const float* v = a.v + (t0 + i) * a.ld_v;
        for (int b = 0; b < dv; ++b) di[b] = beta * (v[b] + di[b]);
      }
      for (int i = 0; i < c; ++i) {
        decay_row(w.data(), g.data(), g[i], &att[(C + i) * C], i + 1, 1.0f);
        combine_row(a.out + (t0 + i) * a.ld_out, std::exp(g[i]), &x[(C + i) * dv], w.data(), dl.data(), i + 1, dv);
      }
      const float gc = g[c - 1];
      for (int j = 0; j < C; ++j) w[j] = j < c ? std::exp(gc - g[j]) : 0.0f;
      for (int e = 0; e < dk; ++e) {
        for (int j = 0; j < C; ++j) kt[e * C + j] *= w[j];
      }
      gemm(kt.data(), C, dl.data(), dv, m.data(), dv, dk, dv, c, false, std::exp(gc));
    }
    for (int b = 0; b < dv; ++b) {
      for (int e = 0; e < dk; ++e) a.state[b * dk + e] = m[e * dv + b];
    }
  }
};

#if defined(__x86_64__)
#pragma GCC pop_options
#endif

struct Inputs {
  std::vector<float> qkv, g, beta;
  int n;
  Inputs(int n_tok, std::mt19937& rng) : qkv(static_cast<size_t>(n_tok) * kLd), g(static_cast<size_t>(n_tok) * kHeads),
                                        beta(g.size()), n(n_tok) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_real_distribution<float> ug(-2.0f, -0.01f), ub(0.05f, 0.95f);
    for (auto& v : qkv) v = nd(rng);
    for (int t = 0; t < n; ++t) {  // q, k L2-normalised per head, q scaled by 1/sqrt(d) (the mixer's contract)
      for (int h = 0; h < 2 * kHeads; ++h) {
        float* r = &qkv[static_cast<size_t>(t) * kLd + h * kDim];
        double ss = 0;
        for (int e = 0; e < kDim; ++e) ss += r[e] * r[e];
        const float s = static_cast<float>((h < kHeads ? 1.0 / std::sqrt(kDim) : 1.0) / std::sqrt(ss));
        for (int e = 0; e < kDim; ++e) r[e] *= s;
      }
    }
    for (auto& v : g) v = ug(rng);
    for (auto& v : beta) v = ub(rng);
  }
  DeltaRuleArgs head(int h, float* state, float* out) const {
    DeltaRuleArgs a;
    a.state = state;
    a.q = qkv.data() + h * kDim;
    a.k = qkv.data() + (kHeads + h) * kDim;
    a.v = qkv.data() + (2 * kHeads + h) * kDim;
    a.ld_qk = a.ld_v = kLd;
    a.g = g.data() + h;
    a.beta = beta.data() + h;
    a.ld_gb = kHeads;
    a.out = out + h * kDim;
    a.ld_out = kHeads * kDim;
    a.n = n;
    a.d_k = a.d_v = kDim;
    return a;
  }
};

template <typename F>
double best_seconds(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Max |x - ref| over max |ref| of outputs and final states, all heads.
double rel_err(const std::vector<float>& out, const std::vector<float>& ref_out, const std::vector<float>& st,
               const std::vector<float>& ref_st) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < out.size(); ++i) err = std::max(err, std::fabs(double{out[i]} - ref_out[i])), scale = std::max(scale, std::fabs(double{ref_out[i]}));
  for (size_t i = 0; i < st.size(); ++i) err = std::max(err, std::fabs(double{st[i]} - ref_st[i])), scale = std::max(scale, std::fabs(double{ref_st[i]}));
  return err / scale;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  if (reps < 1) {
    std::fprintf(stderr, "usage: bench_deltanet [reps >= 1, default 5]\n");
    return 2;
  }
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::fprintf(stderr, "bench_deltanet: the chunkwise form here is written for AVX2 + FMA\n");
    return 2;
  }
#endif
  std::mt19937 rng(7);
  const size_t state_floats = static_cast<size_t>(kHeads) * kDim * kDim;
  std::vector<float> state0(state_floats);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  for (auto& v : state0) v = nd(rng);
  Chunkwise cw32(32), cw64(64);

  // Check every method against the scalar reference over 200 tokens (a partial last chunk).
  {
    Inputs in(200, rng);
    std::vector<float> ref_st = state0, ref_out(static_cast<size_t>(in.n) * kHeads * kDim);
    for (int h = 0; h < kHeads; ++h) ref::delta_rule(in.head(h, ref_st.data() + h * kDim * kDim, ref_out.data()));
    auto check = [&](const char* name, auto&& fn) {
      std::vector<float> st = state0, out(ref_out.size());
      for (int h = 0; h < kHeads; ++h) fn(in.head(h, st.data() + h * kDim * kDim, out.data()));
      const double e = rel_err(out, ref_out, st, ref_st);
      std::printf("{\"check\":\"%s\",\"tokens\":%d,\"max_rel_err\":%.3g}\n", name, in.n, e);
      if (!(e < 1e-4)) {
        std::fprintf(stderr, "bench_deltanet: %s is off the scalar reference (%.3g)\n", name, e);
        std::exit(1);
      }
    };
    for (Isa isa : supported_isas()) {
      if (isa == Isa::kScalar) continue;
      check(isa_name(isa), [&](const DeltaRuleArgs& a) { kernel_table(isa)->delta_rule(a); });
    }
    check("chunkwise32", [&](const DeltaRuleArgs& a) { cw32.run(a); });
    check("chunkwise64", [&](const DeltaRuleArgs& a) { cw64.run(a); });
  }

  for (int n : {64, 512, 2048}) {
    Inputs in(n, rng);
    std::vector<float> st(state_floats), out(static_cast<size_t>(n) * kHeads * kDim);
    auto time = [&](const std::string& name, auto&& fn) {
      const double s = best_seconds(reps, [&] {
        st = state0;
        for (int h = 0; h < kHeads; ++h) fn(in.head(h, st.data() + h * kDim * kDim, out.data()));
      });
      std::printf("{\"method\":\"%s\",\"tokens\":%d,\"heads\":%d,\"d\":%d,\"ns_per_token_head\":%.1f}\n", name.c_str(), n,
                  kHeads, kDim, s * 1e9 / (double(n) * kHeads));
      std::fflush(stdout);
    };
    for (int round = 0; round < 2; ++round) {  // interleaved
      for (Isa isa : supported_isas()) {
        if (isa == Isa::kScalar) continue;
        time(std::string("recurrent_") + isa_name(isa), [&](const DeltaRuleArgs& a) { kernel_table(isa)->delta_rule(a); });
      }
      time("chunkwise32", [&](const DeltaRuleArgs& a) { cw32.run(a); });
      time("chunkwise64", [&](const DeltaRuleArgs& a) { cw64.run(a); });
    }
  }
  return 0;
}
