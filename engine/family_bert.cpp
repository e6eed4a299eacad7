// BERT as llama.cpp v0.5.0 runs it (src/models/bert.cpp, conversion/bert.py), for the embedding
// models people serve beside a chat model (bge, all-MiniLM, mxbai-embed, snowflake-arctic-embed):
// token + learned position + token-type-0 embeddings, LayerNormed; post-LN encoder layers
// (x = LN(x + attention(x)), x = LN(x + FFN(x))) with bidirectional attention, biases on every
// projection and a GELU FFN; no output norm and no LM head: the hidden states are pooled.
// nomic-bert (nomic-embed-text v1/v1.5, src/models/nomic-bert.cpp) is the same encoder with NeoX
// RoPE instead of learned positions, a fused attn_qkv, a SwiGLU FFN and no projection biases.
#include <initializer_list>
#include <string>

#include "engine/error.h"
#include "engine/families.h"

namespace anelm::engine {

namespace {

constexpr const char* kPrefix = "bert.";
constexpr const char* kNomicPrefix = "nomic-bert.";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What every BERT-style encoder shares: post-LN layers with bidirectional attention, a LayerNorm on
// the input embeddings, and token-type row 0 added to every token.
void encoder_from_gguf(const GgufFile& g, const std::string& p, ModelConfig& c) {
  c.causal = false;
  c.norm_after_residual = true;
  c.embd_norm = true;
  // token_types has token_type_count rows (llama.cpp refuses a BERT file without the key); row 0
  // ("sentence A") is added to every token.
  const int64_t types = g.find_int("tokenizer.ggml.token_type_count").value_or(0);
  if (types <= 0 || types > 1024) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': tokenizer.ggml.token_type_count = " + std::to_string(types) +
                                        " must be in 1..1024 (a BERT file defines its token types)");
  }
  c.n_token_types = static_cast<int>(types);
  if (const auto causal = g.find_bool(p + "attention.causal"); causal && *causal) {
    throw Error(ErrorKind::kUnsupported, "GGUF '" + g.path() + "': " + p + "attention.causal = true is not supported (an encoder is bidirectional)");
  }
}

void refuse_tensors(const GgufFile& g, const char* arch, std::initializer_list<const char*> names, const char* why) {
  for (const char* t : names) {
    if (g.find_tensor(t)) {
      throw Error(ErrorKind::kUnsupported, "GGUF '" + g.path() + "': " + arch + " tensor '" + t + "' is not supported (" + why + ")");
    }
  }
}

}  // namespace

void bert_from_gguf(const GgufFile& g, ModelConfig& c) {
  const std::string p = kPrefix;
  gpt2_style_from_gguf(g, p, c);  // the learned positions: position_embd has context_length rows
  encoder_from_gguf(g, p, c);
  // What llama.cpp's bert graph runs and this engine does not: refused by name, never ignored.
  refuse_tensors(g, "bert", {"blk.0.attn_qkv.weight", "blk.0.attn_norm_2.weight", "blk.0.attn_q_norm.weight",
                             "cls.weight", "cls.output.weight"},
                 "a BERT encoder with separate Q/K/V and no classifier head: embedding models, not rerankers");
}

void nomic_bert_from_gguf(const GgufFile& g, ModelConfig& c) {
  c.layer_norm = true;
  c.gated_ffn = true;  // SwiGLU: silu(ffn_gate x) * ffn_up x, no biases
  c.ffn_act = FfnAct::kSilu;
  c.rope_layout = RopeLayout::kHalf;  // LLAMA_ROPE_TYPE_NEOX, over every dim (rotary_emb_fraction 1)
  encoder_from_gguf(g, kNomicPrefix, c);
  // Biases the converter never writes (nomic-embed-text has none; llama.cpp would add the attention
  // ones and drop the FFN ones): refused by name rather than half used.
  refuse_tensors(g, "nomic-bert", {"blk.0.attn_qkv.bias", "blk.0.attn_q.bias", "blk.0.attn_output.bias",
                                   "blk.0.ffn_up.bias", "blk.0.ffn_down.bias"},
                 "nomic-bert's projections have no biases");
}

void bert_to_gguf(const ModelConfig& c, GgufWriter& w) {
  const std::string p = c.arch == Arch::kNomicBert ? kNomicPrefix : kPrefix;
  gpt2_style_to_gguf(c, p, w);
  if (c.arch == Arch::kNomicBert) w.add_f32(p + "rope.freq_base", c.rope_theta);
  w.add_bool(p + "attention.causal", false);
  w.add_u32(p + "pooling_type", static_cast<uint32_t>(c.pooling));
  w.add_u32("tokenizer.ggml.token_type_count", static_cast<uint32_t>(c.n_token_types));
}

TensorLookup bert_tensor_names(TensorLookup file) {
  return [file = std::move(file)](const std::string& name) -> std::optional<TensorView> {
    // The layer's two LayerNorms under the roles they take in the loader (attn_norm, ffn_norm).
    static const std::pair<const char*, const char*> kRenames[] = {
        {".attn_norm.weight", ".attn_output_norm.weight"},
        {".attn_norm.bias", ".attn_output_norm.bias"},
        {".ffn_norm.weight", ".layer_output_norm.weight"},
        {".ffn_norm.bias", ".layer_output_norm.bias"},
    };
    if (name.rfind("blk.", 0) == 0) {
      for (const auto& [from, to] : kRenames) {
        if (ends_with(name, from)) return file(name.substr(0, name.size() - std::string(from).size()) + to);
      }
    }
    return file(name);
  };
}

}  // namespace anelm::engine
