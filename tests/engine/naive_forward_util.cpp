// The naive forward (see naive_forward_util.h): one token, straight-line, reference kernels only.
#include "tests/engine/naive_forward_util.h"

#include "engine/kernels/fp16.h"
#include "engine/kernels/dtype.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/reference.h"

namespace anelm::engine::testing {

namespace ref = kernels::ref;

NaiveState::NaiveState(const ModelConfig& cfg, int ctx_, bool kv_f16_)
    : ctx(ctx_), kv_f16(kv_f16_),
      k_cache(static_cast<size_t>(cfg.n_layers) * ctx_ * cfg.kv_dim()),
      v_cache(static_cast<size_t>(cfg.n_layers) * ctx_ * cfg.kv_dim()) {}

namespace {
// y = W . x. Block-quantised weights see x rounded through Q8 (as the engine and llama.cpp do).
std::vector<float> linear(const TensorView& w, const std::vector<float>& x) {
  std::vector<float> y(static_cast<size_t>(w.rows()));
  std::vector<float> xin = x;
  if (uses_q8_activations(w.dtype)) {
    std::vector<QBlock8> q(x.size() / kQBlock);
    ref::quantize_q8(x.data(), static_cast<int64_t>(x.size()), q.data());
    ref::dequantize_q8(q.data(), static_cast<int64_t>(x.size()), xin.data());
  }
  ref::matmul(w.data, w.dtype, w.rows(), w.cols(), xin.data(), 1, y.data());
  return y;
}
const float* f32(const TensorView& t) { return static_cast<const float*>(t.data); }
}  // namespace

std::vector<float> naive_forward(const ModelConfig& c, const ModelWeights& w, NaiveState& s, int token,
                                 int pos) {
  const int d = c.d_model, kv_dim = c.kv_dim(), hd = c.head_dim;
  std::vector<float> x(d), xb(d);
  ref::dequantize_row(w.tok_embd.data, w.tok_embd.dtype, token, d, x.data());
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[l];
    // attention
    ref::rmsnorm(x.data(), f32(L.attn_norm), c.rms_eps, d, xb.data());
    auto q = linear(L.wq, xb), k = linear(L.wk, xb), v = linear(L.wv, xb);
    if (c.qkv_bias) {
      ref::add(q.data(), f32(L.bq), c.q_dim(), q.data());
      ref::add(k.data(), f32(L.bk), kv_dim, k.data());
      ref::add(v.data(), f32(L.bv), kv_dim, v.data());
    }
    ref::rope(q.data(), c.n_heads, hd, c.rope_dim, pos, c.rope_theta, c.rope_layout, c.rope_factors());
    ref::rope(k.data(), c.n_kv_heads, hd, c.rope_dim, pos, c.rope_theta, c.rope_layout, c.rope_factors());
    float* kc = s.k_cache.data() + (static_cast<size_t>(l) * s.ctx) * kv_dim;
    float* vc = s.v_cache.data() + (static_cast<size_t>(l) * s.ctx) * kv_dim;
    for (int i = 0; i < kv_dim; ++i) {
      kc[pos * kv_dim + i] = s.kv_f16 ? kernels::half_to_float(kernels::float_to_half(k[i])) : k[i];
      vc[pos * kv_dim + i] = s.kv_f16 ? kernels::half_to_float(kernels::float_to_half(v[i])) : v[i];
    }
    std::vector<float> att(c.q_dim());
    ref::attention(q.data(), kc, vc, pos + 1, c.n_heads, c.n_kv_heads, hd, att.data());
    auto o = linear(L.wo, att);
    ref::add(x.data(), o.data(), d, x.data());
    // feed-forward
    ref::rmsnorm(x.data(), f32(L.ffn_norm), c.rms_eps, d, xb.data());
    auto g = linear(L.w_gate, xb), u = linear(L.w_up, xb);
    ref::silu_mul(g.data(), u.data(), c.d_ff, g.data());
    auto down = linear(L.w_down, g);
    ref::add(x.data(), down.data(), d, x.data());
  }
  ref::rmsnorm(x.data(), f32(w.out_norm), c.rms_eps, d, x.data());
  return linear(w.lm_head, x);
}

}  // namespace anelm::engine::testing

#include <random>

namespace anelm::engine::testing {

namespace {

TensorView make_tensor(SyntheticModel& m, const std::string& name, DType t, int64_t rows, int64_t cols,
                       std::mt19937& gen, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> f(static_cast<size_t>(rows * cols));
  for (auto& x : f) x = dist(gen);
  const int64_t rb = dtype_row_bytes(t, cols);
  auto buf = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(rows * rb));
  for (int64_t r = 0; r < rows; ++r) kernels::row_from_f32(f.data() + r * cols, t, buf->data() + r * rb, cols);
  m.storage.push_back(buf);
  TensorView v;
  v.name = name;
  v.dtype = t;
  v.ndim = rows == 1 ? 1 : 2;
  v.shape = rows == 1 ? std::array<int64_t, 4>{cols, 0, 0, 0} : std::array<int64_t, 4>{rows, cols, 0, 0};
  v.data = buf->data();
  v.nbytes = static_cast<int64_t>(buf->size());
  return v;
}

}  // namespace

std::unique_ptr<SyntheticModel> make_synthetic_model(DType wtype, uint32_t seed, bool qwen2_flags) {
  auto m = std::make_unique<SyntheticModel>();
  ModelConfig& c = m->cfg;
  c.arch = qwen2_flags ? Arch::kQwen2 : Arch::kLlama;
  c.name = "synthetic";
  c.n_layers = 2;
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.d_ff = 96;
  c.vocab_size = 67;
  c.max_ctx = 64;
  c.rms_eps = 1e-6f;
  c.rope_theta = qwen2_flags ? 1e6f : 1e4f;
  c.rope_dim = 16;
  c.rope_layout = qwen2_flags ? RopeLayout::kHalf : RopeLayout::kInterleaved;
  c.qkv_bias = qwen2_flags;
  c.tie_embeddings = qwen2_flags;
  c.bos_id = 1;
  c.eos_ids = {2};
  std::mt19937 gen(seed);
  const float a = 0.25f;
  m->w.tok_embd = make_tensor(*m, "tok_embd", wtype, c.vocab_size, c.d_model, gen, -1.0f, 1.0f);
  m->w.out_norm = make_tensor(*m, "out_norm", DType::kF32, 1, c.d_model, gen, 0.8f, 1.2f);
  m->w.lm_head = c.tie_embeddings ? m->w.tok_embd
                                  : make_tensor(*m, "lm_head", wtype, c.vocab_size, c.d_model, gen, -a, a);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights L;
    L.attn_norm = make_tensor(*m, "attn_norm", DType::kF32, 1, c.d_model, gen, 0.8f, 1.2f);
    L.wq = make_tensor(*m, "wq", wtype, c.q_dim(), c.d_model, gen, -a, a);
    L.wk = make_tensor(*m, "wk", wtype, c.kv_dim(), c.d_model, gen, -a, a);
    L.wv = make_tensor(*m, "wv", wtype, c.kv_dim(), c.d_model, gen, -a, a);
    if (c.qkv_bias) {
      L.bq = make_tensor(*m, "bq", DType::kF32, 1, c.q_dim(), gen, -0.5f, 0.5f);
      L.bk = make_tensor(*m, "bk", DType::kF32, 1, c.kv_dim(), gen, -0.5f, 0.5f);
      L.bv = make_tensor(*m, "bv", DType::kF32, 1, c.kv_dim(), gen, -0.5f, 0.5f);
    }
    L.wo = make_tensor(*m, "wo", wtype, c.d_model, c.q_dim(), gen, -a, a);
    L.ffn_norm = make_tensor(*m, "ffn_norm", DType::kF32, 1, c.d_model, gen, 0.8f, 1.2f);
    L.w_gate = make_tensor(*m, "w_gate", wtype, c.d_ff, c.d_model, gen, -a, a);
    L.w_up = make_tensor(*m, "w_up", wtype, c.d_ff, c.d_model, gen, -a, a);
    L.w_down = make_tensor(*m, "w_down", wtype, c.d_model, c.d_ff, gen, -a, a);
    m->w.layers.push_back(L);
  }
  return m;
}

}  // namespace anelm::engine::testing
