// The token-tiling driver of the matmul entries, shared by every SIMD ISA whose kernels provide
// per-row tiles of a few tokens. Included inside an ISA's namespace (once per translation unit).

// K's activations: the float rows, or the quantised blocks its tiles read.
template <class K>
const typename K::X* activations_of(const float* xf, const void* xq) {
  if constexpr (std::is_same_v<typename K::X, float>) {
    (void)xq;
    return xf;
  } else {
    (void)xf;
    return static_cast<const typename K::X*>(xq);
  }
}

// Rows [r0, r1) for every token: token blocks of B (their activations stay in L1 while the rows
// stream past), tiles of T tokens per pass over a row (one load and decode of each weight block serves
// T tokens), the tail in tiles of 4 (when T > 4), 3, 2, 1. K supplies kType, x_stride(cols) and
// tile<t>(row, cols, x, out) for those t.
template <class K, int T, int B>
void tiled_rows(const void* w, int64_t cols, const typename K::X* x, int n, float* __restrict y, int64_t ldy,
                int64_t r0, int64_t r1) {
  const int64_t xs = K::x_stride(cols);
  const int64_t rb = dtype_row_bytes(K::kType, cols);
  float out[T];
  for (int i0 = 0; i0 < n; i0 += B) {
    const int i1 = n < i0 + B ? n : i0 + B;
    for (int64_t r = r0; r < r1; ++r) {
      const void* row = static_cast<const uint8_t*>(w) + r * rb;
      int i = i0;
      for (; i + T <= i1; i += T) {
        K::template tile<T>(row, cols, x + i * xs, out);
        for (int t = 0; t < T; ++t) y[(i + t) * ldy + r] = out[t];
      }
      if constexpr (T > 4) {
        if (i1 - i >= 4) {
          K::template tile<4>(row, cols, x + i * xs, out);
          for (int t = 0; t < 4; ++t) y[(i + t) * ldy + r] = out[t];
          i += 4;
        }
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

// 4-token tiles over blocks of 8 tokens: the float-weight matmul entry of AVX2 and NEON (a prefill's
// float activations, 4 bytes per element, would not stay in L2 across row chunks).
template <class K>
void matmul_impl(const void* w, int64_t cols, const float* xf, const void* xq, int n, float* __restrict y,
                 int64_t ldy, int64_t r0, int64_t r1) {
  tiled_rows<K, 4, 8>(w, cols, activations_of<K>(xf, xq), n, y, ldy, r0, r1);
}

// Rows per prefill chunk (matmul_chunked's and AVX2's K-quant tiles'): ~48 KB of weights, at least one row.
inline int64_t rows_per_l2_chunk(int64_t row_bytes) {
  constexpr int64_t kChunkBytes = 48 * 1024;
  return row_bytes >= kChunkBytes ? 1 : kChunkBytes / row_bytes;
}

// run(T) with T = std::integral_constant<int, nt>, 1 <= nt <= 8: a pass of nt tokens as a
// compile-time count (nt above 8 runs as 8; callers never pass it).
template <class F>
inline void with_token_count(int nt, F&& run) {
  switch (nt) {
    case 1: run(std::integral_constant<int, 1>{}); break;
    case 2: run(std::integral_constant<int, 2>{}); break;
    case 3: run(std::integral_constant<int, 3>{}); break;
    case 4: run(std::integral_constant<int, 4>{}); break;
    case 5: run(std::integral_constant<int, 5>{}); break;
    case 6: run(std::integral_constant<int, 6>{}); break;
    case 7: run(std::integral_constant<int, 7>{}); break;
    default: run(std::integral_constant<int, 8>{}); break;
  }
}

// pass(t0, nt, a, e) over rows in chunks of `chunk` and tokens in tiles of kTile (the tail shorter):
// every tile passes over a chunk while its weights are cached, so a prefill streams them from memory
// once. The prefill drivers of the AVX2 and AVX-512 K-quant tiles and of AVX-512's Q8_0 pairs.
template <int kTile, class F>
inline void chunked_token_passes(int n, int64_t r0, int64_t r1, int64_t chunk, F&& pass) {
  for (int64_t a = r0; a < r1; a += chunk) {
    const int64_t e = a + chunk < r1 ? a + chunk : r1;
    for (int t = 0; t < n; t += kTile) pass(t, n - t < kTile ? n - t : kTile, a, e);
  }
}

// Blocks per slice of a row for a pass whose activations take tile_block_bytes per block (all its
// tokens): the whole row while they fit in ~24 KB of L1 beside the streaming weights, else the fewest
// even slices that do.
inline int64_t blocks_per_l1_slice(int64_t nb, int64_t tile_block_bytes) {
  constexpr int64_t kL1Bytes = 24 * 1024;
  const int64_t most = kL1Bytes / tile_block_bytes > 1 ? kL1Bytes / tile_block_bytes : 1;
  const int64_t slices = (nb + most - 1) / most;
  return (nb + slices - 1) / slices;
}

// y[t * ldy + r] = row r . token t (t < T) for rows [a, e), through tile(r, b0, b1, out), which sums
// blocks [b0, b1) of a row: slice by slice (blocks_per_l1_slice), every row passing over a slice of
// the tokens' activations while it is in L1. Wide rows need it: 8 tokens of Phi-4-mini's 8192-column
// down projection are 80 KB of Q4_K activations, which came from L2 for every row, and its 128-token
// tiles ran at half the speed of the 3072-column ones (Zen 5, 2026-12-02).
template <int T, class Tile>
inline void sliced_rows(int64_t nb, int64_t slice, float* __restrict y, int64_t ldy, int64_t a, int64_t e,
                        Tile&& tile) {
  float out[T];
  for (int64_t b0 = 0; b0 < nb; b0 += slice) {
    const int64_t b1 = b0 + slice < nb ? b0 + slice : nb;
    for (int64_t r = a; r < e; ++r) {
      tile(r, b0, b1, out);
      for (int t = 0; t < T; ++t) y[t * ldy + r] = (b0 == 0 ? 0.0f : y[t * ldy + r]) + out[t];
    }
  }
}

// The same tiles over quantised activations (about a byte per element: a 128-token prefill's fit
// in L2) for more than one token block: rows in chunks of ~48 KB of weights, every token block
// passing over a chunk while it is in L2, so a prefill streams the weights from memory once, not
// once per 8 tokens (up to 8 tokens the order is tiled_rows' own). NEON's quantised types without a
// panel run it.
template <class K>
void matmul_chunked(const void* w, int64_t cols, const float* xf, const void* xq, int n, float* __restrict y,
                    int64_t ldy, int64_t r0, int64_t r1) {
  const auto* x = activations_of<K>(xf, xq);
  const int64_t chunk = rows_per_l2_chunk(dtype_row_bytes(K::kType, cols));
  for (int64_t a = r0; a < r1; a += chunk) tiled_rows<K, 4, 8>(w, cols, x, n, y, ldy, a, a + chunk < r1 ? a + chunk : r1);
}
