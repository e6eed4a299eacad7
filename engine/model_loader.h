// Loads a model (GGUF file or HF directory) into a validated config plus bound weight views.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/tensor.h"
#include "engine/weights.h"

namespace anelm::engine {

enum class ModelFormat { kGguf, kHf };

struct LoadedModel {
  ModelFormat format = ModelFormat::kGguf;
  std::string path;
  ModelConfig config;
  ModelWeights weights;                       // views into `owners`
  std::vector<std::shared_ptr<void>> owners;  // mapped files and owned (converted) buffers
  int64_t weight_bytes = 0;                   // bytes of all bound weight tensors
};

// Throws anelm::Error naming file, tensor, field and values on any problem. `requant` converts
// matrices (not norms/biases) to that type at load (f16 or any block type); a matrix whose rows do
// not fit the type's block takes kernels::writable_type_for's 32-element fallback, or keeps its
// stored type when none fits. nullopt keeps the stored types. Matrices (tok_embd, lm_head, wq..w_down)
// may be any DType; norms and biases are always F32 (F16/BF16 ones are converted into owned
// buffers). Shape/dtype problems are all listed at once.
// `progress(done, total)` is called after each bound tensor is converted (or kept): re-quantising a
// large model takes long enough that people want to see it move.
using ConvertProgress = std::function<void(int64_t done, int64_t total)>;
std::unique_ptr<LoadedModel> load_model(const std::string& path,
                                        std::optional<DType> requant = std::nullopt,
                                        const ConvertProgress& progress = {});

// --reranking for a Qwen3 reranker stored as a causal LM (an HF Qwen3-Reranker directory, or a GGUF
// converted without its head): the LM head's rows `labels` ("yes", "no") are copied into the
// classifier head and the model becomes a kRank reranker, the head llama.cpp's converter would have
// cut. A model that has its head keeps it. Throws kUnsupported for another family and
// kInvalidArgument for no labels or one outside the vocabulary.
void derive_rerank_head(LoadedModel& m, std::span<const int> labels);

// GGUF when `path` is a file starting with the GGUF magic; HF for a directory (config.json +
// safetensors) or a .safetensors file inside one. Throws kNotFound / kFormat otherwise.
ModelFormat detect_model_format(const std::string& path);

}  // namespace anelm::engine
