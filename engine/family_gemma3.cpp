// Gemma 3 as llama.cpp reads it (src/models/gemma3.cpp, src/llama-model.cpp, v0.5.0): Llama's
// layers with q/k head norms, RMSNorms after the attention and after the FFN, a GeGLU FFN (tanh
// GELU), token embeddings times sqrt(d_model), NeoX RoPE, and sliding-window attention on 5 of
// every 6 layers (those local layers rotate with base 10000 and no scaling). The converter stores
// every RMSNorm weight as 1 + w (HF's Gemma3RMSNorm multiplies by 1 + w), so the GGUF norms are
// plain multipliers.
#include <cmath>
#include <string>

#include "engine/error.h"
#include "engine/families.h"

namespace anelm::engine {

namespace {

constexpr const char* kPrefix = "gemma3.";
// llama.cpp's gemma3 default: layer l is local unless l % 6 == 5 (set_swa_pattern(6), dense last).
constexpr int kSwaPattern = 6;

[[noreturn]] void refuse(const GgufFile& g, const std::string& what) {
  throw Error(ErrorKind::kUnsupported, "GGUF '" + g.path() + "': gemma3 " + what + " is not supported");
}

std::vector<bool> swa_layers(const GgufFile& g, const std::string& p, int n_layers) {
  const std::string key = p + "attention.sliding_window_pattern";
  std::vector<bool> swa(static_cast<size_t>(n_layers));
  if (g.has(key) && g.type_of(key) == GgufType::kArray) {  // one flag per layer
    const std::vector<int64_t> flags = g.get_int_array(key);
    if (static_cast<int>(flags.size()) != n_layers) {
      throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + key + " has " + std::to_string(flags.size()) +
                                          " entries, expected block_count = " + std::to_string(n_layers));
    }
    for (int l = 0; l < n_layers; ++l) swa[static_cast<size_t>(l)] = flags[static_cast<size_t>(l)] != 0;
    return swa;
  }
  const int64_t n = g.find_int(key).value_or(kSwaPattern);
  if (n < 0 || n > ModelLimits::kMaxLayers) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + key + " = " + std::to_string(n) +
                                        " must be in [0, " + std::to_string(ModelLimits::kMaxLayers) + "]");
  }
  // llama.cpp: pattern 0 makes every layer local; else layer l is local when l % n < n - 1.
  for (int l = 0; l < n_layers; ++l) swa[static_cast<size_t>(l)] = n == 0 || l % n < n - 1;
  return swa;
}

}  // namespace

std::vector<bool> gemma3_swa_layers(int n_layers) {
  std::vector<bool> swa;
  for (int l = 0; l < n_layers; ++l) swa.push_back(l % kSwaPattern < kSwaPattern - 1);
  return swa;
}

void gemma3_from_gguf(const GgufFile& g, ModelConfig& c) {
  const std::string p = kPrefix;
  c.rope_layout = RopeLayout::kHalf;  // LLAMA_ROPE_TYPE_NEOX
  c.qk_norm = true;
  c.post_norms = true;
  c.ffn_act = FfnAct::kGeluTanh;
  // Every Gemma checkpoint has key_length == value_length (head_dim); the KV cache holds one.
  if (const auto v = g.find_int(p + "attention.value_length"); v && *v != c.head_dim) {
    refuse(g, "value_length " + std::to_string(*v) + " != key_length " + std::to_string(c.head_dim));
  }
  // llama.cpp's graph scales the token embeddings by sqrtf(n_embd) in f32.
  c.embedding_scale = std::sqrt(static_cast<float>(c.d_model));
  // query_pre_attn_scalar is not in the GGUF: llama.cpp scales q by 1/sqrt(head_dim), except for
  // the 27B shape (62 layers: 1/sqrt(d_model / n_heads)), after gemma_pytorch's config.
  const float div = c.n_layers == 62 && c.n_heads > 0 ? static_cast<float>(c.d_model / c.n_heads) : static_cast<float>(c.head_dim);
  if (div > 0) c.attention_scale = 1.0f / std::sqrt(div);
  // RoPE scaling of the global layers (Gemma 3 4B and up: linear, factor 8): theta / factor.
  const std::string type = g.find_string(p + "rope.scaling.type").value_or("linear");
  if (type != "linear" && type != "none") refuse(g, "rope.scaling.type '" + type + "'");
  double factor = g.find_float(p + "rope.scaling.factor").value_or(g.find_float(p + "rope.scale_linear").value_or(0.0));
  if (!(factor >= 0.0) || !std::isfinite(factor)) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + p + "rope.scaling.factor = " + std::to_string(factor) + " must be >= 0");
  }
  if (factor != 0.0 && factor != 1.0) c.rope_freq_factors.assign(static_cast<size_t>(c.rope_dim / 2), static_cast<float>(factor));
  // Sliding-window layers only when the file has a window (llama.cpp: LLAMA_SWA_TYPE_NONE otherwise).
  const int64_t window = g.find_int(p + "attention.sliding_window").value_or(0);
  if (window < 0 || window > ModelLimits::kMaxCtx) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + p + "attention.sliding_window = " + std::to_string(window) +
                                        " must be in [0, " + std::to_string(ModelLimits::kMaxCtx) + "]");
  }
  if (window > 0) {
    c.sliding_window = static_cast<int>(window);
    c.swa_layers = swa_layers(g, p, c.n_layers);
    c.rope_theta_swa = static_cast<float>(g.find_float(p + "rope.freq_base_swa").value_or(10000.0));
  }
  if (g.find_float(p + "final_logit_softcapping").value_or(0.0) != 0.0) refuse(g, "final_logit_softcapping");
  // What llama.cpp's gemma3 graph also runs (EmbeddingGemma's dense heads) and these layers do not.
  for (const char* t : {"dense_2.weight", "dense_3.weight", "blk.0.attn_qkv.weight"}) {
    if (g.find_tensor(t)) refuse(g, std::string("tensor '") + t + "'");
  }
}

void gemma3_to_gguf(const ModelConfig& c, GgufWriter& w) {
  const std::string p = kPrefix;
  if (c.sliding_window > 0) w.add_u32(p + "attention.sliding_window", static_cast<uint32_t>(c.sliding_window));
  if (!c.rope_freq_factors.empty()) {  // the converter's linear rope scaling (one factor for every pair)
    w.add_string(p + "rope.scaling.type", "linear");
    w.add_f32(p + "rope.scaling.factor", c.rope_freq_factors[0]);
  }
}

}  // namespace anelm::engine
