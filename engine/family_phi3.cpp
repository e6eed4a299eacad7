// Phi-3 as llama.cpp v0.5.0 runs it (src/models/phi3.cpp, llama-model.cpp): Llama's pre-norm layers with
// NeoX RoPE over the first rope.dimension_count dims of each head (Phi-4-mini's partial_rotary_factor
// 0.75: 96 of 128), the fused projections HF stores (qkv_proj -> attn_qkv, gate_up_proj -> ffn_up with
// the gate rows first: ggml_swiglu applies SiLU to the first half), and LongRoPE: per-pair frequency
// divisors rope_factors_long/short (the converter's long_factor/short_factor), long when the context
// exceeds rope.scaling.original_context_length, with rope.scaling.attn_factor on the rotated dims'
// cosines and sines (the converter writes sqrt(1 + ln(max_ctx / orig_ctx) / ln(orig_ctx)); llama.cpp
// uses 1 when the key is absent).
#include <string>

#include "engine/error.h"
#include "engine/families.h"

namespace anelm::engine {

namespace {

constexpr const char* kPrefix = "phi3.";

// A LongRoPE factor tensor: f32 [rope_dim / 2] (ggml's rope reads f32 factors only); empty when absent.
std::vector<float> read_factors(const GgufFile& g, const ModelConfig& c, const char* name) {
  const GgufTensorInfo* info = g.find_tensor(name);
  if (!info) return {};
  const TensorView v = g.tensor_view(*info);
  if (v.dtype != DType::kF32 || v.ndim != 1 || v.numel() != c.rope_dim / 2) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': tensor '" + name + "' must be f32 [rope_dim / 2 = " +
                                        std::to_string(c.rope_dim / 2) + "], got " + dtype_name(v.dtype) + " with " +
                                        std::to_string(v.numel()) + " elements");
  }
  const auto* f = static_cast<const float*>(v.data);
  return {f, f + v.numel()};
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One separate tensor and where it sits in a fused one: part `index` of the fused rows.
struct FusedPart {
  const char* part;
  const char* fused;
  int index;
};

constexpr FusedPart kFusedParts[] = {
    {"attn_q.weight", "attn_qkv.weight", 0},
    {"attn_k.weight", "attn_qkv.weight", 1},
    {"attn_v.weight", "attn_qkv.weight", 2},
    {"ffn_gate.weight", "ffn_up.weight", 0},
    {"ffn_up.weight", "ffn_up.weight", 1},
    {"self_attn.q_proj.weight", "self_attn.qkv_proj.weight", 0},
    {"self_attn.k_proj.weight", "self_attn.qkv_proj.weight", 1},
    {"self_attn.v_proj.weight", "self_attn.qkv_proj.weight", 2},
    {"mlp.gate_proj.weight", "mlp.gate_up_proj.weight", 0},
    {"mlp.up_proj.weight", "mlp.gate_up_proj.weight", 1},
};

}  // namespace

void phi3_from_gguf(const GgufFile& g, ModelConfig& c) {
  const std::string p = kPrefix;
  c.rope_layout = RopeLayout::kHalf;  // LLAMA_ROPE_TYPE_NEOX
  // llama.cpp: n_ctx_orig_yarn = rope.scaling.original_context_length, else the trained context.
  const int64_t orig = g.find_int(p + "rope.scaling.original_context_length").value_or(c.max_ctx);
  if (orig <= 0 || orig > ModelLimits::kMaxCtx) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + p + "rope.scaling.original_context_length = " +
                                        std::to_string(orig) + " must be in 1.." + std::to_string(ModelLimits::kMaxCtx));
  }
  c.rope_orig_ctx = static_cast<int>(orig);
  c.rope_attn_factor = static_cast<float>(g.find_float(p + "rope.scaling.attn_factor").value_or(1.0));
  // phi3.attention.sliding_window (Phi-3-mini: 2047, Phi-3.5/Phi-4-mini: 262144, 0: none) is read by
  // llama.cpp and then disabled ("Phi SWA is currently disabled", llama.cpp PR 13676): every layer
  // attends to the whole context, as here.
  if (c.rope_dim > 0 && c.rope_dim <= ModelLimits::kMaxDim) {  // else validate() reports rope_dim
    c.rope_factors_long = read_factors(g, c, "rope_factors_long.weight");
    c.rope_factors_short = read_factors(g, c, "rope_factors_short.weight");
  }
  select_rope_factors(c, 0);  // short until the run context is known
  // What llama.cpp's phi3 graph also runs and these layers do not: refused by name, never ignored.
  for (const char* t : {"blk.0.attn_qkv.bias", "blk.0.attn_q.bias", "blk.0.ffn_gate_inp.weight", "rope_freqs.weight"}) {
    if (g.find_tensor(t)) {
      throw Error(ErrorKind::kUnsupported, "GGUF '" + g.path() + "': phi3 tensor '" + t +
                                               "' (QKV biases, experts or Llama-3 rope_freqs) is not supported");
    }
  }
}

void phi3_to_gguf(const ModelConfig& c, int sliding_window, GgufWriter& w) {
  const std::string p = kPrefix;
  w.add_u32(p + "rope.scaling.original_context_length", static_cast<uint32_t>(c.rope_orig_ctx));
  w.add_u32(p + "attention.sliding_window", static_cast<uint32_t>(sliding_window));
  // The converter writes the attention factor only with the long/short factors.
  if (!c.rope_factors_long.empty()) w.add_f32(p + "rope.scaling.attn_factor", c.rope_attn_factor);
}

void select_rope_factors(ModelConfig& c, int ctx) {
  if (c.rope_factors_long.empty() && c.rope_factors_short.empty()) return;
  // llama.cpp compares its n_ctx_seq, the context rounded up to a multiple of 256, so for an
  // original context that is not such a multiple its boundary sits lower; every Phi checkpoint's is
  // 4096.
  c.rope_freq_factors = ctx > c.rope_orig_ctx ? c.rope_factors_long : c.rope_factors_short;
}

namespace {

// gate_up: ffn_gate and ffn_up are rows of the fused ffn_up too (Phi-3), else only Q/K/V are split.
TensorLookup split_fused(const ModelConfig& c, TensorLookup file, bool gate_up) {
  return [c, file = std::move(file), gate_up](const std::string& name) -> std::optional<TensorView> {
    const FusedPart* hit = nullptr;
    for (const FusedPart& f : kFusedParts) {
      if (!gate_up && std::string(f.fused).find("qkv") == std::string::npos) continue;
      if (ends_with(name, std::string(".") + f.part)) {
        hit = &f;
        break;
      }
    }
    if (!hit) return file(name);
    const std::string prefix = name.substr(0, name.size() - std::string(hit->part).size());
    const std::string fused_name = prefix + hit->fused;
    const bool is_qkv = std::string(hit->fused).find("qkv") != std::string::npos;
    // llama.cpp's create_tensor_qkv takes separate Q/K/V when there is no fused tensor; its phi3 FFN
    // is always the fused ffn_up.
    if (is_qkv) {
      if (std::optional<TensorView> separate = file(name)) return separate;
    }
    std::optional<TensorView> fused = file(fused_name);
    if (!fused) {
      throw Error(ErrorKind::kNotFound, "tensor '" + name + "' is missing, and so is the fused '" + fused_name +
                                            "' it would be rows of");
    }
    const int64_t q = c.q_dim(), kv = c.kv_dim(), ff = c.d_ff;
    const int64_t want = is_qkv ? q + 2 * kv : 2 * ff;
    if (fused->ndim != 2 || fused->shape[0] != want) {
      throw Error(ErrorKind::kFormat, "tensor '" + fused_name + "' has " + std::to_string(fused->rows()) + " rows (" +
                                          std::to_string(fused->ndim) + "-D), expected a 2-D " +
                                          (is_qkv ? "q_dim + 2 * kv_dim = " : "2 * d_ff = ") + std::to_string(want) +
                                          (is_qkv ? " (Q, K, V rows)" : " (gate rows, then up rows)"));
    }
    const int64_t begin[] = {0, is_qkv ? q : ff, q + kv};
    const int64_t count = is_qkv ? (hit->index == 0 ? q : kv) : ff;
    const int64_t at = begin[hit->index];
    return row_view(*fused, at, count, fused_name + " rows [" + std::to_string(at) + ", " + std::to_string(at + count) + ")");
  };
}

}  // namespace

TensorLookup phi3_split_fused(const ModelConfig& c, TensorLookup file) { return split_fused(c, std::move(file), true); }

TensorLookup split_fused_qkv(const ModelConfig& c, TensorLookup file) { return split_fused(c, std::move(file), false); }

}  // namespace anelm::engine
