// ModelConfig from GGUF metadata (general.architecture llama | qwen2 | qwen3 | qwen35 | granite | smollm3 | gemma3
// and the <arch>.* keys; granite and smollm3 through engine/families.h).
#pragma once

#include "engine/gguf.h"
#include "engine/model_config.h"

namespace anelm::engine {

// Reads the hyperparameters, vocab size (<arch>.vocab_size, else token_embd rows, else the
// tokenizer.ggml.tokens length), declared BOS and EOS/EOT/EOM ids. qwen2: qkv_bias, RopeLayout::kHalf (NEOX);
// llama: RopeLayout::kInterleaved (llama.cpp's converter permuted Q/K). tie_embeddings when the file
// has no output.weight. Throws kUnsupported for other architectures and kNotFound/kFormat for
// missing or mistyped keys. Does not call validate().
ModelConfig config_from_gguf(const GgufFile& g);

}  // namespace anelm::engine
