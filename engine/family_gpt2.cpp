// GPT-2 as llama.cpp v0.5.0 runs it (src/models/gpt2.cpp, conversion/gpt2.py): token embeddings plus
// learned absolute position embeddings (position_embd, one row per trained position; no RoPE),
// pre-norm layers with LayerNorm (weight and bias, epsilon gpt2.attention.layer_norm_epsilon), a fused
// QKV projection with bias, an output projection with bias, a plain FFN up -> GELU (tanh) -> down with
// biases, a final LayerNorm with bias and the token embedding as the head when output.weight is absent.
#include <string>

#include "engine/error.h"
#include "engine/families.h"

namespace anelm::engine {

namespace {

constexpr const char* kPrefix = "gpt2.";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Elements [begin, begin + count) of a 1-D float vector (a fused bias) over the same memory.
TensorView vector_view(const TensorView& t, int64_t begin, int64_t count, std::string name) {
  TensorView v = t;
  v.name = std::move(name);
  v.shape[0] = count;
  v.data = static_cast<const uint8_t*>(t.data) + dtype_row_bytes(t.dtype, begin);
  v.nbytes = dtype_row_bytes(t.dtype, count);
  return v;
}

}  // namespace

void gpt2_style_from_gguf(const GgufFile& g, const std::string& p, ModelConfig& c) {
  c.layer_norm = true;
  c.gated_ffn = false;
  c.ffn_act = FfnAct::kGeluTanh;
  c.learned_positions = true;
  c.qkv_bias = true;
  c.proj_bias = true;
  // position_embd has exactly context_length rows (llama.cpp's n_ctx_train): the key is required,
  // not defaulted, because it sizes a tensor.
  const int64_t ctx = g.get_int(p + "context_length");
  if (ctx <= 0 || ctx > ModelLimits::kMaxCtx) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + p + "context_length = " + std::to_string(ctx) +
                                        " must be in 1.." + std::to_string(ModelLimits::kMaxCtx));
  }
  c.max_ctx = static_cast<int>(ctx);
  // No RoPE anywhere: every layer attends without rotating q and k.
  if (c.n_layers > 0 && c.n_layers <= ModelLimits::kMaxLayers) c.nope_layers.assign(static_cast<size_t>(c.n_layers), true);
  c.rope_dim = c.head_dim;
}

void gpt2_style_to_gguf(const ModelConfig& c, const std::string& p, GgufWriter& w) {
  w.add_u32(p + "block_count", static_cast<uint32_t>(c.n_layers));
  w.add_u32(p + "context_length", static_cast<uint32_t>(c.max_ctx));
  w.add_u32(p + "embedding_length", static_cast<uint32_t>(c.d_model));
  w.add_u32(p + "feed_forward_length", static_cast<uint32_t>(c.d_ff));
  w.add_u32(p + "attention.head_count", static_cast<uint32_t>(c.n_heads));
  w.add_f32(p + "attention.layer_norm_epsilon", c.rms_eps);
}

void gpt2_from_gguf(const GgufFile& g, ModelConfig& c) {
  gpt2_style_from_gguf(g, kPrefix, c);
  // What llama.cpp's gpt2 graph does not run either: refused by name, never ignored.
  for (const char* t : {"blk.0.attn_q.weight", "blk.0.ffn_gate.weight", "rope_freqs.weight"}) {
    if (g.find_tensor(t)) {
      throw Error(ErrorKind::kUnsupported, "GGUF '" + g.path() + "': gpt2 tensor '" + t +
                                               "' is not supported (GPT-2 has a fused attn_qkv, an ungated FFN and no RoPE)");
    }
  }
}

void gpt2_to_gguf(const ModelConfig& c, GgufWriter& w) { gpt2_style_to_gguf(c, kPrefix, w); }

TensorLookup gpt2_split_fused(const ModelConfig& c, TensorLookup file) {
  return [c, file = std::move(file)](const std::string& name) -> std::optional<TensorView> {
    static const char* const kParts[] = {"attn_q.", "attn_k.", "attn_v."};
    int index = -1;
    bool bias = false;
    for (int i = 0; i < 3 && index < 0; ++i) {
      for (const bool b : {false, true}) {
        if (ends_with(name, std::string(".") + kParts[i] + (b ? "bias" : "weight"))) {
          index = i;
          bias = b;
        }
      }
    }
    if (index < 0) return file(name);
    const std::string suffix = bias ? "bias" : "weight";
    const std::string part = std::string(kParts[index]) + suffix;
    const std::string fused_name = name.substr(0, name.size() - part.size()) + "attn_qkv." + suffix;
    std::optional<TensorView> fused = file(fused_name);
    if (!fused) {
      throw Error(ErrorKind::kNotFound, "tensor '" + fused_name + "' (GPT-2's fused Q, K, V projection " + suffix +
                                            ") is missing");
    }
    const int64_t q = c.q_dim(), kv = c.kv_dim(), want = q + 2 * kv;
    const int64_t at = index == 0 ? 0 : index == 1 ? q : q + kv;
    const int64_t count = index == 0 ? q : kv;
    const std::string range = " [" + std::to_string(at) + ", " + std::to_string(at + count) + ")";
    if (bias) {
      if (fused->ndim != 1 || fused->shape[0] != want || dtype_is_quantized(fused->dtype)) {
        throw Error(ErrorKind::kFormat, "tensor '" + fused_name + "' must be a float vector of q_dim + 2 * kv_dim = " +
                                            std::to_string(want) + " elements, got " + dtype_name(fused->dtype) + " " +
                                            std::to_string(fused->ndim) + "-D with " + std::to_string(fused->numel()) +
                                            " elements");
      }
      return vector_view(*fused, at, count, fused_name + range);
    }
    if (fused->ndim != 2 || fused->shape[0] != want) {
      throw Error(ErrorKind::kFormat, "tensor '" + fused_name + "' has " + std::to_string(fused->rows()) + " rows (" +
                                          std::to_string(fused->ndim) + "-D), expected a 2-D q_dim + 2 * kv_dim = " +
                                          std::to_string(want) + " (Q, K, V rows)");
    }
    return row_view(*fused, at, count, fused_name + " rows" + range);
  };
}

}  // namespace anelm::engine
