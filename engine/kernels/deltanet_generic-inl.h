// Gated DeltaNet kernels (Qwen3.5's linear attention), written once and compiled into every ISA's
// file through kernels_generic-inl.h: the plain loops with fixed-width partial sums vectorise under
// each file's -m flags. No include guard on purpose (see kernels_generic-inl.h).

// Eight floats as one value, mapped by the compiler onto the ISA's registers (one ymm; two xmm or
// NEON q). The plain loops' auto-vectoriser interleaved the recurrence's two dot products with
// permutes; these keep every partial sum in its own register. Only references cross function
// boundaries (a 32-byte vector by value changes the ABI of the non-AVX files).
typedef float g_f8 __attribute__((vector_size(32)));
typedef int32_t g_i8 __attribute__((vector_size(32)));
inline void g_ld8(g_f8& v, const float* p) { std::memcpy(&v, p, sizeof v); }
inline void g_st8(float* p, const g_f8& v) { std::memcpy(p, &v, sizeof v); }
inline float g_hsum8(const g_f8& v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// e^x of eight lanes for x in [-87.3, 88.3] (clamped): x = n ln2 + r, a degree-6 Taylor polynomial for
// e^r, 2^n through the exponent bits (as the SIMD files' exp256). The scalar std::exp was half of the
// conv's time.
inline void g_exp8(g_f8& x) {
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;
  // Round to nearest by the 1.5 * 2^23 trick (|x log2 e| < 128).
  const g_f8 n = (x * 1.44269504089f + 12582912.0f) - 12582912.0f;
  g_f8 r = x - n * 0.693145751953125f;
  r = r - n * 1.428606765330187e-06f;
  g_f8 p = r * (1.0f / 720) + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const g_i8 e = (__builtin_convertvector(n, g_i8) + 127) << 23;
  g_f8 scale;
  std::memcpy(&scale, &e, sizeof scale);
  x = p * scale;
}

// The delta rule's row update s = d s + delta k, one expression for every place that applies it, so
// the rounding (and any fused multiply-add the compiler forms) is the same whichever token of a
// call applies it: a sequence's results do not depend on how its tokens are split into calls
// (batched and alone give the same ids).
inline void g_decay_add8(g_f8& s, float d, float delta, const g_f8& k) { s = s * d + delta * k; }
inline void g_decay_add1(float& s, float d, float delta, float k) { s = s * d + delta * k; }

// Tokens of one chunk of the delta rule; their q and k are copied side by side first (the mixer's
// rows lie conv_dim floats apart, a multiple of 4 KiB, so 16 strided rows would share one L1 set).
constexpr int kDeltaTokens = 16;

struct DeltaChunk {
  int n = 0;
  const float* k = nullptr;  // [n][d_k]
  const float* q = nullptr;
  float decay[kDeltaTokens], beta[kDeltaTokens], kq[kDeltaTokens];
};

// R state rows (value dims b0..b0+R) over one chunk, held in L1 from its first token to its last.
// Per token t: S_t = d_t S_{t-1} + delta_t k_t^T with delta_t = beta_t (v_t - d_t S_{t-1} k_t),
// out_t = S_t q_t = d_t (S_{t-1} q_t) + delta_t (k_t . q_t). So one pass per token applies the
// previous token's update and takes both dot products of the updated rows, and the last update
// is applied after the chunk: one read and one write of each row per token, no dependent
// reductions inside a pass.
template <int R>
void g_delta_rows(const DeltaRuleArgs& a, const DeltaChunk& c, int t0, int b0) {
  const int dk = a.d_k, dk8 = dk - dk % 8;
  float* rows[R];
  for (int i = 0; i < R; ++i) rows[i] = a.state + static_cast<int64_t>(b0 + i) * dk;
  float delta[R] = {};
  float d_prev = 1.0f;
  const float* k_prev = c.k;  // with delta 0 the first pass only reads
  for (int j = 0; j < c.n; ++j) {
    const float* k = c.k + j * dk;
    const float* q = c.q + j * dk;
    g_f8 uk[R] = {}, uq[R] = {};
    float tk[R] = {}, tq[R] = {};
    for (int e = 0; e < dk8; e += 8) {
      g_f8 kc, qc, pc, s;
      g_ld8(kc, k + e);
      g_ld8(qc, q + e);
      g_ld8(pc, k_prev + e);
      for (int i = 0; i < R; ++i) {
        g_ld8(s, rows[i] + e);
        g_decay_add8(s, d_prev, delta[i], pc);
        g_st8(rows[i] + e, s);
        uk[i] += s * kc;
        uq[i] += s * qc;
      }
    }
    for (int e = dk8; e < dk; ++e) {
      for (int i = 0; i < R; ++i) {
        g_decay_add1(rows[i][e], d_prev, delta[i], k_prev[e]);
        tk[i] += rows[i][e] * k[e];
        tq[i] += rows[i][e] * q[e];
      }
    }
    const float* v = a.v + (t0 + j) * a.ld_v + b0;
    float* out = a.out + (t0 + j) * a.ld_out + b0;
    for (int i = 0; i < R; ++i) {
      delta[i] = c.beta[j] * (v[i] - c.decay[j] * (g_hsum8(uk[i]) + tk[i]));
      out[i] = c.decay[j] * (g_hsum8(uq[i]) + tq[i]) + delta[i] * c.kq[j];
    }
    d_prev = c.decay[j];
    k_prev = k;
  }
  for (int e = 0; e < dk8; e += 8) {
    g_f8 pc, s;
    g_ld8(pc, k_prev + e);
    for (int i = 0; i < R; ++i) {
      g_ld8(s, rows[i] + e);
      g_decay_add8(s, d_prev, delta[i], pc);
      g_st8(rows[i] + e, s);
    }
  }
  for (int e = dk8; e < dk; ++e) {
    for (int i = 0; i < R; ++i) g_decay_add1(rows[i][e], d_prev, delta[i], k_prev[e]);
  }
}

// One value head over a.n tokens, in chunks of kDeltaTokens, four state rows at a time.
void g_delta_rule(const DeltaRuleArgs& a) {
  const int dk = a.d_k;
  // One buffer per thread, grown once to the largest head (the worker threads live as long as the engine).
  thread_local std::vector<float> buf;
  const size_t need = static_cast<size_t>(2 * kDeltaTokens) * static_cast<size_t>(dk);
  if (buf.size() < need) buf.resize(need);
  float* kb = buf.data();
  float* qb = kb + kDeltaTokens * dk;
  DeltaChunk c;
  c.k = kb;
  c.q = qb;
  for (int t0 = 0; t0 < a.n; t0 += kDeltaTokens) {
    c.n = a.n - t0 < kDeltaTokens ? a.n - t0 : kDeltaTokens;
    for (int j = 0; j < c.n; ++j) {
      const int64_t t = t0 + j;
      std::memcpy(kb + j * dk, a.k + t * a.ld_qk, sizeof(float) * static_cast<size_t>(dk));
      std::memcpy(qb + j * dk, a.q + t * a.ld_qk, sizeof(float) * static_cast<size_t>(dk));
      c.decay[j] = std::exp(a.g[t * a.ld_gb]);
      c.beta[j] = a.beta[t * a.ld_gb];
      c.kq[j] = g_dot(kb + j * dk, qb + j * dk, dk);
    }
    int b = 0;
    for (; b + 4 <= a.d_v; b += 4) g_delta_rows<4>(a, c, t0, b);
    for (; b < a.d_v; ++b) g_delta_rows<1>(a, c, t0, b);
  }
}

void g_conv_silu(const ConvArgs& a) {
  const int hist = a.taps - 1;
  // Input row r of the window: r < 0 reaches into the state (its row hist + r), else x's row r.
  auto in_row = [&](int r) { return r < 0 ? a.state + (hist + r) * a.ld_state : a.x + r * a.ld_x; };
  // Chunks of up to 256 channels with their taps' weights transposed once into a local [tap][channel]
  // array (w is [channel][tap]), then every token over the chunk: each token row is read in whole
  // cache lines (8 channels per token went through a page per row, the TLB's limit); the rest (and
  // kernels wider than kVecTaps) channel by channel.
  constexpr int kVecTaps = 8, kChunk = 256;
  int c0 = 0;
  if (a.taps <= kVecTaps) {
    alignas(32) float wt[kVecTaps * kChunk];
    while (c0 + 8 <= a.channels) {
      const int m = (a.channels - c0) / 8 * 8 < kChunk ? (a.channels - c0) / 8 * 8 : kChunk;
      for (int c = 0; c < m; ++c) {
        for (int i = 0; i < a.taps; ++i) wt[i * kChunk + c] = a.w[static_cast<int64_t>(c0 + c) * a.taps + i];
      }
      for (int t = 0; t < a.n; ++t) {
        float* out = a.out + t * a.ld_out + c0;
        for (int c = 0; c < m; c += 8) {
          g_f8 acc = {}, x, w;
          for (int i = 0; i < a.taps; ++i) {
            g_ld8(x, in_row(t - hist + i) + c0 + c);
            g_ld8(w, wt + i * kChunk + c);
            acc += w * x;
          }
          g_f8 e = -acc;  // silu(acc) = acc / (1 + e^-acc)
          g_exp8(e);
          g_st8(out + c, acc / (1.0f + e));
        }
      }
      c0 += m;
    }
  }
  for (int t = 0; t < a.n; ++t) {
    float* out = a.out + t * a.ld_out;
    for (int c = c0; c < a.channels; ++c) {
      float acc = 0.0f;
      for (int i = 0; i < a.taps; ++i) acc += a.w[static_cast<int64_t>(c) * a.taps + i] * in_row(t - hist + i)[c];
      out[c] = acc / (1.0f + std::exp(-acc));
    }
  }
  // The new state: the last `hist` inputs. Rows move oldest first, so a row still to be read is
  // never overwritten (in_row(r) for r >= 0 is x, for r < 0 a later state row).
  for (int j = 0; j < hist; ++j) {
    const float* src = in_row(a.n - hist + j);
    if (src != a.state + j * a.ld_state) {
      std::memcpy(a.state + j * a.ld_state, src, sizeof(float) * static_cast<size_t>(a.channels));
    }
  }
}
