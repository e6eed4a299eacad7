// Model families that are Llama's decoder layers plus a few differences the config describes (no
// forward-pass branches of their own): each family's file maps its GGUF metadata onto ModelConfig
// and writes it back the way llama.cpp's converter does (make-model), so every key is named once.
#pragma once

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

// Gemma 3 (`gemma3`; engine/family_gemma3.cpp): q/k norms, post-attention and post-FFN norms,
// GeGLU, embeddings times sqrt(d_model), sliding-window local layers with their own RoPE base.
void gemma3_from_gguf(const GgufFile& g, ModelConfig& c);
void gemma3_to_gguf(const ModelConfig& c, GgufWriter& w);
// llama.cpp's default local layers of an n-layer Gemma 3: all but every 6th (5, 11, ...).
std::vector<bool> gemma3_swa_layers(int n_layers);

}  // namespace anelm::engine
