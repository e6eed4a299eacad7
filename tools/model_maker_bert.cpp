// make_model for BERT and nomic-bert (llama.cpp archs bert, nomic-bert), GGUF only: the tensors and
// keys llama.cpp's BertModel and NomicBertModel converters write (engine/family_bert.cpp), at the
// shapes of the embedding models people serve.
#include "engine/error.h"
#include "tools/model_maker_plan.h"

namespace anelm::tools {

using namespace engine;

namespace {

// What both encoders share: the LayerNorms, bidirectional post-LN layers, the embeddings' norm and
// token types.
void encoder_config(ModelConfig& c) {
  c.n_kv_heads = c.n_heads;
  c.rope_dim = c.head_dim;
  c.rms_eps = 1e-12f;  // HF layer_norm_eps
  c.tie_embeddings = true;  // no LM head
  c.layer_norm = true;
  c.causal = false;
  c.norm_after_residual = true;
  c.embd_norm = true;
  c.n_token_types = 2;  // type_vocab_size
}

}  // namespace

ModelConfig bert_shape_config(const std::string& shape, int layers) {
  ModelConfig c;
  c.arch = Arch::kBert;
  if (shape == "tiny") {  // rows a multiple of 256: K-quants apply to every matrix
    c.n_layers = 3, c.d_model = 256, c.n_heads = 4, c.head_dim = 64, c.d_ff = 1024;
  } else if (shape == "bge-small") {  // BAAI/bge-small-en-v1.5 (and all-MiniLM-L12-v2's shape)
    c.n_layers = 12, c.d_model = 384, c.n_heads = 12, c.head_dim = 32, c.d_ff = 1536;
  } else if (shape == "bge-base") {  // BAAI/bge-base-en-v1.5
    c.n_layers = 12, c.d_model = 768, c.n_heads = 12, c.head_dim = 64, c.d_ff = 3072;
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown bert shape '" + shape + "' (tiny | bge-small | bge-base)");
  }
  if (layers > 0) c.n_layers = layers;
  c.max_ctx = 512;
  c.learned_positions = true;
  c.proj_bias = true;
  c.qkv_bias = true;
  c.gated_ffn = false;
  c.ffn_act = FfnAct::kGeluTanh;
  c.nope_layers.assign(static_cast<size_t>(c.n_layers), true);
  encoder_config(c);
  return c;
}

ModelConfig nomic_bert_shape_config(const std::string& shape, int layers) {
  ModelConfig c;
  c.arch = Arch::kNomicBert;
  if (shape == "tiny") {
    c.n_layers = 3, c.d_model = 256, c.n_heads = 4, c.head_dim = 64, c.d_ff = 768;
  } else if (shape == "nomic-embed-text-v1.5") {  // nomic-ai/nomic-embed-text-v1.5 (and v1)
    c.n_layers = 12, c.d_model = 768, c.n_heads = 12, c.head_dim = 64, c.d_ff = 3072;
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown nomic-bert shape '" + shape + "' (tiny | nomic-embed-text-v1.5)");
  }
  if (layers > 0) c.n_layers = layers;
  c.max_ctx = 2048;  // the converter's n_positions for v1 and v1.5
  c.rope_theta = 1000.0f;  // rotary_emb_base
  c.rope_layout = RopeLayout::kHalf;
  c.ffn_act = FfnAct::kSilu;
  encoder_config(c);
  return c;
}

void add_bert_global_plan(const ModelConfig& c, std::vector<Plan>& plan) {
  const int64_t d = c.d_model;
  plan.push_back({"token_types.weight", "", {c.n_token_types, d}, Kind::kBias});  // f32, as the converter keeps it
  plan.push_back({"token_embd_norm.weight", "", {d}, Kind::kNorm});
  plan.push_back({"token_embd_norm.bias", "", {d}, Kind::kBias});
}

// nomic-bert: a fused attn_qkv, a SwiGLU FFN (ffn_up, ffn_gate, ffn_down) and no projection biases.
void add_bert_block_plan(const ModelConfig& c, int layer, std::vector<Plan>& plan) {
  const int64_t d = c.d_model, ff = c.d_ff;
  const bool bias = c.proj_bias;
  const std::string g = "blk." + std::to_string(layer) + ".";
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    plan.push_back({g + name + ".weight", "", {rows, cols}, Kind::kMatrix});
    if (bias) plan.push_back({g + name + ".bias", "", {rows}, Kind::kBias});
  };
  if (c.arch == Arch::kNomicBert) {
    matrix("attn_qkv", 3 * d, d);
  } else {
    for (const char* p : {"attn_q", "attn_k", "attn_v"}) matrix(p, d, d);
  }
  matrix("attn_output", d, d);
  plan.push_back({g + "attn_output_norm.weight", "", {d}, Kind::kNorm});
  plan.push_back({g + "attn_output_norm.bias", "", {d}, Kind::kBias});
  matrix("ffn_up", ff, d);
  if (c.gated_ffn) matrix("ffn_gate", ff, d);
  matrix("ffn_down", d, ff);
  plan.push_back({g + "layer_output_norm.weight", "", {d}, Kind::kNorm});
  plan.push_back({g + "layer_output_norm.bias", "", {d}, Kind::kBias});
}

}  // namespace anelm::tools
