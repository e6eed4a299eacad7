// The token-tiling driver of a matmul entry, shared by the ISAs whose kernels provide per-row tiles
// of 1-4 tokens (AVX2, NEON). Included inside an ISA's namespace; K supplies X (activation type),
// kType, x_stride(cols) and tile<T>(row, cols, x, out) for T = 1..4.
// No include guard: each ISA's translation unit includes it once, in its own namespace.

constexpr int kTokenBlock = 8;  // tokens whose activations stay in L1 while a row range streams past
constexpr int kTile = 4;        // tokens sharing one load (and decode) of each weight row's blocks

// Rows [r0, r1) for every token, kTile tokens per pass over a row, kTokenBlock tokens per row sweep
// (decode is n = 1: one pass per row).
template <class K>
void matmul_impl(const void* w, int64_t cols, const float* xf, const void* xq, int n,
                 float* __restrict y, int64_t ldy, int64_t r0, int64_t r1) {
  const typename K::X* x;
  if constexpr (std::is_same_v<typename K::X, float>) {
    x = xf;
    (void)xq;
  } else {
    x = static_cast<const typename K::X*>(xq);
    (void)xf;
  }
  const int64_t xs = K::x_stride(cols);
  const int64_t rb = dtype_row_bytes(K::kType, cols);
  float out[kTile];
  for (int i0 = 0; i0 < n; i0 += kTokenBlock) {
    const int i1 = n < i0 + kTokenBlock ? n : i0 + kTokenBlock;
    for (int64_t r = r0; r < r1; ++r) {
      const void* row = static_cast<const uint8_t*>(w) + r * rb;
      int i = i0;
      for (; i + kTile <= i1; i += kTile) {
        K::template tile<kTile>(row, cols, x + i * xs, out);
        for (int t = 0; t < kTile; ++t) y[(i + t) * ldy + r] = out[t];
      }
      switch (i1 - i) {
        case 3: K::template tile<3>(row, cols, x + i * xs, out); break;
        case 2: K::template tile<2>(row, cols, x + i * xs, out); break;
        case 1: K::template tile<1>(row, cols, x + i * xs, out); break;
        default: break;
      }
      for (int t = 0; t < i1 - i; ++t) y[(i + t) * ldy + r] = out[t];
    }
  }
}
