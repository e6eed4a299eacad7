// Gated DeltaNet kernels (Qwen3.5's linear attention), written once and compiled into every ISA's
// file through kernels_generic-inl.h: the plain loops with fixed-width partial sums vectorise under
// each file's -m flags. No include guard on purpose (see kernels_generic-inl.h).

// One value head over a.n tokens: every state row (one value dim) is read twice per token, once for
// the prediction and once for the update fused with the read-out, while it sits in L1.
void g_delta_rule(const DeltaRuleArgs& a) {
  for (int t = 0; t < a.n; ++t) {
    const float* q = a.q + t * a.ld_qk;
    const float* k = a.k + t * a.ld_qk;
    const float* v = a.v + t * a.ld_v;
    float* out = a.out + t * a.ld_out;
    const float decay = std::exp(a.g[t * a.ld_gb]), beta = a.beta[t * a.ld_gb];
    for (int b = 0; b < a.d_v; ++b) {
      float* row = a.state + static_cast<int64_t>(b) * a.d_k;
      const float delta = beta * (v[b] - decay * g_dot(row, k, a.d_k));
      float acc[16] = {};
      int i = 0;
      for (; i + 16 <= a.d_k; i += 16) {
        for (int j = 0; j < 16; ++j) {
          row[i + j] = row[i + j] * decay + delta * k[i + j];
          acc[j] += row[i + j] * q[i + j];
        }
      }
      float o = 0.0f;
      for (int j = 0; j < 16; ++j) o += acc[j];
      for (; i < a.d_k; ++i) {
        row[i] = row[i] * decay + delta * k[i];
        o += row[i] * q[i];
      }
      out[b] = o;
    }
  }
}

void g_conv_silu(const ConvArgs& a) {
  const int hist = a.taps - 1;
  // Input row r of the window: r < 0 reaches into the state (its row hist + r), else x's row r.
  auto in_row = [&](int r) { return r < 0 ? a.state + (hist + r) * a.ld_state : a.x + r * a.ld_x; };
  for (int t = 0; t < a.n; ++t) {
    float* out = a.out + t * a.ld_out;
    for (int c = 0; c < a.channels; ++c) out[c] = 0.0f;
    for (int i = 0; i < a.taps; ++i) {
      const float* row = in_row(t - hist + i);
      for (int c = 0; c < a.channels; ++c) out[c] += a.w[static_cast<int64_t>(c) * a.taps + i] * row[c];
    }
    for (int c = 0; c < a.channels; ++c) out[c] = out[c] / (1.0f + std::exp(-out[c]));
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
