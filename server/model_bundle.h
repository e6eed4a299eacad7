// Loads the engine and the tokenizer for one model path: the only place engine and tokenizer meet.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace anelm::server {

// Tokenizer of a GGUF file (from its metadata) or an HF directory (tokenizer files).
std::unique_ptr<tok::Tokenizer> load_tokenizer(const std::string& model_path);

struct ModelBundle {
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<tok::Tokenizer> tokenizer;
  std::string model_id;  // name reported by /v1/models
};

// The /v1/models id of a model path when --alias is not given: "ORG/NAME" for a directory in a
// HuggingFace cache snapshot, else the file or directory name.
std::string default_model_id(const std::string& model_path);

// `reranking` (--reranking): a Qwen3 reranker stored as a causal LM is served as a reranker, its
// classifier head the LM head's rows of the tokens "yes" and "no" (engine::derive_rerank_head).
ModelBundle load_model_bundle(engine::EngineOptions opts, const engine::LoadProgress& progress = {},
                              bool reranking = false);

}  // namespace anelm::server
