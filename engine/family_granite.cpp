// Granite 3.x as llama.cpp reads it (src/models/granite.cpp, v0.5.0): Llama's layers (Q/K rows in
// the converter's interleaved RoPE order) with HF's four multipliers, which the converter renames
// embedding_multiplier -> granite.embedding_scale, residual_multiplier -> granite.residual_scale,
// attention_multiplier -> granite.attention.scale and logits_scaling -> granite.logit_scale.
#include <string>

#include "engine/error.h"
#include "engine/families.h"

namespace anelm::engine {

namespace {

constexpr const char* kPrefix = "granite.";

// An optional multiplier: llama.cpp treats an absent key (or 0) as no multiplier.
float optional_scale(const GgufFile& g, const std::string& key, float none) {
  const std::optional<double> v = g.find_float(key);
  return v && *v != 0.0 ? static_cast<float>(*v) : none;
}

}  // namespace

void granite_from_gguf(const GgufFile& g, ModelConfig& c) {
  const std::string p = kPrefix;
  c.rope_layout = RopeLayout::kInterleaved;
  // llama.cpp requires the logit scale (a Granite file without it is not one its converter wrote).
  if (!g.has(p + "logit_scale")) {
    throw Error(ErrorKind::kNotFound, "GGUF '" + g.path() + "': granite metadata key '" + p +
                                          "logit_scale' not found (HF config.json logits_scaling)");
  }
  c.logit_scale = static_cast<float>(g.get_float(p + "logit_scale"));
  c.embedding_scale = optional_scale(g, p + "embedding_scale", 1.0f);
  c.residual_scale = optional_scale(g, p + "residual_scale", 1.0f);
  c.attention_scale = optional_scale(g, p + "attention.scale", 0.0f);
  // Granite uses rope.scaling.finetuned as its RoPE switch: false means no layer rotates.
  if (!g.find_bool(p + "rope.scaling.finetuned").value_or(true)) c.nope_layers.assign(static_cast<size_t>(c.n_layers), true);
  // What llama.cpp's granite graph also runs and these layers do not: refused by name, never ignored.
  for (const char* t : {"blk.0.attn_output.bias", "blk.0.ffn_gate.bias", "blk.0.ffn_up.bias", "blk.0.ffn_down.bias",
                        "blk.0.ffn_gate_inp.weight", "blk.0.attn_qkv.weight", "rope_factors_long.weight"}) {
    if (g.find_tensor(t)) {
      throw Error(ErrorKind::kUnsupported, "GGUF '" + g.path() + "': granite tensor '" + t +
                                               "' (biases, experts, fused QKV or LongRoPE) is not supported");
    }
  }
  if (g.find_int(p + "expert_count").value_or(0) > 0) {
    throw Error(ErrorKind::kUnsupported, "GGUF '" + g.path() + "': granite with experts (" + p + "expert_count) is not supported");
  }
}

void granite_to_gguf(const ModelConfig& c, GgufWriter& w) {
  const std::string p = kPrefix;
  if (c.attention_scale > 0.0f) w.add_f32(p + "attention.scale", c.attention_scale);
  if (c.embedding_scale != 1.0f) w.add_f32(p + "embedding_scale", c.embedding_scale);
  if (c.residual_scale != 1.0f) w.add_f32(p + "residual_scale", c.residual_scale);
  w.add_f32(p + "logit_scale", c.logit_scale);
}

}  // namespace anelm::engine
