// Maps GGUF metadata keys to ModelConfig fields: the common <arch>.* keys, then each architecture's own.
#include "engine/config_gguf.h"

#include <algorithm>
#include <filesystem>

#include "engine/error.h"
#include "engine/families.h"

namespace anelm::engine {

namespace {

int to_int(const GgufFile& g, const std::string& key, int64_t v) {
  if (v < INT32_MIN || v > INT32_MAX) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': metadata key '" + key + "' = " +
                                        std::to_string(v) + " is out of range");
  }
  return static_cast<int>(v);
}

int get_int32(const GgufFile& g, const std::string& key) { return to_int(g, key, g.get_int(key)); }

int find_int32(const GgufFile& g, const std::string& key, int fallback) {
  auto v = g.find_int(key);
  return v ? to_int(g, key, *v) : fallback;
}

// Token ids in tokenizer.ggml.* are uint32 and use 0xFFFFFFFF (or -1) for "none".
std::optional<int> find_token_id(const GgufFile& g, const std::string& key) {
  auto v = g.find_int(key);
  if (!v || *v < 0 || *v >= INT32_MAX) return std::nullopt;
  return static_cast<int>(*v);
}

// Qwen3.5: which blocks are Gated DeltaNet, and the DeltaNet sizes. block_count includes trailing
// MTP blocks (nextn_predict_layers), which the forward pass never runs.
void read_hybrid_layers(const GgufFile& g, const std::string& p, ModelConfig& c) {
  const int blocks = c.n_layers;
  const int mtp = find_int32(g, p + "nextn_predict_layers", 0);
  if (mtp < 0 || mtp >= blocks) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + p + "nextn_predict_layers = " + std::to_string(mtp) +
                                        " must be in [0, block_count = " + std::to_string(blocks) + ")");
  }
  c.n_layers = blocks - mtp;
  c.mixers.assign(static_cast<size_t>(c.n_layers), Mixer::kAttention);
  const std::string key = p + "attention.recurrent_layers";
  if (g.has(key)) {
    const std::vector<int64_t> flags = g.get_int_array(key);
    if (static_cast<int>(flags.size()) != blocks) {
      throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + key + " has " + std::to_string(flags.size()) +
                                          " entries, expected block_count = " + std::to_string(blocks));
    }
    for (int l = 0; l < c.n_layers; ++l) c.mixers[static_cast<size_t>(l)] = flags[static_cast<size_t>(l)] ? Mixer::kDeltaNet : Mixer::kAttention;
  } else {
    const int interval = find_int32(g, p + "full_attention_interval", 4);
    if (interval <= 0) {
      throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + p + "full_attention_interval = " +
                                          std::to_string(interval) + " must be > 0");
    }
    for (int l = 0; l < c.n_layers; ++l) c.mixers[static_cast<size_t>(l)] = (l + 1) % interval ? Mixer::kDeltaNet : Mixer::kAttention;
  }
  DeltaNetDims& dn = c.deltanet;
  dn.conv_kernel = get_int32(g, p + "ssm.conv_kernel");
  dn.d_k = get_int32(g, p + "ssm.state_size");
  dn.n_k_heads = get_int32(g, p + "ssm.group_count");
  dn.n_v_heads = get_int32(g, p + "ssm.time_step_rank");
  const int inner = get_int32(g, p + "ssm.inner_size");
  if (dn.n_v_heads <= 0 || inner <= 0 || inner % dn.n_v_heads != 0) {
    throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + p + "ssm.inner_size = " + std::to_string(inner) +
                                        " must be a positive multiple of ssm.time_step_rank = " + std::to_string(dn.n_v_heads));
  }
  dn.d_v = inner / dn.n_v_heads;
}

}  // namespace

ModelConfig config_from_gguf(const GgufFile& g) {
  ModelConfig c;
  const std::string arch = g.get_string("general.architecture");
  if (arch == "llama") {
    c.arch = Arch::kLlama;
    c.rope_layout = RopeLayout::kInterleaved;
    c.qkv_bias = false;
  } else if (arch == "qwen2") {
    c.arch = Arch::kQwen2;
    c.rope_layout = RopeLayout::kHalf;
    c.qkv_bias = true;
  } else if (arch == "qwen3") {
    c.arch = Arch::kQwen3;
    c.rope_layout = RopeLayout::kHalf;
    c.qkv_bias = false;
    c.qk_norm = true;
  } else if (arch == "qwen35") {
    c.arch = Arch::kQwen35;
    c.rope_layout = RopeLayout::kHalf;  // IMROPE: for text, NeoX pairs on the rotated dims
    c.qk_norm = true;
    c.attn_output_gate = true;
  } else if (arch == "granite") {
    c.arch = Arch::kGranite;
  } else if (arch == "smollm3") {
    c.arch = Arch::kSmolLM3;
  } else if (arch == "phi3") {
    c.arch = Arch::kPhi3;
  } else if (arch == "gemma3") {
    c.arch = Arch::kGemma3;
  } else if (arch == "gpt2") {
    c.arch = Arch::kGpt2;
  } else if (arch == "bert") {
    c.arch = Arch::kBert;
  } else if (arch == "nomic-bert") {
    c.arch = Arch::kNomicBert;
  } else {
    throw Error(ErrorKind::kUnsupported, "GGUF '" + g.path() + "': architecture '" + arch +
                                             "' is not supported (supported: llama, qwen2, qwen3, qwen35, granite, smollm3, phi3, gemma3, gpt2, bert, nomic-bert)");
  }
  c.name = g.find_string("general.name")
               .value_or(std::filesystem::path(g.path()).stem().string());
  const std::string p = arch + ".";
  c.n_layers = get_int32(g, p + "block_count");
  c.d_model = get_int32(g, p + "embedding_length");
  c.d_ff = get_int32(g, p + "feed_forward_length");
  c.n_heads = get_int32(g, p + "attention.head_count");
  c.n_kv_heads = find_int32(g, p + "attention.head_count_kv", c.n_heads);
  c.head_dim = find_int32(g, p + "attention.key_length", c.n_heads > 0 ? c.d_model / c.n_heads : 0);
  c.rope_dim = find_int32(g, p + "rope.dimension_count", c.head_dim);
  c.max_ctx = find_int32(g, p + "context_length", 2048);
  const bool layer_norm_eps = c.arch == Arch::kGpt2 || c.arch == Arch::kBert || c.arch == Arch::kNomicBert;
  c.rms_eps = static_cast<float>(g.get_float(p + (layer_norm_eps ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon")));
  c.rope_theta = static_cast<float>(g.find_float(p + "rope.freq_base").value_or(10000.0));

  if (auto v = g.find_int(p + "vocab_size")) {
    c.vocab_size = to_int(g, p + "vocab_size", *v);
  } else if (const GgufTensorInfo* t = g.find_tensor("token_embd.weight"); t && t->ne.size() == 2) {
    c.vocab_size = to_int(g, "token_embd.weight rows", t->ne[1]);
  } else if (g.has("tokenizer.ggml.tokens")) {
    c.vocab_size = to_int(g, "tokenizer.ggml.tokens", static_cast<int64_t>(g.array_size("tokenizer.ggml.tokens")));
  }

  if (c.arch == Arch::kQwen35) read_hybrid_layers(g, p, c);
  if (c.arch == Arch::kGranite) granite_from_gguf(g, c);
  if (c.arch == Arch::kSmolLM3) smollm3_from_gguf(g, c);
  if (c.arch == Arch::kPhi3) phi3_from_gguf(g, c);
  if (c.arch == Arch::kGemma3) gemma3_from_gguf(g, c);
  if (c.arch == Arch::kGpt2) gpt2_from_gguf(g, c);
  if (c.arch == Arch::kBert) bert_from_gguf(g, c);
  if (c.arch == Arch::kNomicBert) nomic_bert_from_gguf(g, c);

  c.tie_embeddings = g.find_tensor("output.weight") == nullptr;
  // llama.cpp's pooling types 0-4. Rank (4) is a reranker's classifier head over the last token,
  // read for Qwen3 (Qwen3-Reranker, as llama.cpp's converter writes it: cls.output = the LM head's
  // "yes" and "no" rows); other families' rank files, and unknown values, leave kNone: the model
  // still generates, and /v1/embeddings needs --embeddings (mean pooling) for it.
  const auto pooling = g.find_int(p + "pooling_type");
  if (pooling && *pooling >= 0 && *pooling <= 3) c.pooling = static_cast<Pooling>(*pooling);
  // A BERT file converted without sentence-transformers' modules.json has no pooling type (llama.cpp
  // then returns per-token vectors, which no embeddings API serves): mean, sentence-transformers' default.
  if (!c.causal && (!pooling || *pooling == 0)) c.pooling = Pooling::kMean;
  if (pooling && *pooling == 4 && c.arch == Arch::kQwen3) {
    const GgufTensorInfo* t = g.find_tensor("cls.output.weight");
    if (!t || t->ne.size() != 2) {
      throw Error(ErrorKind::kFormat, "GGUF '" + g.path() + "': " + p + "pooling_type = 4 (rank) needs the " +
                                          "classifier tensor cls.output.weight [n_labels, d_model], which " +
                                          (t ? "is not 2-D" : "is missing"));
    }
    c.pooling = Pooling::kRank;
    c.n_cls_out = to_int(g, "cls.output.weight rows", t->ne[1]);
  }
  // The declared id, as HF config.json's bos_token_id; whether a prompt gets it is the tokenizer's
  // business (tokenizer.ggml.add_bos_token).
  if (auto bos = find_token_id(g, "tokenizer.ggml.bos_token_id")) c.bos_id = *bos;
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    if (auto id = find_token_id(g, key)) {
      if (std::find(c.eos_ids.begin(), c.eos_ids.end(), *id) == c.eos_ids.end()) c.eos_ids.push_back(*id);
    }
  }
  return c;
}

}  // namespace anelm::engine
