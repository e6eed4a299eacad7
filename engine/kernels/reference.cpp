// Naive scalar reference kernels (the test oracle); see reference.h for contracts.
#include "engine/kernels/reference.h"

#include <cmath>
#include <vector>

#include "engine/kernels/fp16.h"

namespace anelm::engine::kernels::ref {

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
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int32_t sum = 0;
    for (int i = 0; i < kQBlock; ++i) {
      const int q = static_cast<int>(std::nearbyint(xb[i] * id));  // ties to even
      out[b].qs[i] = static_cast<int8_t>(q);
      sum += q;
    }
    out[b].d = half_to_float(float_to_half(d));  // f16-rounded scale, as llama.cpp's Q8_0 activations
    out[b].sum = sum;
  }
}

void dequantize_q8(const QBlock8* q, int64_t n, float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = q[i / kQBlock].d * q[i / kQBlock].qs[i % kQBlock];
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

}  // namespace anelm::engine::kernels::ref
