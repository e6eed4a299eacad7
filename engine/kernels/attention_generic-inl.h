// Portable attend_causal (see KernelTable): one query row (token x head) at a time, an online
// softmax over blocks of kAttentionKvBlock positions, so no score row of n_pos floats is needed.
// Included by kernels_generic-inl.h (inside the per-ISA anonymous namespace, after g_kv_at). No
// include guard on purpose.

void g_attend_causal(const AttentionArgs& a, float* __restrict scratch) {
  const int hd = a.head_dim;
  float* acc = scratch;      // [hd] running sum of p * v
  float* s = scratch + hd;   // [kAttentionKvBlock] scores of one block
  for (int t = 0; t < a.n_q; ++t) {
    const int n_pos = a.pos0 + t + 1;
    const int first = a.window > 0 && n_pos > a.window ? n_pos - a.window : 0;  // sliding window
    for (int h = 0; h < a.group; ++h) {
      const float* q = a.q + t * a.ld + static_cast<int64_t>(h) * hd;
      float m = -INFINITY, l = 0.0f;
      for (int d = 0; d < hd; ++d) acc[d] = 0.0f;
      for (int j0 = first; j0 < n_pos; j0 += static_cast<int>(kAttentionKvBlock)) {
        const int nb = n_pos - j0 < kAttentionKvBlock ? n_pos - j0 : static_cast<int>(kAttentionKvBlock);
        float bm = -INFINITY;
        for (int j = 0; j < nb; ++j) {
          float dot = 0.0f;
          for (int d = 0; d < hd; ++d) dot += q[d] * g_kv_at(a.k, a.kv, int64_t{j0 + j - a.kv_first} * hd + d);
          s[j] = dot * a.scale;
          bm = s[j] > bm ? s[j] : bm;
        }
        // New maximum: rescale what was summed so far (exp(-inf) = 0 on the first block).
        const float m_new = bm > m ? bm : m;
        const float corr = std::exp(m - m_new);
        l *= corr;
        for (int d = 0; d < hd; ++d) acc[d] *= corr;
        for (int j = 0; j < nb; ++j) {
          const float p = std::exp(s[j] - m_new);
          l += p;
          for (int d = 0; d < hd; ++d) acc[d] += p * g_kv_at(a.v, a.kv, int64_t{j0 + j - a.kv_first} * hd + d);
        }
        m = m_new;
      }
      float* o = a.out + t * a.ld + static_cast<int64_t>(h) * hd;
      const float inv = 1.0f / l;
      for (int d = 0; d < hd; ++d) o[d] = acc[d] * inv;
    }
  }
}
