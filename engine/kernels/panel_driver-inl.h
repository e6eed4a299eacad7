// The ISA-independent half of the Q8_0/Q4_0 panel design (panel_avx2-inl.h, panel_neon-inl.h): which
// rows form a group, the token tiles, and the matmul entry that sends few tokens through group_tile and
// many through packed panels. Included by each ISA's panel file after it defines kPanelRows,
// kPanelMinTokens, kPanelBlockBytes<P>, kPanelChunkBytes, panel_pack, panel_tile and group_tile.
// No include guard on purpose.

// The kPanelRows rows of group g of [r0, r1) (a last partial group repeats its last row).
template <class P>
inline void group_rows(const void* w, int64_t rb, int64_t r0, int64_t r1, int64_t g, const typename P::Block** rows) {
  for (int i = 0; i < kPanelRows; ++i) {
    const int64_t r = std::min(r0 + g * kPanelRows + i, r1 - 1);
    rows[i] = reinterpret_cast<const typename P::Block*>(static_cast<const uint8_t*>(w) + r * rb);
  }
}

// run(i, T) over tokens [0, n) in tiles of T = 4 tokens (the tail 3, 2 or 1), T a compile-time constant.
template <class F>
inline void token_tiles(int n, F&& run) {
  for (int i = 0; i < n;) {
    switch (std::min(4, n - i)) {
      case 4: run(i, std::integral_constant<int, 4>{}); i += 4; break;
      case 3: run(i, std::integral_constant<int, 3>{}); i += 3; break;
      case 2: run(i, std::integral_constant<int, 2>{}); i += 2; break;
      default: run(i, std::integral_constant<int, 1>{}); i += 1; break;
    }
  }
}

// A matmul entry. Every row of [r0, r1) is summed per block in one int32 dot, converted and FMA'd in
// block order, the same in each path: with enough tokens through the panels, else group_tile. A row's
// lane computes the same sums in the same order in any group and any batch, so results depend neither
// on how threads split the rows nor on the other tokens of the pass.
template <class P>
void panel_matmul(const void* w, int64_t cols, const float* xf, const void* xq, int n, float* __restrict y,
                  int64_t ldy, int64_t r0, int64_t r1) {
  (void)xf;
  if (r0 >= r1) return;
  const int64_t nb = cols / kQBlock, rb = dtype_row_bytes(P::kType, cols);
  const auto* x = static_cast<const QBlock8*>(xq);
  if (n < kPanelMinTokens) {
    const typename P::Block* rows[kPanelRows];
    for (int64_t g = 0; g * kPanelRows < r1 - r0; ++g) {
      group_rows<P>(w, rb, r0, r1, g, rows);
      const int64_t rg = r0 + g * kPanelRows;
      const int nr = static_cast<int>(std::min<int64_t>(kPanelRows, r1 - rg));
      // The next group's rows (contiguous) prefetched across this group's blocks: the rows read side
      // by side are that many streams, which the hardware prefetcher follows worse than one.
      const int64_t next_rows = std::max<int64_t>(0, std::min<int64_t>(kPanelRows, r1 - rg - kPanelRows));
      const char* next = next_rows > 0 ? static_cast<const char*>(w) + (rg + kPanelRows) * rb : nullptr;
      token_tiles(n, [&](int i, auto tile) {
        group_tile<P, decltype(tile)::value>(rows, nb, x + i * nb, nb, y + i * ldy + rg, ldy, nr, next,
                                             i == 0 ? next_rows * rb : 0);
      });
    }
    return;
  }
  const int64_t groups = (r1 - r0 + kPanelRows - 1) / kPanelRows;
  const int64_t group_bytes = nb * kPanelBlockBytes<P>;
  const int64_t chunk = std::min(groups, std::max<int64_t>(1, kPanelChunkBytes / group_bytes));
  // One buffer per thread, grown to the largest chunk once (the worker threads live as long as the engine).
  thread_local std::vector<uint8_t> panel;
  if (panel.size() < static_cast<size_t>(chunk * group_bytes)) panel.resize(static_cast<size_t>(chunk * group_bytes));
  for (int64_t g0 = 0; g0 < groups; g0 += chunk) {
    const int64_t g1 = std::min(groups, g0 + chunk);
    for (int64_t g = g0; g < g1; ++g) {
      const typename P::Block* rows[kPanelRows];
      group_rows<P>(w, rb, r0, r1, g, rows);
      panel_pack<P>(rows, nb, panel.data() + (g - g0) * group_bytes);
    }
    token_tiles(n, [&](int i, auto tile) {
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t rg = r0 + g * kPanelRows;
        const int nr = static_cast<int>(std::min<int64_t>(kPanelRows, r1 - rg));
        panel_tile<P, decltype(tile)::value>(panel.data() + (g - g0) * group_bytes, nb, x + i * nb, nb, y + i * ldy + rg, ldy, nr);
      }
    });
  }
}
