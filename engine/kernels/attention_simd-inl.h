// attend_causal (see KernelTable) on SIMD vectors, written once for AVX2, AVX-512 and NEON. Query rows
// (token x head of one GQA group) run across the vector lanes, up to 4 vectors of them per pass:
// scores, the online-softmax max/sum and the output accumulators are then plain lane-wise
// operations (no horizontal sums), and each K/V element, broadcast from the f32 copy of its block,
// feeds every row of the pass. A pass walks K/V in blocks of kAttentionKvBlock positions: scores
// -> new running max -> rescale of the sums so far -> p = exp(s - max) -> p . V. Only blocks that
// reach past the pass's first row's position need the causal mask. A sliding window (a.window > 0)
// starts the walk at the first row's first position and masks, per lane, the positions before its
// row's window in the blocks that hold some. A decode step's few rows take the other layout
// (attn_few_rows below): positions across the lanes.
//
// Include inside the per-ISA anonymous namespace after defining `struct AttnSimd`:
//   using V; W (lanes); kJT (K positions per score tile); kDT (head dims per p.V tile);
//   zero, set1, load, store, fmadd, mul, add, sub, max, exp (clamped, as exp256/exp512);
//   keep_le(x, j, limit, fill): x in lanes where j <= limit, else fill;
//   to_f32(src, n, dst): n halves -> floats;
//   hsum, hmax (x): the sum / maximum of x's lanes; reduce_lanes(p): lane i = hsum(p[i]), W vectors.
// No include guard on purpose.

constexpr int kAttnRows = 4 * AttnSimd::W;  // query rows per pass
constexpr int kAttnKb = static_cast<int>(kAttentionKvBlock);
static_assert(kAttnRows <= kAttentionMaxRows, "scratch is sized for kAttentionMaxRows rows");

// Rows [j0, j0 + nb) of a K or V cache block as f32 (rows, not positions: row 0 is AttentionArgs::kv_first): in place for F32 caches, else converted
// into buf [nb][hd], each 64-byte line's conversion prefetching the same line of the next block
// (up to n_pos) towards L2: the blocks are read in bursts between computations, and the hardware
// prefetcher alone left the conversion waiting on memory (Qwen3-0.6B decode at depth 2048, 2
// threads: 31.1 tok/s without, 34.3 with; into L1 30.6, non-temporal 22.3, two blocks ahead 33.0).
inline const float* kv_block(const void* cache, DType kv, int j0, int nb, int n_pos, int hd, float* buf) {
  if (kv != DType::kF16) return static_cast<const float*>(cache) + int64_t{j0} * hd;
  const uint16_t* src = static_cast<const uint16_t*>(cache) + int64_t{j0} * hd;
  const int n = nb * hd, ahead = (n_pos - j0 - nb) * hd;  // halves
  constexpr int kLine = 32;  // halves per 64-byte line
  for (int i = 0; i < n; i += kLine) {
    if (i < ahead) __builtin_prefetch(src + n + i, 0, 1);
    AttnSimd::to_f32(src + i, n - i < kLine ? n - i : kLine, buf + i);
  }
  return buf;
}

// p[jj][lanes] = qt[.][lanes] . kb[jj][.] for JT consecutive positions (qt already scaled).
template <int NV, int JT>
inline void attn_scores_tile(const float* qt, const float* kb, int hd, float* p) {
  using V = AttnSimd::V;
  V acc[JT][NV];
#pragma GCC unroll 4
  for (int jj = 0; jj < JT; ++jj) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[jj][v] = AttnSimd::zero();
  }
  for (int d = 0; d < hd; ++d) {
    V q[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) q[v] = AttnSimd::load(qt + d * kAttnRows + v * AttnSimd::W);
#pragma GCC unroll 4
    for (int jj = 0; jj < JT; ++jj) {
      const V b = AttnSimd::set1(kb[jj * hd + d]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[jj][v] = AttnSimd::fmadd(q[v], b, acc[jj][v]);
    }
  }
#pragma GCC unroll 4
  for (int jj = 0; jj < JT; ++jj) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) AttnSimd::store(p + jj * kAttnRows + v * AttnSimd::W, acc[jj][v]);
  }
}

// ot[dd][lanes] = ot[dd][lanes] * corr + sum_j p[j][lanes] * vb[j][dd] for DT head dims.
template <int NV, int DT>
inline void attn_pv_tile(const float* p, const float* vb, int hd, int nb, const float* corr, float* ot) {
  using V = AttnSimd::V;
  V acc[DT][NV];
#pragma GCC unroll 4
  for (int dd = 0; dd < DT; ++dd) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      acc[dd][v] = AttnSimd::mul(AttnSimd::load(ot + dd * kAttnRows + v * AttnSimd::W),
                                 AttnSimd::load(corr + v * AttnSimd::W));
    }
  }
  for (int j = 0; j < nb; ++j) {
    V pv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) pv[v] = AttnSimd::load(p + j * kAttnRows + v * AttnSimd::W);
#pragma GCC unroll 4
    for (int dd = 0; dd < DT; ++dd) {
      const V b = AttnSimd::set1(vb[j * hd + dd]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[dd][v] = AttnSimd::fmadd(pv[v], b, acc[dd][v]);
    }
  }
#pragma GCC unroll 4
  for (int dd = 0; dd < DT; ++dd) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) AttnSimd::store(ot + dd * kAttnRows + v * AttnSimd::W, acc[dd][v]);
  }
}

// One pass over rows [r0, r0 + n_rows) of the flattened (token, head) list, NV vectors of lanes.
template <int NV>
void attn_pass(const AttentionArgs& a, int r0, int n_rows, float* __restrict scratch) {
  using V = AttnSimd::V;
  constexpr int kLanes = NV * AttnSimd::W;
  const int hd = a.head_dim;
  float* qt = scratch;                  // [hd][kAttnRows] scaled queries, one row per lane
  float* ot = qt + hd * kAttnRows;      // [hd][kAttnRows] running sum of p * v
  float* m = ot + hd * kAttnRows;       // [kAttnRows] running max of the scores
  float* l = m + kAttnRows;             // [kAttnRows] running sum of p
  float* corr = l + kAttnRows;          // [kAttnRows] rescale factor of the current block
  float* rowpos = corr + kAttnRows;     // [kAttnRows] position of each row's token (exact as float)
  float* kf = rowpos + kAttnRows;       // [kAttnKb][hd] the K block as f32 (F16 caches)
  float* vf = kf + kAttnKb * hd;        // [kAttnKb][hd] the V block as f32
  float* p = vf + kAttnKb * hd;         // [kAttnKb][kAttnRows] scores, then probabilities

  alignas(64) float neg_first[kAttnRows];  // -(first position in the row's window)
  // Without a window every row sees position 0 in the first block, so max turns finite there; a
  // window may mask a row's whole first blocks, so its max starts finite (exp(m_old - m_new) stays 1
  // until a position counts, then ~0 against the sums of 0 so far).
  const float m_init = a.window > 0 ? -3.0e38f : -INFINITY;  // finite, below any score
  // Padding lanes repeat the last row: finite values, never written out.
  for (int i = 0; i < kLanes; ++i) {
    const int r = r0 + (i < n_rows ? i : n_rows - 1);
    const int t = r / a.group, h = r % a.group;
    const float* q = a.q + t * a.ld + static_cast<int64_t>(h) * hd;
    for (int d = 0; d < hd; ++d) qt[d * kAttnRows + i] = q[d] * a.scale;
    rowpos[i] = static_cast<float>(a.pos0 + t);
    neg_first[i] = -static_cast<float>(a.pos0 + t - a.window + 1);
    m[i] = m_init;
    l[i] = 0.0f;
  }
  for (int d = 0; d < hd; ++d) {
    for (int v = 0; v < NV; ++v) AttnSimd::store(ot + d * kAttnRows + v * AttnSimd::W, AttnSimd::zero());
  }
  const int pos_first = a.pos0 + r0 / a.group;
  const int n_pos = a.pos0 + (r0 + n_rows - 1) / a.group + 1;
  // Window: positions below start are outside every row's window; below low_end outside some.
  const int start = a.window > 0 && pos_first - a.window + 1 > 0 ? pos_first - a.window + 1 : 0;
  const int low_end = a.window > 0 ? n_pos - a.window : 0;

  for (int j0 = start; j0 < n_pos; j0 += kAttnKb) {
    const int nb = n_pos - j0 < kAttnKb ? n_pos - j0 : kAttnKb;
    const float* kb = kv_block(a.k, a.kv, j0 - a.kv_first, nb, n_pos - a.kv_first, hd, kf);
    const float* vb = kv_block(a.v, a.kv, j0 - a.kv_first, nb, n_pos - a.kv_first, hd, vf);
    int j = 0;
    for (; j + AttnSimd::kJT <= nb; j += AttnSimd::kJT) {
      attn_scores_tile<NV, AttnSimd::kJT>(qt, kb + j * hd, hd, p + j * kAttnRows);
    }
    for (; j < nb; ++j) attn_scores_tile<NV, 1>(qt, kb + j * hd, hd, p + j * kAttnRows);

    const bool masked = j0 + nb - 1 > pos_first;  // some row of the pass ends inside this block
    const bool low = j0 < low_end;                 // some row's window starts after j0
    for (int v = 0; v < NV; ++v) {
      const int lane0 = v * AttnSimd::W;
      const V limit = AttnSimd::load(rowpos + lane0);
      const V neg_lo = AttnSimd::load(neg_first + lane0);
      V bm = AttnSimd::set1(-INFINITY);
      for (int jj = 0; jj < nb; ++jj) {
        V s = AttnSimd::load(p + jj * kAttnRows + lane0);
        if (masked) s = AttnSimd::keep_le(s, AttnSimd::set1(static_cast<float>(j0 + jj)), limit, -INFINITY);
        if (low) s = AttnSimd::keep_le(s, AttnSimd::set1(-static_cast<float>(j0 + jj)), neg_lo, -INFINITY);
        bm = AttnSimd::max(bm, s);
      }
      const V m_old = AttnSimd::load(m + lane0);
      const V m_new = AttnSimd::max(m_old, bm);
      const V c = AttnSimd::exp(AttnSimd::sub(m_old, m_new));  // clamped exp: ~0 for -inf
      V sum = AttnSimd::zero();
      for (int jj = 0; jj < nb; ++jj) {
        V e = AttnSimd::exp(AttnSimd::sub(AttnSimd::load(p + jj * kAttnRows + lane0), m_new));
        if (masked) e = AttnSimd::keep_le(e, AttnSimd::set1(static_cast<float>(j0 + jj)), limit, 0.0f);
        if (low) e = AttnSimd::keep_le(e, AttnSimd::set1(-static_cast<float>(j0 + jj)), neg_lo, 0.0f);
        AttnSimd::store(p + jj * kAttnRows + lane0, e);
        sum = AttnSimd::add(sum, e);
      }
      AttnSimd::store(l + lane0, AttnSimd::fmadd(AttnSimd::load(l + lane0), c, sum));
      AttnSimd::store(m + lane0, m_new);
      AttnSimd::store(corr + lane0, c);
    }

    int d = 0;
    for (; d + AttnSimd::kDT <= hd; d += AttnSimd::kDT) {
      attn_pv_tile<NV, AttnSimd::kDT>(p, vb + d, hd, nb, corr, ot + d * kAttnRows);
    }
    for (; d < hd; ++d) attn_pv_tile<NV, 1>(p, vb + d, hd, nb, corr, ot + d * kAttnRows);
  }

  for (int i = 0; i < n_rows; ++i) {
    const int r = r0 + i;
    const int t = r / a.group, h = r % a.group;
    float* o = a.out + t * a.ld + static_cast<int64_t>(h) * hd;
    const float inv = 1.0f / l[i];
    for (int d = 0; d < hd; ++d) o[d] = ot[d * kAttnRows + i] * inv;
  }
}

// ---- Few rows (a decode step): positions across the lanes ----------------------------------------
// With at most W/2 rows (one token's GQA group: 7 heads of Qwen2.5-0.5B, 2 of Qwen3-0.6B) the row
// lanes above would sit mostly idle while every K/V element still costs a vector FMA. Here a row's
// scores take W positions per vector (head_dim-long dot products, W of them summed across lanes at
// once by reduce_lanes) and p.V adds p-weighted V rows into head_dim-wide accumulators, so the work
// grows with the rows instead of the vector width.
constexpr int kFewRowsMax = AttnSimd::W / 2;
static_assert(kAttnKb % AttnSimd::W == 0, "a K/V block holds whole vectors of positions");
static_assert(kFewRowsMax * 2 <= kAttentionMaxRows, "scratch is sized for kAttentionMaxRows rows");
alignas(64) constexpr float kLaneIndex[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static_assert(AttnSimd::W <= 16, "kLaneIndex covers the lanes");

// Lane jj = qs . kb[jj] for jj < cnt <= W (head_dim % W == 0); lanes from cnt on are -inf.
template <bool kFull>
inline AttnSimd::V few_scores(const float* qs, const float* kb, int hd, int cnt) {
  using V = AttnSimd::V;
  V part[AttnSimd::W];
#pragma GCC unroll 16
  for (int jj = 0; jj < AttnSimd::W; ++jj) part[jj] = AttnSimd::zero();
  for (int c = 0; c < hd; c += AttnSimd::W) {
    const V q = AttnSimd::load(qs + c);
#pragma GCC unroll 16
    for (int jj = 0; jj < AttnSimd::W; ++jj) {
      if (kFull || jj < cnt) part[jj] = AttnSimd::fmadd(q, AttnSimd::load(kb + jj * hd + c), part[jj]);
    }
  }
  const V s = AttnSimd::reduce_lanes(part);
  if constexpr (kFull) return s;
  return AttnSimd::keep_le(s, AttnSimd::load(kLaneIndex), AttnSimd::set1(static_cast<float>(cnt - 1)), -INFINITY);
}

// o[0, NC * W) = o * corr + sum_{jj < nb} p[jj] * vb[jj][0, NC * W) (vb rows hd apart).
template <int NC>
inline void few_pv(const float* p, const float* vb, int hd, int nb, float corr, float* o) {
  using V = AttnSimd::V;
  V acc[NC];
#pragma GCC unroll 4
  for (int i = 0; i < NC; ++i) acc[i] = AttnSimd::mul(AttnSimd::load(o + i * AttnSimd::W), AttnSimd::set1(corr));
  for (int jj = 0; jj < nb; ++jj) {
    const V b = AttnSimd::set1(p[jj]);
#pragma GCC unroll 4
    for (int i = 0; i < NC; ++i) acc[i] = AttnSimd::fmadd(b, AttnSimd::load(vb + jj * hd + i * AttnSimd::W), acc[i]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < NC; ++i) AttnSimd::store(o + i * AttnSimd::W, acc[i]);
}

void attn_few_rows(const AttentionArgs& a, int rows, float* __restrict scratch) {
  using V = AttnSimd::V;
  constexpr int W = AttnSimd::W;
  const int hd = a.head_dim;
  float* qs = scratch;                // [rows][hd] scaled queries
  float* ot = qs + kFewRowsMax * hd;  // [rows][hd] running sums of p * v
  float* kf = ot + kFewRowsMax * hd;  // [kAttnKb][hd] the K block as f32 (F16 caches)
  float* vf = kf + kAttnKb * hd;      // [kAttnKb][hd] the V block as f32
  float* p = vf + kAttnKb * hd;       // [kAttnKb] one row's scores, then probabilities
  float m[kFewRowsMax], l[kFewRowsMax];
  int last[kFewRowsMax];   // the last position each row attends to
  int first[kFewRowsMax] = {};  // the first (0 without a sliding window)
  for (int r = 0; r < rows; ++r) {
    const int t = r / a.group, h = r % a.group;
    const float* q = a.q + t * a.ld + static_cast<int64_t>(h) * hd;
    for (int d = 0; d < hd; ++d) {
      qs[r * hd + d] = q[d] * a.scale;
      ot[r * hd + d] = 0.0f;
    }
    m[r] = -INFINITY;  // position 0 is in every row's first block, so m turns finite there
    l[r] = 0.0f;
    last[r] = a.pos0 + t;
    first[r] = a.window > 0 && last[r] - a.window + 1 > 0 ? last[r] - a.window + 1 : 0;
  }
  const int n_pos = a.pos0 + a.n_q;
  for (int j0 = first[0]; j0 < n_pos; j0 += kAttnKb) {
    const int nb = n_pos - j0 < kAttnKb ? n_pos - j0 : kAttnKb;
    const float* kb = kv_block(a.k, a.kv, j0 - a.kv_first, nb, n_pos - a.kv_first, hd, kf);
    const float* vb = kv_block(a.v, a.kv, j0 - a.kv_first, nb, n_pos - a.kv_first, hd, vf);
    for (int r = 0; r < rows; ++r) {
      if (j0 > last[r]) continue;  // a later token's positions (n_q > 1)
      if (j0 + nb <= first[r]) continue;  // before the row's sliding window
      const int nv = last[r] - j0 + 1 < nb ? last[r] - j0 + 1 : nb;
      // The window's first position in this block: whole vectors before it are skipped, lanes of
      // the vector holding it masked (the block's first position counts unless the window starts later).
      const int s0 = first[r] > j0 ? first[r] - j0 : 0, g0 = s0 / W * W;
      V bm = AttnSimd::set1(-INFINITY);
      for (int g = g0; g < nv; g += W) {
        V s = nv - g >= W ? few_scores<true>(qs + r * hd, kb + g * hd, hd, W)
                          : few_scores<false>(qs + r * hd, kb + g * hd, hd, nv - g);
        if (g < s0) {
          s = AttnSimd::keep_le(s, AttnSimd::sub(AttnSimd::zero(), AttnSimd::load(kLaneIndex)),
                                AttnSimd::set1(static_cast<float>(g - s0)), -INFINITY);
        }
        AttnSimd::store(p + g, s);
        bm = AttnSimd::max(bm, s);
      }
      const float bmax = AttnSimd::hmax(bm), m_new = m[r] > bmax ? m[r] : bmax;
      const float corr = std::exp(m[r] - m_new);  // 0 on the first block
      V sum = AttnSimd::zero();
      for (int g = g0; g < nv; g += W) {
        V e = AttnSimd::exp(AttnSimd::sub(AttnSimd::load(p + g), AttnSimd::set1(m_new)));
        e = AttnSimd::keep_le(e, AttnSimd::load(kLaneIndex), AttnSimd::set1(static_cast<float>(nv - g - 1)), 0.0f);
        if (g < s0) {
          e = AttnSimd::keep_le(e, AttnSimd::sub(AttnSimd::zero(), AttnSimd::load(kLaneIndex)),
                                AttnSimd::set1(static_cast<float>(g - s0)), 0.0f);
        }
        AttnSimd::store(p + g, e);
        sum = AttnSimd::add(sum, e);
      }
      l[r] = l[r] * corr + AttnSimd::hsum(sum);
      m[r] = m_new;
      float* o = ot + r * hd;
      const float* pg = p + g0;
      const float* vg = vb + static_cast<int64_t>(g0) * hd;
      const int ng = nv - g0;
      int d = 0;
      for (; d + 4 * W <= hd; d += 4 * W) few_pv<4>(pg, vg + d, hd, ng, corr, o + d);
      switch ((hd - d) / W) {
        case 3: few_pv<3>(pg, vg + d, hd, ng, corr, o + d); break;
        case 2: few_pv<2>(pg, vg + d, hd, ng, corr, o + d); break;
        case 1: few_pv<1>(pg, vg + d, hd, ng, corr, o + d); break;
        default: break;
      }
    }
  }
  for (int r = 0; r < rows; ++r) {
    const int t = r / a.group, h = r % a.group;
    float* o = a.out + t * a.ld + static_cast<int64_t>(h) * hd;
    const float inv = 1.0f / l[r];
    for (int d = 0; d < hd; ++d) o[d] = ot[r * hd + d] * inv;
  }
}

void attend_causal(const AttentionArgs& a, float* __restrict scratch) {
  const int rows = a.n_q * a.group;
  if (rows <= kFewRowsMax && a.head_dim % AttnSimd::W == 0) {
    attn_few_rows(a, rows, scratch);
    return;
  }
  for (int r0 = 0; r0 < rows; r0 += kAttnRows) {
    const int n = rows - r0 < kAttnRows ? rows - r0 : kAttnRows;
    switch ((n + AttnSimd::W - 1) / AttnSimd::W) {
      case 1: attn_pass<1>(a, r0, n, scratch); break;
      case 2: attn_pass<2>(a, r0, n, scratch); break;
      case 3: attn_pass<3>(a, r0, n, scratch); break;
      default: attn_pass<4>(a, r0, n, scratch); break;
    }
  }
}
