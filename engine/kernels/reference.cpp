// Naive scalar reference kernels (the test oracle); see reference.h for contracts.
#include "engine/kernels/reference.h"

#include <cmath>
#include <vector>

#include "engine/kernels/fp16.h"

namespace anelm::engine::kernels::ref {

namespace {

// Element j (0..31) of a 32-element block whose nibbles are laid out as Q4_0.
int nibble32(const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4); }

// Fifth bit of element j of a Q5_0 / Q5_1 block.
int bit5(const uint8_t* qh, int j) { return (qh[j / 8] >> (j % 8)) & 1; }

// Element c (0..255) of one super-block, decoded straight from the layout comments in dtype.h.
float superblock_at(const uint8_t* blk, DType t, int c) {
  const int h = c / 128, s = (c % 128) / 32, l = c % 32;  // Q2_K / Q3_K / Q6_K coordinates
  const int j = c / 64, hi = (c % 64) >= 32, l32 = c % 32;  // Q4_K / Q5_K coordinates
  switch (t) {
    case DType::kQ2_K: {
      const auto* b = reinterpret_cast<const BlockQ2_K*>(blk);
      const int sc = b->scales[8 * h + 2 * s + l / 16];
      const int q = (b->qs[32 * h + l] >> (2 * s)) & 3;
      return half_to_float(b->d) * (sc & 0x0F) * q - half_to_float(b->dmin) * (sc >> 4);
    }
    case DType::kQ3_K: {
      const auto* b = reinterpret_cast<const BlockQ3_K*>(blk);
      const int q = (b->qs[32 * h + l] >> (2 * s)) & 3;
      const int high = (b->hmask[l] >> (4 * h + s)) & 1;
      return half_to_float(b->d) * k3_scale(b->scales, 8 * h + 2 * s + l / 16) * (q - (high ? 0 : 4));
    }
    case DType::kQ4_K:
    case DType::kQ5_K: {
      const bool five = t == DType::kQ5_K;
      const auto* b4 = reinterpret_cast<const BlockQ4_K*>(blk);
      const auto* b5 = reinterpret_cast<const BlockQ5_K*>(blk);
      const uint8_t* qs = five ? b5->qs : b4->qs;
      int sc = 0, mn = 0;
      k4_scale_min(five ? b5->scales : b4->scales, 2 * j + hi, sc, mn);
      int q = hi ? (qs[32 * j + l32] >> 4) : (qs[32 * j + l32] & 0x0F);
      if (five) q |= ((b5->qh[l32] >> (2 * j + hi)) & 1) << 4;
      return half_to_float(b4->d) * sc * q - half_to_float(b4->dmin) * mn;
    }
    case DType::kQ6_K: {
      const auto* b = reinterpret_cast<const BlockQ6_K*>(blk);
      const uint8_t lb = b->ql[64 * h + l + 32 * (s & 1)];
      const int low = s < 2 ? (lb & 0x0F) : (lb >> 4);
      const int high = (b->qh[32 * h + l] >> (2 * s)) & 3;
      return half_to_float(b->d) * b->scales[8 * h + 2 * s + l / 16] * ((low | (high << 4)) - 32);
    }
    case DType::kIQ4_XS: {
      const auto* b = reinterpret_cast<const BlockIQ4_XS*>(blk);
      const int ib = c / 32;
      const int ls = ((b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((b->scales_h >> (2 * ib)) & 3) << 4);
      return half_to_float(b->d) * (ls - 32) * kIq4nlValues[nibble32(b->qs + 16 * ib, c % 32)];
    }
    default: return 0.0f;
  }
}

}  // namespace

float weight_at(const void* w, DType t, int64_t cols, int64_t r, int64_t c) {
  const auto* base = static_cast<const uint8_t*>(w) + r * dtype_row_bytes(t, cols);
  switch (t) {
    case DType::kF32: return reinterpret_cast<const float*>(base)[c];
    case DType::kF16: return half_to_float(reinterpret_cast<const uint16_t*>(base)[c]);
    case DType::kBF16: return bf16_to_float(reinterpret_cast<const uint16_t*>(base)[c]);
    case DType::kQ8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(base) + c / kQBlock;
      return half_to_float(b->d) * static_cast<float>(b->qs[c % kQBlock]);
    }
    case DType::kQ4_0: {
      const auto* b = reinterpret_cast<const BlockQ4_0*>(base) + c / kQBlock;
      const int j = static_cast<int>(c % kQBlock);
      const int q = j < 16 ? (b->qs[j] & 0x0F) : (b->qs[j - 16] >> 4);
      return half_to_float(b->d) * static_cast<float>(q - 8);
    }
    case DType::kQ4_1: {
      const auto* b = reinterpret_cast<const BlockQ4_1*>(base) + c / kQBlock;
      return half_to_float(b->d) * nibble32(b->qs, c % kQBlock) + half_to_float(b->m);
    }
    case DType::kQ5_0: {
      const auto* b = reinterpret_cast<const BlockQ5_0*>(base) + c / kQBlock;
      const int j = static_cast<int>(c % kQBlock);
      return half_to_float(b->d) * ((nibble32(b->qs, j) | (bit5(b->qh, j) << 4)) - 16);
    }
    case DType::kQ5_1: {
      const auto* b = reinterpret_cast<const BlockQ5_1*>(base) + c / kQBlock;
      const int j = static_cast<int>(c % kQBlock);
      return half_to_float(b->d) * (nibble32(b->qs, j) | (bit5(b->qh, j) << 4)) + half_to_float(b->m);
    }
    case DType::kIQ4_NL: {
      const auto* b = reinterpret_cast<const BlockIQ4_NL*>(base) + c / kQBlock;
      return half_to_float(b->d) * kIq4nlValues[nibble32(b->qs, c % kQBlock)];
    }
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS:
      return superblock_at(base + c / kQKBlock * dtype_block_bytes(t), t, static_cast<int>(c % kQKBlock));
  }
  return 0.0f;
}

void dequantize_row(const void* w, DType t, int64_t row, int64_t cols, float* __restrict out) {
  for (int64_t c = 0; c < cols; ++c) out[c] = weight_at(w, t, cols, row, c);
}

void matmul(const void* w, DType t, int64_t rows, int64_t cols, const float* x, int n,
            float* __restrict y) {
  for (int i = 0; i < n; ++i) {
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        acc += static_cast<double>(weight_at(w, t, cols, r, c)) * x[i * cols + c];
      }
      y[i * rows + r] = static_cast<float>(acc);
    }
  }
}

void quantize_q8(const float* x, int64_t n, QBlock8* __restrict out) {
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    float amax = 0.0f;
    for (int i = 0; i < kQBlock; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float id = amax >= kQ8MinAmax ? 1.0f / d : 0.0f;
    int32_t sum = 0;
    for (int i = 0; i < kQBlock; ++i) {
      const int q = static_cast<int>(std::nearbyint(xb[i] * id));  // ties to even
      out[b].qs[i] = static_cast<int8_t>(q);
      sum += q;
    }
    out[b].d = round_to_half(d);  // f16-rounded scale, as llama.cpp's Q8_0 activations
    out[b].sum = sum;
  }
}

void dequantize_q8(const QBlock8* q, int64_t n, float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = q[i / kQBlock].d * q[i / kQBlock].qs[i % kQBlock];
}

void quantize_q8k(const float* x, int64_t n, QBlockK* __restrict out) {
  for (int64_t b = 0; b < n / kQKBlock; ++b) {
    const float* xb = x + b * kQKBlock;
    float amax = 0.0f, max = 0.0f;  // max keeps the sign of the first largest-magnitude value
    for (int i = 0; i < kQKBlock; ++i) {
      if (std::fabs(xb[i]) > amax) {
        amax = std::fabs(xb[i]);
        max = xb[i];
      }
    }
    QBlockK& o = out[b];
    if (amax == 0.0f) {
      o = QBlockK{};
      continue;
    }
    const float iscale = -127.0f / max;
    for (int i = 0; i < kQKBlock; ++i) {
      const int q = static_cast<int>(std::nearbyint(iscale * xb[i]));  // ties to even
      o.qs[i] = static_cast<int8_t>(q < 127 ? q : 127);
    }
    for (int g = 0; g < kQKBlock / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += o.qs[16 * g + i];
      o.bsums[g] = static_cast<int16_t>(sum);
    }
    o.d = 1.0f / iscale;
  }
}

void dequantize_q8k(const QBlockK* q, int64_t n, float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = q[i / kQKBlock].d * q[i / kQKBlock].qs[i % kQKBlock];
}

void rmsnorm(const float* x, const float* w, float eps, int n, float* out) {
  double ss = 0.0;
  for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / n + eps));
  for (int i = 0; i < n; ++i) out[i] = x[i] * scale * w[i];
}

void rope(float* x, int n_heads, int head_dim, int rope_dim, int pos, float theta, RopeLayout layout,
          const float* freq_factors) {
  const int half = rope_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* xh = x + h * head_dim;
    for (int i = 0; i < half; ++i) {
      double freq = std::pow(static_cast<double>(theta), -2.0 * i / rope_dim);
      if (freq_factors) freq /= freq_factors[i];
      const double angle = pos * freq;
      const float c = static_cast<float>(std::cos(angle));
      const float s = static_cast<float>(std::sin(angle));
      const int i0 = layout == RopeLayout::kHalf ? i : 2 * i;
      const int i1 = layout == RopeLayout::kHalf ? i + half : 2 * i + 1;
      const float a = xh[i0], b = xh[i1];
      xh[i0] = a * c - b * s;
      xh[i1] = a * s + b * c;
    }
  }
}

void softmax(float* x, int n) {
  float mx = x[0];
  for (int i = 1; i < n; ++i) mx = std::fmax(mx, x[i]);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] / sum);
}

float log_sum_exp(const float* x, int n) {
  float mx = x[0];
  for (int i = 1; i < n; ++i) mx = std::fmax(mx, x[i]);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - mx);
  return static_cast<float>(mx + std::log(sum));
}

void gelu_mul(const float* gate, const float* up, int n, float* out) {
  for (int i = 0; i < n; ++i) {
    const double g = gate[i];
    const double u = std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g);
    out[i] = static_cast<float>(0.5 * g * (1.0 + std::tanh(u)) * up[i]);
  }
}

void gelu(const float* x, int n, float* out) {
  for (int i = 0; i < n; ++i) {
    const double g = x[i];
    const double u = std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g);
    out[i] = static_cast<float>(0.5 * g * (1.0 + std::tanh(u)));
  }
}

void layer_norm(const float* x, const float* w, const float* b, float eps, int n, float* out) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / n;
  double var = 0.0;
  for (int i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  const double scale = 1.0 / std::sqrt(var / n + eps);
  for (int i = 0; i < n; ++i) out[i] = static_cast<float>((x[i] - mean) * scale * w[i] + b[i]);
}

void silu_mul(const float* gate, const float* up, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add(const float* a, const float* b, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void attention(const float* q, const float* k, const float* v, int n_pos, int n_heads,
               int n_kv_heads, int head_dim, float* __restrict out) {
  const int group = n_heads / n_kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  std::vector<float> scores(n_pos);
  for (int h = 0; h < n_heads; ++h) {
    const int kvh = h / group;
    for (int p = 0; p < n_pos; ++p) {
      double dot = 0.0;
      for (int d = 0; d < head_dim; ++d) {
        dot += static_cast<double>(q[h * head_dim + d]) * k[(p * n_kv_heads + kvh) * head_dim + d];
      }
      scores[p] = static_cast<float>(dot * scale);
    }
    softmax(scores.data(), n_pos);
    for (int d = 0; d < head_dim; ++d) {
      double acc = 0.0;
      for (int p = 0; p < n_pos; ++p) acc += static_cast<double>(scores[p]) * v[(p * n_kv_heads + kvh) * head_dim + d];
      out[h * head_dim + d] = static_cast<float>(acc);
    }
  }
}

void attend_head(const float* q, const void* k, const void* v, DType kv, int n_pos, int head_dim,
                 float scale, float* __restrict scores, float* __restrict out) {
  auto at = [&](const void* base, int64_t i) {
    return kv == DType::kF16 ? half_to_float(static_cast<const uint16_t*>(base)[i])
                             : static_cast<const float*>(base)[i];
  };
  for (int p = 0; p < n_pos; ++p) {
    double dot = 0.0;
    for (int d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * at(k, int64_t{p} * head_dim + d);
    scores[p] = static_cast<float>(dot * scale);
  }
  softmax(scores, n_pos);
  for (int d = 0; d < head_dim; ++d) {
    double acc = 0.0;
    for (int p = 0; p < n_pos; ++p) acc += static_cast<double>(scores[p]) * at(v, int64_t{p} * head_dim + d);
    out[d] = static_cast<float>(acc);
  }
}

void attend_causal(const AttentionArgs& a) {
  std::vector<float> scores(static_cast<size_t>(a.pos0 + a.n_q));
  const int64_t row_bytes = static_cast<int64_t>(a.head_dim) * (a.kv == DType::kF16 ? 2 : 4);
  for (int t = 0; t < a.n_q; ++t) {
    const int p = a.pos0 + t;
    const int first = a.window > 0 && p - a.window + 1 > 0 ? p - a.window + 1 : 0;  // keys (p - window, p]
    const auto* k = static_cast<const uint8_t*>(a.k) + (first - a.kv_first) * row_bytes;
    const auto* v = static_cast<const uint8_t*>(a.v) + (first - a.kv_first) * row_bytes;
    for (int h = 0; h < a.group; ++h) {
      const int64_t off = t * a.ld + static_cast<int64_t>(h) * a.head_dim;
      attend_head(a.q + off, k, v, a.kv, p - first + 1, a.head_dim, a.scale, scores.data(), a.out + off);
    }
  }
}

void delta_rule(const DeltaRuleArgs& a) {
  const int dk = a.d_k, dv = a.d_v;
  auto S = [&](int key, int val) -> float& { return a.state[static_cast<int64_t>(val) * dk + key]; };
  std::vector<double> u(static_cast<size_t>(dv));
  for (int t = 0; t < a.n; ++t) {
    const float* q = a.q + t * a.ld_qk;
    const float* k = a.k + t * a.ld_qk;
    const float* v = a.v + t * a.ld_v;
    const float decay = std::exp(a.g[t * a.ld_gb]), beta = a.beta[t * a.ld_gb];
    for (int i = 0; i < dk; ++i) {
      for (int b = 0; b < dv; ++b) S(i, b) *= decay;
    }
    for (int b = 0; b < dv; ++b) {  // u = S^T k
      double acc = 0;
      for (int i = 0; i < dk; ++i) acc += static_cast<double>(S(i, b)) * k[i];
      u[static_cast<size_t>(b)] = acc;
    }
    for (int b = 0; b < dv; ++b) {  // S += k (beta (v - u))^T
      const double delta = beta * (v[b] - u[static_cast<size_t>(b)]);
      for (int i = 0; i < dk; ++i) S(i, b) = static_cast<float>(S(i, b) + k[i] * delta);
    }
    for (int b = 0; b < dv; ++b) {  // out = S^T q
      double acc = 0;
      for (int i = 0; i < dk; ++i) acc += static_cast<double>(S(i, b)) * q[i];
      a.out[t * a.ld_out + b] = static_cast<float>(acc);
    }
  }
}

void conv_silu(const ConvArgs& a) {
  const int hist = a.taps - 1;
  // The whole input sequence: the state's rows, then x's.
  std::vector<float> seq(static_cast<size_t>(hist + a.n) * a.channels);
  for (int r = 0; r < hist; ++r) {
    for (int c = 0; c < a.channels; ++c) seq[static_cast<size_t>(r) * a.channels + c] = a.state[r * a.ld_state + c];
  }
  for (int t = 0; t < a.n; ++t) {
    for (int c = 0; c < a.channels; ++c) seq[static_cast<size_t>(hist + t) * a.channels + c] = a.x[t * a.ld_x + c];
  }
  for (int t = 0; t < a.n; ++t) {
    for (int c = 0; c < a.channels; ++c) {
      double acc = 0;
      for (int i = 0; i < a.taps; ++i) {
        acc += static_cast<double>(a.w[static_cast<int64_t>(c) * a.taps + i]) * seq[static_cast<size_t>(t + i) * a.channels + c];
      }
      a.out[t * a.ld_out + c] = static_cast<float>(acc / (1.0 + std::exp(-acc)));
    }
  }
  for (int r = 0; r < hist; ++r) {
    for (int c = 0; c < a.channels; ++c) a.state[r * a.ld_state + c] = seq[static_cast<size_t>(a.n + r) * a.channels + c];
  }
}

}  // namespace anelm::engine::kernels::ref
