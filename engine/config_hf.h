// ModelConfig from a HuggingFace model directory (config.json, optional generation_config.json).
#pragma once

#include <string>

#include "engine/model_config.h"

namespace anelm::engine {

// Parses config.json text (Qwen2ForCausalLM / LlamaForCausalLM). `source` names the file in errors.
// HF checkpoints are unpermuted, so both architectures use RopeLayout::kHalf. Throws kFormat for
// bad JSON or mistyped fields, kNotFound for missing required fields, kUnsupported for other
// architectures. Does not call validate().
ModelConfig config_from_hf_json(const std::string& json_text, const std::string& source);

// Reads `dir`/config.json, then merges the eos_token_id list of `dir`/generation_config.json when
// present. The model name is the directory name.
ModelConfig config_from_hf_dir(const std::string& dir);

}  // namespace anelm::engine
