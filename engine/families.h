// Model families that are Llama's decoder layers plus a few differences the config describes (no
// forward-pass branches of their own): each family's file maps its GGUF metadata onto ModelConfig
// and writes it back the way llama.cpp's converter does (make-model), so every key is named once.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "engine/model_config.h"

namespace anelm::engine {

// Granite 3.x (general.architecture `granite`; engine/family_granite.cpp): embedding, residual,
// attention and logit multipliers. `from` runs after the common <arch>.* keys were read.
void granite_from_gguf(const GgufFile& g, ModelConfig& c);
void granite_to_gguf(const ModelConfig& c, GgufWriter& w);

// SmolLM3 (`smollm3`; engine/family_smollm3.cpp): Llama with no RoPE in every 4th layer.
// Its GGUF has only the common keys (plus <arch>.vocab_size, as every Llama-converted file).
void smollm3_from_gguf(const GgufFile& g, ModelConfig& c);
// The NoPE layers of an n-layer SmolLM3: every 4th (llama.cpp's n_no_rope_layer_step, HF's
// no_rope_layer_interval).
std::vector<bool> smollm3_nope_layers(int n_layers);

// Phi-3 / Phi-3.5 / Phi-4-mini (`phi3`; engine/family_phi3.cpp): NeoX RoPE over rope.dimension_count
// dims (Phi-4-mini: 96 of 128), LongRoPE factor tensors chosen by the run context with an attention
// factor on the rotated dims, fused QKV and gate/up tensors.
void phi3_from_gguf(const GgufFile& g, ModelConfig& c);
// The phi3.* keys beyond the common ones, as llama.cpp's Phi3MiniModel converter writes them
// (sliding_window: HF's, 0 when absent; llama.cpp reads it and runs full attention).
void phi3_to_gguf(const ModelConfig& c, int sliding_window, GgufWriter& w);
// The LongRoPE factors for a run of `ctx` tokens per sequence, as llama.cpp's get_rope_factors
// chooses them: long when ctx > rope_orig_ctx, else short. No-op for a model without them.
void select_rope_factors(ModelConfig& c, int ctx);

// A model file's tensors by name (nullopt: absent).
using TensorLookup = std::function<std::optional<TensorView>(const std::string&)>;
// Phi-3's fused tensors served under the separate names the loader binds, as row views of the file's
// tensor (no copy): attn_q/attn_k/attn_v from attn_qkv [q_dim + 2 kv_dim rows], ffn_gate and ffn_up
// from ffn_up [2 d_ff rows, gate first] (HF: qkv_proj, gate_up_proj). Separate Q/K/V in the file are
// used as they are (llama.cpp accepts both). Throws Error naming the fused tensor when its rows do
// not split.
TensorLookup phi3_split_fused(const ModelConfig& c, TensorLookup file);
// The same for attn_qkv only (nomic-bert: its FFN tensors are separate).
TensorLookup split_fused_qkv(const ModelConfig& c, TensorLookup file);

// Gemma 3 (`gemma3`; engine/family_gemma3.cpp): q/k norms, post-attention and post-FFN norms,
// GeGLU, embeddings times sqrt(d_model), sliding-window local layers with their own RoPE base.
void gemma3_from_gguf(const GgufFile& g, ModelConfig& c);
void gemma3_to_gguf(const ModelConfig& c, GgufWriter& w);
// llama.cpp's default local layers of an n-layer Gemma 3: all but every 6th (5, 11, ...).
std::vector<bool> gemma3_swa_layers(int n_layers);

// What GPT-2 and BERT share (engine/family_gpt2.cpp): LayerNorms with biases, an ungated tanh-GELU
// FFN, biases on every projection, learned positions (<p>context_length rows, required), no RoPE;
// and their common <p>* keys as llama.cpp's converter writes them (p: "gpt2.", "bert.").
void gpt2_style_from_gguf(const GgufFile& g, const std::string& p, ModelConfig& c);
void gpt2_style_to_gguf(const ModelConfig& c, const std::string& p, GgufWriter& w);
// GPT-2 (`gpt2`; engine/family_gpt2.cpp): LayerNorms with biases, a GELU FFN with biases, learned
// absolute positions (position_embd, context_length rows), fused QKV with bias, no RoPE.
void gpt2_from_gguf(const GgufFile& g, ModelConfig& c);
// Every gpt2.* key, as llama.cpp's GPT2Model converter writes them (only these: no RoPE, no KV
// heads, no key_length).
void gpt2_to_gguf(const ModelConfig& c, GgufWriter& w);
// GPT-2's fused attn_qkv (weight [3 d_model rows], bias [3 d_model]) served as the separate
// attn_q/attn_k/attn_v weights and biases the loader binds, as views of the file's tensors (no
// copy). Throws Error naming the fused tensor when its shape does not split.
TensorLookup gpt2_split_fused(const ModelConfig& c, TensorLookup file);
// GPT-2's HF checkpoint (engine/family_gpt2_hf.cpp): the HF name of a GGUF tensor name (without the
// optional `transformer.` prefix; `conv1d`: HF's Conv1D stores it [in, out]); nullopt for other names.
struct Gpt2HfName {
  std::string name;
  bool conv1d = false;
};
std::optional<Gpt2HfName> gpt2_hf_name(const std::string& gguf);
// The HF file's tensors served under the GGUF names, the Conv1D weights repacked once to [out, in]
// into buffers kept in `owners` (which must outlive the lookup's views); throws Error naming the HF
// tensor when a Conv1D weight's shape is not [in, out] for `c`.
TensorLookup gpt2_hf_tensors(const ModelConfig& c, TensorLookup file, std::vector<std::shared_ptr<void>>& owners);

// BERT (`bert`; engine/family_bert.cpp): an encoder served as an embedding model: bidirectional
// attention, post-LN layers, a LayerNorm on the summed token, position and token-type-0 embeddings.
void bert_from_gguf(const GgufFile& g, ModelConfig& c);
// nomic-bert (`nomic-bert`; nomic-embed-text v1/v1.5): the same encoder with NeoX RoPE instead of
// learned positions, a fused attn_qkv (split_fused_qkv), SwiGLU and no projection biases.
void nomic_bert_from_gguf(const GgufFile& g, ModelConfig& c);
// Every bert.* / nomic-bert.* key (and token_type_count), as llama.cpp's BertModel and NomicBertModel
// converters write them.
void bert_to_gguf(const ModelConfig& c, GgufWriter& w);
// BERT's layer norms (attn_output_norm, layer_output_norm) served under the names the loader binds
// for a layer's two norms (attn_norm, ffn_norm).
TensorLookup bert_tensor_names(TensorLookup file);

}  // namespace anelm::engine
