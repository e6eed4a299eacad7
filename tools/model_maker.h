// Writes randomly initialised but valid Qwen2/Llama models (GGUF or HF safetensors) for tests and benchmarks.
#pragma once

#include <cstdint>
#include <string>

#include "engine/model_config.h"
#include "engine/model_loader.h"
#include "engine/tensor.h"

namespace anelm::tools {

struct MakeModelOptions {
  engine::Arch arch = engine::Arch::kQwen2;
  std::string shape = "tiny";        // "tiny" (2 layers, d 64, 4/2 heads, d_ff 128) | "tiny256" (d 256, d_ff 512) | "qwen2.5-0.5b"
  engine::DType dtype = engine::DType::kF16;         // matrices: f32 | f16 | bf16 | any block type (GGUF only)
  engine::ModelFormat format = engine::ModelFormat::kGguf;
  uint64_t seed = 42;                // same seed: same values in the GGUF and the HF form
  std::string tokenizer;             // "" synthetic 512-token byte-level BPE; a .gguf (all tokenizer.*
                                     // keys copied); or an HF dir (vocab.json + merges.txt + added tokens)
  int layers = 0;                    // > 0 overrides the shape's layer count
  // An embedding model (GGUF only): writes `<arch>.pooling_type` as llama.cpp's converter does;
  // kLast also makes inputs end with <|endoftext|> (eos, tokenizer.ggml.add_eos_token), as
  // Qwen3-Embedding's GGUF.
  engine::Pooling pooling = engine::Pooling::kNone;
};

struct MadeModel {
  std::string path;        // the GGUF file or the HF directory
  engine::ModelConfig config;      // as a loader will read it back
  int64_t n_params = 0;
  int64_t data_bytes = 0;  // tensor bytes written
};

// Writes the model to `out` (a file for GGUF, a directory for HF) and streams tensors, so the
// full-size model never sits in memory. Weights: N(0, 2/sqrt(fan_in)) matrices, N(0, 0.5)
// embeddings, norms 1 + N(0, 0.05), biases N(0, 0.1); every value is a pure function of (seed,
// tensor, element), rounded to the stored dtype, so forms agree exactly. Llama GGUF stores Q/K rows
// permuted as llama.cpp's converter does (interleaved RoPE computes the same function as HF's
// rotate-half). Throws anelm::Error (kInvalidArgument for bad options).
MadeModel make_model(const MakeModelOptions& opts, const std::string& out);

}  // namespace anelm::tools
