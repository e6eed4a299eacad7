// Binds GGUF or HF tensors to ModelWeights roles, checks every shape and dtype, optionally requantizes.
#include "engine/model_loader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "engine/config_gguf.h"
#include "engine/config_hf.h"
#include "engine/error.h"
#include "engine/families.h"
#include "engine/gguf.h"
#include "engine/kernels/quantize.h"
#include "engine/safetensors.h"
#include "spdlog/spdlog.h"

namespace anelm::engine {

namespace fs = std::filesystem;

ModelFormat detect_model_format(const std::string& path) {
  if (!fs::exists(path)) throw Error(ErrorKind::kNotFound, "model path '" + path + "' does not exist");
  if (fs::is_directory(path)) return ModelFormat::kHf;
  char magic[4] = {0};
  std::ifstream in(path, std::ios::binary);
  in.read(magic, 4);
  if (in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) return ModelFormat::kGguf;
  if (path.ends_with(".safetensors") || path.ends_with(".safetensors.index.json")) return ModelFormat::kHf;
  throw Error(ErrorKind::kFormat, "'" + path + "' is neither a GGUF file (magic 'GGUF') nor a "
                                  "HuggingFace model directory");
}

namespace {

enum class Role { kMatrix, kVector };  // vectors (norms, biases) are bound as F32

// One weight slot: where to store it, its name in the file and the shape it must have.
struct Slot {
  TensorView* dst;
  std::string name;
  std::vector<int64_t> shape;
  std::string shape_desc;  // e.g. "[q_dim, d_model]"
  Role role;
  bool required;
};

std::string shape_str(const int64_t* s, int n) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Tensor names per format; `layer` < 0 for global tensors.
struct Names {
  ModelFormat fmt;
  std::string hf_model = "model.";  // Qwen3.5's multimodal checkpoints: "model.language_model."
  std::string global(const char* gguf, const char* hf) const {
    if (fmt == ModelFormat::kGguf) return gguf;
    const std::string h = hf;
    return h.rfind("model.", 0) == 0 ? hf_model + h.substr(6) : h;
  }
  std::string layer(int l, const char* gguf, const char* hf) const {
    return fmt == ModelFormat::kGguf ? "blk." + std::to_string(l) + "." + gguf
                                     : hf_model + "layers." + std::to_string(l) + "." + hf;
  }
};

// The Gated DeltaNet tensors of one layer (GGUF names; HF names as transformers' Qwen3.5).
template <typename Add>
void add_deltanet_slots(const ModelConfig& c, DeltaNetWeights& w, ModelFormat fmt, Add&& add) {
  const DeltaNetDims& dn = c.deltanet;
  const int64_t d = c.d_model, cd = dn.conv_dim(), vd = dn.value_dim(), nv = dn.n_v_heads;
  add(&w.qkv, "attn_qkv.weight", "linear_attn.in_proj_qkv.weight", {cd, d}, "[conv_dim, d_model]", Role::kMatrix);
  add(&w.gate, "attn_gate.weight", "linear_attn.in_proj_z.weight", {vd, d}, "[value_dim, d_model]", Role::kMatrix);
  add(&w.beta, "ssm_beta.weight", "linear_attn.in_proj_b.weight", {nv, d}, "[n_v_heads, d_model]", Role::kMatrix);
  add(&w.alpha, "ssm_alpha.weight", "linear_attn.in_proj_a.weight", {nv, d}, "[n_v_heads, d_model]", Role::kMatrix);
  if (fmt == ModelFormat::kGguf) {
    add(&w.conv, "ssm_conv1d.weight", "", {cd, dn.conv_kernel}, "[conv_dim, conv_kernel]", Role::kVector);
  } else {  // PyTorch's Conv1d weight [channels, 1, taps]; squeezed after binding
    add(&w.conv, "", "linear_attn.conv1d.weight", {cd, 1, dn.conv_kernel}, "[conv_dim, 1, conv_kernel]", Role::kVector);
  }
  add(&w.dt, "ssm_dt.bias", "linear_attn.dt_bias", {nv}, "[n_v_heads]", Role::kVector);
  add(&w.a, "ssm_a", "linear_attn.A_log", {nv}, "[n_v_heads]", Role::kVector);
  add(&w.norm, "ssm_norm.weight", "linear_attn.norm.weight", {dn.d_v}, "[d_v]", Role::kVector);
  add(&w.out, "ssm_out.weight", "linear_attn.out_proj.weight", {d, vd}, "[d_model, value_dim]", Role::kMatrix);
}

// The LayerNorms' biases of one layer, and the projection biases of GPT-2 and BERT (GGUF only; Q/K/V
// biases come with qkv_bias).
template <typename Add>
void add_gpt2_bias_slots(const ModelConfig& c, LayerWeights& L, Add&& add) {
  const int64_t d = c.d_model, ff = c.d_ff;
  add(&L.attn_norm_b, "attn_norm.bias", "", {d}, "[d_model]", Role::kVector);
  add(&L.ffn_norm_b, "ffn_norm.bias", "", {d}, "[d_model]", Role::kVector);
  if (!c.proj_bias) return;
  add(&L.bo, "attn_output.bias", "", {d}, "[d_model]", Role::kVector);
  add(&L.b_up, "ffn_up.bias", "", {ff}, "[d_ff]", Role::kVector);
  add(&L.b_down, "ffn_down.bias", "", {d}, "[d_model]", Role::kVector);
}

std::vector<Slot> make_slots(const ModelConfig& c, ModelWeights& w, ModelFormat fmt, const std::string& hf_model) {
  const Names n{fmt, hf_model};
  const int64_t d = c.d_model, q = c.q_dim(), kv = c.kv_dim(), ff = c.d_ff, v = c.vocab_size;
  std::vector<Slot> s;
  s.push_back({&w.tok_embd, n.global("token_embd.weight", "model.embed_tokens.weight"), {v, d},
               "[vocab, d_model]", Role::kMatrix, true});
  if (!c.norm_after_residual) {  // post-LN layers (BERT) end normed
    s.push_back({&w.out_norm, n.global("output_norm.weight", "model.norm.weight"), {d}, "[d_model]", Role::kVector, true});
    if (c.layer_norm) s.push_back({&w.out_norm_b, n.global("output_norm.bias", ""), {d}, "[d_model]", Role::kVector, true});
  }
  if (c.embd_norm) {
    s.push_back({&w.embd_norm, n.global("token_embd_norm.weight", ""), {d}, "[d_model]", Role::kVector, true});
    s.push_back({&w.embd_norm_b, n.global("token_embd_norm.bias", ""), {d}, "[d_model]", Role::kVector, true});
  }
  if (c.n_token_types > 0) {  // optional, as in llama.cpp
    s.push_back({&w.type_embd, n.global("token_types.weight", ""), {c.n_token_types, d}, "[token_type_count, d_model]",
                 Role::kVector, false});
  }
  if (c.learned_positions) {
    s.push_back({&w.pos_embd, n.global("position_embd.weight", ""), {c.max_ctx, d}, "[context_length, d_model]", Role::kMatrix, true});
  }
  if (!c.tie_embeddings) {  // a tied checkpoint may still store a copy; it is ignored
    s.push_back({&w.lm_head, n.global("output.weight", "lm_head.weight"), {v, d}, "[vocab, d_model]",
                 Role::kMatrix, false});
  }
  if (c.pooling == Pooling::kRank) {
    const int64_t nc = c.n_cls_out;
    s.push_back({&w.cls_out, n.global("cls.output.weight", ""), {nc, d}, "[n_labels, d_model]", Role::kMatrix, true});
    s.push_back({&w.cls_out_b, n.global("cls.output.bias", ""), {nc}, "[n_labels]", Role::kVector, false});
  }
  w.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[l];
    auto add = [&](TensorView* dst, const char* g, const char* h, std::vector<int64_t> shape,
                   const char* desc, Role role, bool req = true) {
      s.push_back({dst, n.layer(l, g, h), std::move(shape), desc, role, req});
    };
    const bool gguf = fmt == ModelFormat::kGguf;
    const bool qwen35 = c.arch == Arch::kQwen35;
    add(&L.attn_norm, "attn_norm.weight", "input_layernorm.weight", {d}, "[d_model]", Role::kVector);
    if (c.mixer(l) == Mixer::kDeltaNet) {
      add_deltanet_slots(c, L.deltanet, fmt, add);
    } else {
      const int64_t qrows = c.attn_output_gate ? 2 * q : q;
      add(&L.wq, "attn_q.weight", "self_attn.q_proj.weight", {qrows, d}, c.attn_output_gate ? "[2 * q_dim, d_model]" : "[q_dim, d_model]", Role::kMatrix);
      add(&L.wk, "attn_k.weight", "self_attn.k_proj.weight", {kv, d}, "[kv_dim, d_model]", Role::kMatrix);
      add(&L.wv, "attn_v.weight", "self_attn.v_proj.weight", {kv, d}, "[kv_dim, d_model]", Role::kMatrix);
      if (c.qkv_bias) {
        add(&L.bq, "attn_q.bias", "self_attn.q_proj.bias", {q}, "[q_dim]", Role::kVector);
        add(&L.bk, "attn_k.bias", "self_attn.k_proj.bias", {kv}, "[kv_dim]", Role::kVector);
        add(&L.bv, "attn_v.bias", "self_attn.v_proj.bias", {kv}, "[kv_dim]", Role::kVector);
      }
      if (c.qk_norm) {
        add(&L.q_norm, "attn_q_norm.weight", "self_attn.q_norm.weight", {c.head_dim}, "[head_dim]", Role::kVector);
        add(&L.k_norm, "attn_k_norm.weight", "self_attn.k_norm.weight", {c.head_dim}, "[head_dim]", Role::kVector);
      }
      add(&L.wo, "attn_output.weight", "self_attn.o_proj.weight", {d, q}, "[d_model, q_dim]", Role::kMatrix);
    }
    // Qwen3.5's GGUF names the pre-FFN norm post_attention_norm (HF's post_attention_layernorm);
    // Gemma 3's HF names it pre_feedforward_layernorm (its post_attention_layernorm is attn_post_norm).
    add(&L.ffn_norm, gguf && qwen35 ? "post_attention_norm.weight" : "ffn_norm.weight",
        c.post_norms ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight", {d}, "[d_model]", Role::kVector);
    if (c.gated_ffn) add(&L.w_gate, "ffn_gate.weight", "mlp.gate_proj.weight", {ff, d}, "[d_ff, d_model]", Role::kMatrix);
    add(&L.w_up, "ffn_up.weight", "mlp.up_proj.weight", {ff, d}, "[d_ff, d_model]", Role::kMatrix);
    add(&L.w_down, "ffn_down.weight", "mlp.down_proj.weight", {d, ff}, "[d_model, d_ff]", Role::kMatrix);
    if (c.layer_norm) add_gpt2_bias_slots(c, L, add);
    if (c.post_norms) {  // Gemma 3
      add(&L.attn_post_norm, "post_attention_norm.weight", "post_attention_layernorm.weight", {d}, "[d_model]", Role::kVector);
      add(&L.ffn_post_norm, "post_ffw_norm.weight", "post_feedforward_layernorm.weight", {d}, "[d_model]", Role::kVector);
    }
  }
  return s;
}

// 64-byte aligned owned buffer, kept alive through LoadedModel::owners.
void* alloc_owned(LoadedModel& m, int64_t bytes) {
  size_t size = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, size ? size : 64);
  if (!p) throw Error(ErrorKind::kResourceExhausted, "out of memory allocating " + std::to_string(bytes) + " bytes");
  m.owners.emplace_back(p, std::free);
  return p;
}

// The source rows were read once: reclaim their (file) pages so RSS holds only the converted copy.
// MADV_PAGEOUT never discards data (a later read faults the page back), so it is safe on any view.
void release_source_pages(const void* p, int64_t n) {
#ifdef MADV_PAGEOUT
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(n)) & ~(page - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_PAGEOUT);
#else
  (void)p;
  (void)n;
#endif
}

// Converts every row of `src` to `to` into an owned buffer (through an f32 row).
TensorView convert_tensor(LoadedModel& m, const TensorView& src, DType to) {
  TensorView out = src;
  out.dtype = to;
  const int64_t rows = src.numel() / src.cols(), cols = src.cols();
  const int64_t src_row = dtype_row_bytes(src.dtype, cols), dst_row = dtype_row_bytes(to, cols);
  out.nbytes = rows * dst_row;
  auto* dst = static_cast<uint8_t*>(alloc_owned(m, out.nbytes));
  const auto* s = static_cast<const uint8_t*>(src.data);
  auto convert_rows = [&](int64_t begin, int64_t end) {
    std::vector<float> tmp(cols);
    for (int64_t r = begin; r < end; ++r) {
      kernels::row_to_f32(src.dtype, s + r * src_row, tmp.data(), cols);
      kernels::row_from_f32(tmp.data(), to, dst + r * dst_row, cols);
    }
  };
  // Requantizing a 0.5B model takes seconds on one core; rows are independent, so split them.
  const int64_t n_threads =
      std::clamp<int64_t>(rows * cols / (1 << 20), 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < n_threads; ++t) {
    pool.emplace_back(convert_rows, rows * t / n_threads, rows * (t + 1) / n_threads);
  }
  convert_rows(0, rows / n_threads);
  for (std::thread& th : pool) th.join();
  release_source_pages(src.data, src.nbytes);
  out.data = dst;
  return out;
}

// Looks a tensor up in whichever file format is open; nullopt when absent.
using Lookup = std::function<std::optional<TensorView>(const std::string&)>;

// An f32 vector (bound vectors are f32 by now) mapped element-wise into an owned buffer.
void remap_vector(LoadedModel& m, TensorView& t, float (*fn)(float)) {
  const int64_t n = t.numel();
  auto* dst = static_cast<float*>(alloc_owned(m, n * 4));
  const auto* src = static_cast<const float*>(t.data);
  for (int64_t i = 0; i < n; ++i) dst[i] = fn(src[i]);
  t.data = dst;
}

float plus_one(float x) { return x + 1.0f; }

// HF Qwen3.5 tensors to the conventions the engine (and llama.cpp's converter) use: RMSNorm weights
// 1 + w (HF's norms are zero-centred; the DeltaNet gated norm is not), A_log -> -exp(A_log), the conv
// weight squeezed to [conv_dim, taps]. Value heads stay grouped (DeltaNetDims::grouped_heads).
void convert_qwen35_hf(LoadedModel& m) {
  auto remap = [&](TensorView& t, float (*fn)(float)) { remap_vector(m, t, fn); };
  remap(m.weights.out_norm, plus_one);
  for (LayerWeights& L : m.weights.layers) {
    remap(L.attn_norm, plus_one);
    remap(L.ffn_norm, plus_one);
    if (!L.q_norm.empty()) remap(L.q_norm, plus_one);
    if (!L.k_norm.empty()) remap(L.k_norm, plus_one);
    DeltaNetWeights& dn = L.deltanet;
    if (dn.a.empty()) continue;
    remap(dn.a, [](float x) { return -std::exp(x); });
    dn.conv.ndim = 2;
    dn.conv.shape = {dn.conv.shape[0], dn.conv.shape[2], 0, 0};
  }
}

// HF Gemma 3's RMSNorms multiply by 1 + w (Gemma3RMSNorm); llama.cpp's converter stores 1 + w, which
// the engine's RMSNorm multiplies by: every norm weight (q/k norms included) gets its 1 here, once.
void convert_gemma3_hf(LoadedModel& m) {
  remap_vector(m, m.weights.out_norm, plus_one);
  for (LayerWeights& L : m.weights.layers) {
    for (TensorView* t : {&L.attn_norm, &L.ffn_norm, &L.attn_post_norm, &L.ffn_post_norm, &L.q_norm, &L.k_norm}) {
      remap_vector(m, *t, plus_one);
    }
  }
}

void bind_all(LoadedModel& m, const Lookup& lookup, std::optional<DType> requant, const std::string& hf_model,
              const ConvertProgress& progress) {
  const ModelConfig& c = m.config;
  // GPT-2's HF tensors are served under the GGUF names (gpt2_hf_tensors), after their repack.
  const ModelFormat names = c.arch == Arch::kGpt2 ? ModelFormat::kGguf : m.format;
  std::vector<Slot> slots = make_slots(c, m.weights, names, hf_model);
  std::vector<std::string> problems;
  bool only_missing = true;
  for (Slot& s : slots) {
    std::optional<TensorView> v;
    try {
      v = lookup(s.name);
    } catch (const Error& e) {  // unsupported dtype: keep collecting
      problems.push_back(e.what());
      only_missing = false;
      continue;
    }
    if (!v) {
      if (s.required) problems.push_back("tensor '" + s.name + "' is missing (expected shape " + s.shape_desc + ")");
      continue;
    }
    bool shape_ok = v->ndim == static_cast<int>(s.shape.size());
    for (size_t i = 0; shape_ok && i < s.shape.size(); ++i) shape_ok = v->shape[i] == s.shape[i];
    if (!shape_ok) {
      only_missing = false;
      problems.push_back("tensor '" + s.name + "' has shape " + shape_str(v->shape.data(), v->ndim) +
                         ", expected " + s.shape_desc + " = " +
                         shape_str(s.shape.data(), static_cast<int>(s.shape.size())));
      continue;
    }
    if (s.role == Role::kVector && dtype_is_quantized(v->dtype)) {
      only_missing = false;
      problems.push_back("tensor '" + s.name + "' is " + dtype_name(v->dtype) +
                         "; norm and bias vectors must be f32, f16 or bf16");
      continue;
    }
    *s.dst = *v;
  }
  if (!problems.empty()) {
    constexpr size_t kMaxListed = 12;  // a vocab-only file would otherwise list hundreds
    std::string msg = "model '" + m.path + "' (" + arch_name(c.arch) + ", " + std::to_string(c.n_layers) +
                      " layers, d_model " + std::to_string(c.d_model) + ") does not match its config: " +
                      std::to_string(problems.size()) + " problem(s): ";
    for (size_t i = 0; i < problems.size() && i < kMaxListed; ++i) msg += (i ? "; " : "") + problems[i];
    if (problems.size() > kMaxListed) msg += "; ... and " + std::to_string(problems.size() - kMaxListed) + " more";
    throw Error(only_missing ? ErrorKind::kNotFound : ErrorKind::kFormat, msg);
  }
  int kept = 0, fell_back = 0;
  std::string first_kept, first_fallback;
  // Requant / f32 conversion only after every check passed, so a bad file costs no conversion work.
  int64_t done = 0;
  for (Slot& s : slots) {
    if (progress) progress(done++, static_cast<int64_t>(slots.size()));
    TensorView& t = *s.dst;
    if (t.empty()) continue;
    if (s.role == Role::kVector) {
      if (t.dtype != DType::kF32) t = convert_tensor(m, t, DType::kF32);
    } else if (requant && t.dtype != *requant) {
      // Rows that are not a multiple of the type's block: as llama.cpp does, a 256-block type falls
      // back to a 32-block one (kernels::writable_type_for); when none fits, keep the stored type
      // rather than refuse the model.
      const std::optional<DType> to = kernels::writable_type_for(*requant, t.cols());
      if (!to) {
        if (kept++ == 0) first_kept = t.name;
        continue;
      }
      if (*to != *requant && fell_back++ == 0) first_fallback = t.name + " -> " + dtype_name(*to);
      if (t.dtype != *to) t = convert_tensor(m, t, *to);
    }
  }
  if (progress) progress(done, done);
  if (fell_back > 0) {
    spdlog::info("'{}': {} matrices (first {}) use a 32-element block type: rows are not a multiple "
                 "of the {} block of {}", m.path, fell_back, first_fallback, dtype_name(*requant),
                 dtype_block_elems(*requant));
  }
  if (kept > 0) {
    spdlog::warn("'{}': {} matrices (first '{}') keep their stored type: rows are not a multiple of "
                 "the {} block of {}", m.path, kept, first_kept, dtype_name(*requant),
                 dtype_block_elems(*requant));
  }
  if (c.arch == Arch::kQwen35 && m.format == ModelFormat::kHf) convert_qwen35_hf(m);
  if (c.arch == Arch::kGemma3 && m.format == ModelFormat::kHf) convert_gemma3_hf(m);
  ModelWeights& w = m.weights;
  // Granite divides its logits by logit_scale: the head is linear in the final norm's weight, so the
  // division is folded into that weight and every head executor (CPU, ANE) computes it (exactly for
  // Granite's power-of-two scales). The normed states embeddings pool from carry it too, which L2
  // normalisation cancels.
  if (c.logit_scale != 1.0f) {
    auto* scaled = static_cast<float*>(alloc_owned(m, w.out_norm.numel() * 4));
    const auto* src = static_cast<const float*>(w.out_norm.data);
    for (int64_t i = 0; i < w.out_norm.numel(); ++i) scaled[i] = src[i] / c.logit_scale;
    w.out_norm.data = scaled;
  }
  if (w.lm_head.empty()) {
    w.lm_head = w.tok_embd;  // tied, or no separate head stored
    m.config.tie_embeddings = true;
  }
  m.weight_bytes = 0;
  for (const Slot& s : slots) {
    if (s.dst != &w.lm_head) m.weight_bytes += s.dst->nbytes;
  }
  if (w.lm_head.data != w.tok_embd.data) m.weight_bytes += w.lm_head.nbytes;  // tied: counted once
}

}  // namespace

void derive_rerank_head(LoadedModel& m, std::span<const int> labels) {
  ModelConfig& c = m.config;
  if (c.pooling == Pooling::kRank) return;
  if (c.arch != Arch::kQwen3) {
    throw Error(ErrorKind::kUnsupported, "--reranking: '" + m.path + "' is " + arch_name(c.arch) +
                                             "; a reranker stored as a causal LM is read for qwen3 (Qwen3-Reranker)");
  }
  if (labels.empty() || labels.size() > 64) {
    throw Error(ErrorKind::kInvalidArgument, "--reranking: 1..64 label tokens, got " + std::to_string(labels.size()));
  }
  const TensorView& head = m.weights.lm_head;
  const int64_t row = dtype_row_bytes(head.dtype, c.d_model), n = static_cast<int64_t>(labels.size());
  auto* dst = static_cast<uint8_t*>(alloc_owned(m, row * n));
  for (int64_t i = 0; i < n; ++i) {
    const int id = labels[static_cast<size_t>(i)];
    if (id < 0 || id >= c.vocab_size) {
      throw Error(ErrorKind::kInvalidArgument, "--reranking: label token id " + std::to_string(id) +
                                                   " is outside the vocabulary of " + std::to_string(c.vocab_size));
    }
    std::memcpy(dst + i * row, static_cast<const uint8_t*>(head.data) + id * row, static_cast<size_t>(row));
  }
  TensorView cls = head;
  cls.name = "cls.output.weight (LM head rows)";
  cls.shape = {n, c.d_model, 0, 0};
  cls.data = dst;
  cls.nbytes = row * n;
  m.weights.cls_out = cls;
  m.weight_bytes += cls.nbytes;
  c.pooling = Pooling::kRank;
  c.n_cls_out = static_cast<int>(n);
}

std::unique_ptr<LoadedModel> load_model(const std::string& path, std::optional<DType> requant,
                                        const ConvertProgress& progress) {
  auto m = std::make_unique<LoadedModel>();
  m->path = path;
  m->format = detect_model_format(path);
  Lookup lookup;
  std::string hf_model = "model.";
  if (m->format == ModelFormat::kGguf) {
    std::shared_ptr<GgufFile> g = GgufFile::open(path);
    m->config = config_from_gguf(*g);
    m->owners.push_back(g);
    // Llama-3.x rope scaling, as llama.cpp's converter stores it: per-pair frequency divisors.
    if (const GgufTensorInfo* rf = g->find_tensor("rope_freqs.weight")) {
      const TensorView v = g->tensor_view(*rf);
      if (v.dtype != DType::kF32 || v.numel() != m->config.rope_dim / 2) {
        throw Error(ErrorKind::kFormat, "GGUF '" + path + "': tensor 'rope_freqs.weight' must be f32 [" +
                                            std::to_string(m->config.rope_dim / 2) + "], got " +
                                            dtype_name(v.dtype) + " with " + std::to_string(v.numel()) + " elements");
      }
      const auto* f = static_cast<const float*>(v.data);
      m->config.rope_freq_factors.assign(f, f + v.numel());
    }
    lookup = [g](const std::string& name) -> std::optional<TensorView> {
      const GgufTensorInfo* info = g->find_tensor(name);
      if (!info) return std::nullopt;
      return g->tensor_view(*info);
    };
  } else {
    fs::path dir = fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
    m->config = config_from_hf_dir(dir.string());
    std::shared_ptr<SafetensorsFile> st = SafetensorsFile::open(fs::is_directory(path) ? path : dir.string());
    m->owners.push_back(st);
    if (st->find("model.language_model.embed_tokens.weight")) hf_model = "model.language_model.";
    if (st->find("language_model.model.embed_tokens.weight")) hf_model = "language_model.model.";  // older Gemma 3
    lookup = [st](const std::string& name) -> std::optional<TensorView> {
      if (!st->find(name)) return std::nullopt;
      return st->tensor_view(name);
    };
  }
  m->config.validate(path);
  if (m->config.arch == Arch::kPhi3) lookup = phi3_split_fused(m->config, std::move(lookup));
  if (m->config.arch == Arch::kGpt2 && m->format == ModelFormat::kHf) {
    lookup = gpt2_hf_tensors(m->config, std::move(lookup), m->owners);
  }
  if (m->config.arch == Arch::kGpt2) lookup = gpt2_split_fused(m->config, std::move(lookup));
  if (m->config.arch == Arch::kBert) lookup = bert_tensor_names(std::move(lookup));
  if (m->config.arch == Arch::kNomicBert) lookup = split_fused_qkv(m->config, bert_tensor_names(std::move(lookup)));
  if (m->format == ModelFormat::kGguf &&
      std::static_pointer_cast<GgufFile>(m->owners[0])->tensors().empty()) {
    throw Error(ErrorKind::kNotFound, "GGUF '" + path + "' holds no tensors (a vocab-only file?); "
                                      "it cannot be loaded as a model");
  }
  bind_all(*m, lookup, requant, hf_model, progress);
  return m;
}

}  // namespace anelm::engine
