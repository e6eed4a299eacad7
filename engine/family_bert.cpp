// BERT as llama.cpp v0.5.0 runs it (src/models/bert.cpp, conversion/bert.py), for the embedding
// models people serve beside a chat model (bge, all-MiniLM, mxbai-embed, snowflake-arctic-embed):
// token + learned position + token-type-0 embeddings, LayerNormed; post-LN encoder layers
// (x = LN(x + attention(x)), x = LN(x + FFN(x))) with bidirectional attention, biases on every
// projection and a GELU FFN; no output norm and no LM head: the hidden states are pooled.
#include <string>

#include "engine/error.h"
#include "engine/families.h"

namespace anelm::engine {

namespace {

constexpr const char* kPrefix = "bert.";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void bert_from_gguf(const GgufFile& g, ModelConfig& c) {
  const std::string p = kPrefix;
  c.layer_norm = true;
  c.gated_ffn = false;
  c.ffn_act = FfnAct::kGeluTanh;  // ggml_gelu, as GPT-2's
  c.learned_positions = true;
  c.qkv_bias = true;
  c.causal = false;
  c.norm_after_residual = true;
  c.embd_norm = true;
  // position_embd has exactly context_length rows: required, as GPT-2's.
  const int64_t ctx = g.get_int(p + "context_length");
  if (ctx <= 0 || ctx > ModelLimits::kMaxCtx) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + p + "context_length = " + std::to_string(ctx) +
                                        " must be in 1.." + std::to_string(ModelLimits::kMaxCtx));
  }
  c.max_ctx = static_cast<int>(ctx);
  if (c.n_layers > 0 && c.n_layers <= ModelLimits::kMaxLayers) c.nope_layers.assign(static_cast<size_t>(c.n_layers), true);
  c.rope_dim = c.head_dim;
  // token_types has token_type_count rows (llama.cpp refuses a BERT file without the key); row 0
  // ("sentence A") is added to every token.
  const int64_t types = g.find_int("tokenizer.ggml.token_type_count").value_or(0);
  if (types <= 0 || types > 1024) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': tokenizer.ggml.token_type_count = " + std::to_string(types) +
                                        " must be in 1..1024 (a BERT file defines its token types)");
  }
  c.n_token_types = static_cast<int>(types);
  if (const auto causal = g.find_bool(p + "attention.causal"); causal && *causal) {
    throw Error(ErrorKind::kUnsupported, "GGUF '" + g.path() + "': " + p + "attention.causal = true is not supported (BERT is bidirectional)");
  }
  // What llama.cpp's bert graph runs and this engine does not: refused by name, never ignored.
  for (const char* t : {"blk.0.attn_qkv.weight", "blk.0.attn_norm_2.weight", "blk.0.attn_q_norm.weight", "cls.weight",
                        "cls.output.weight"}) {
    if (g.find_tensor(t)) {
      throw Error(ErrorKind::kUnsupported, "GGUF '" + g.path() + "': bert tensor '" + t +
                                               "' is not supported (a BERT encoder with separate Q/K/V and no "
                                               "classifier head: embedding models, not rerankers)");
    }
  }
}

void bert_to_gguf(const ModelConfig& c, GgufWriter& w) {
  const std::string p = kPrefix;
  w.add_u32(p + "block_count", static_cast<uint32_t>(c.n_layers));
  w.add_u32(p + "context_length", static_cast<uint32_t>(c.max_ctx));
  w.add_u32(p + "embedding_length", static_cast<uint32_t>(c.d_model));
  w.add_u32(p + "feed_forward_length", static_cast<uint32_t>(c.d_ff));
  w.add_u32(p + "attention.head_count", static_cast<uint32_t>(c.n_heads));
  w.add_f32(p + "attention.layer_norm_epsilon", c.rms_eps);
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
