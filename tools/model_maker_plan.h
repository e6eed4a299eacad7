// The tensor plan make_model streams (shared by the per-family files, e.g. model_maker_qwen35.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf_writer.h"
#include "engine/model_config.h"

namespace anelm::tools {

// What a tensor's random values are: kConv a short conv kernel (f32 in GGUF), kDecay a DeltaNet
// decay rate stored as llama.cpp's -exp(A_log) (negative, f32).
enum class Kind { kEmbed, kMatrix, kNorm, kBias, kRopeFreqs, kConv, kDecay, kRopeLong, kRopeShort };

// Qwen3.5's DeltaNet value heads: llama.cpp's converter stores them tiled (value head j reads key head
// j % N_k), HF grouped (j / (N_v / N_k)). An HF tensor holds the GGUF's values re-ordered along one
// axis: its rows (or the elements of a vector), or its columns (ssm_out's inputs), from index `at`
// on, in heads of `size` entries.
struct HfValueHeads {
  enum Axis { kNone, kRows, kCols } axis = kNone;
  int64_t at = 0, size = 0;
};

// One tensor to write. `permute_heads` > 0: a llama GGUF Q/K matrix whose rows are stored in
// llama.cpp's converter order for that many heads. `hf_zero_centred`: HF stores this RMSNorm weight
// as w - 1 (Qwen3.5's norms, except the DeltaNet gated norm).
struct Plan {
  std::string gguf_name, hf_name;
  std::vector<int64_t> shape;  // PyTorch order
  Kind kind;
  int permute_heads = 0;
  HfValueHeads hf_heads = {};
  bool hf_zero_centred = false;
  bool hf_transposed = false;  // HF stores it [in, out] (GPT-2's Conv1D)
  // Rows copied from another planned tensor (a reranker's head: the LM head's rows of its labels):
  // row r holds row `row_ids[r]` of `rows_of`, whose kind it takes.
  std::string rows_of = {};
  std::vector<int64_t> row_ids = {};
  Kind rows_of_kind = Kind::kMatrix;
};

// Qwen3.5: the config of a shape ("tiny" as the peer kit's generator, "qwen3.5-0.8b", "qwen3.5-2b";
// layers > 0 overrides the count, every 4th block attention), one block's tensors (GGUF and HF
// names), the qwen35.* metadata beyond the common keys, and the HF config.json (text_config).
engine::ModelConfig qwen35_shape_config(const std::string& shape, int layers);
void add_qwen35_block_plan(const engine::ModelConfig& c, int layer, std::vector<Plan>& plan);
void add_qwen35_hparams(const engine::ModelConfig& c, engine::GgufWriter& w);
void write_qwen35_hf_config(const engine::ModelConfig& c, engine::DType dtype, const std::string& dir);
// The GGUF index of HF entry `i` along a re-ordered axis (HfValueHeads) of a model with these heads.
int64_t qwen35_gguf_index(const HfValueHeads& h, const engine::DeltaNetDims& dn, int64_t i);

// Granite 3.x ("tiny", "granite-3.3-2b") and SmolLM3 ("tiny", "smollm3-3b"), GGUF only: Llama's
// tensor plan (Q/K rows permuted) under the family's config; layers > 0 overrides the count.
engine::ModelConfig granite_shape_config(const std::string& shape, int layers);
engine::ModelConfig smollm3_shape_config(const std::string& shape, int layers);
// Gemma 3 ("tiny": 7 layers with a 64-position window, "gemma-3-1b"), GGUF or HF.
engine::ModelConfig gemma3_shape_config(const std::string& shape, int layers);
// Gemma 3's HF form: the plan's HF names (pre_feedforward_layernorm, post_attention_layernorm,
// post_feedforward_layernorm) and zero-centred norms (Gemma3RMSNorm's 1 + w); config.json
// (Gemma3ForCausalLM).
void set_gemma3_hf_names(std::vector<Plan>& plan);
void write_gemma3_hf_config(const engine::ModelConfig& c, engine::DType dtype, const std::string& dir);

// Phi-3 ("tiny", "phi-4-mini", "phi-3.5-mini"), GGUF or HF: fused QKV and gate/up tensors per block,
// LongRoPE factors in the config (rope_factors_long/short, written as tensors), the converter's
// sliding_window for the shape.
engine::ModelConfig phi3_shape_config(const std::string& shape, int layers);
void add_phi3_block_plan(const engine::ModelConfig& c, int layer, std::vector<Plan>& plan);
int phi3_sliding_window(const std::string& shape);
// HF config.json of a phi3 shape (Phi3ForCausalLM, LongRoPE in rope_scaling).
void write_phi3_hf_config(const engine::ModelConfig& c, engine::DType dtype, const std::string& shape,
                          const std::string& dir);

// GPT-2 ("tiny", "gpt2-124m"), GGUF or HF: position_embd, LayerNorms with biases, fused attn_qkv
// with bias, ungated FFN with biases, tied head.
engine::ModelConfig gpt2_shape_config(const std::string& shape, int layers);
void add_gpt2_block_plan(const engine::ModelConfig& c, int layer, std::vector<Plan>& plan);
// GPT-2's HF form: every tensor's GPT2LMHeadModel name (engine/family_gpt2_hf.cpp's table; no
// `transformer.` prefix, as openai-community/gpt2), Conv1D weights [in, out]; config.json.
void set_gpt2_hf_names(std::vector<Plan>& plan);
void write_gpt2_hf_config(const engine::ModelConfig& c, engine::DType dtype, const std::string& dir);

// BERT ("tiny", "bge-small", "bge-base"), GGUF only: the embeddings' token types and LayerNorm, and
// per block separate Q/K/V, output, FFN (all with biases) and the two post-residual LayerNorms.
engine::ModelConfig bert_shape_config(const std::string& shape, int layers);
// nomic-bert ("tiny", "nomic-embed-text-v1.5"), GGUF only.
engine::ModelConfig nomic_bert_shape_config(const std::string& shape, int layers);
void add_bert_global_plan(const engine::ModelConfig& c, std::vector<Plan>& plan);
void add_bert_block_plan(const engine::ModelConfig& c, int layer, std::vector<Plan>& plan);

}  // namespace anelm::tools
