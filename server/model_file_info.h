// What a model listing says about the served file (Ollama's /api/tags, /api/show, /api/ps): format,
// size, parameter count and quantization, read once from the file's header at start-up.
#pragma once

#include <cstdint>
#include <string>

namespace anelm::server {

struct ModelFileInfo {
  std::string format = "gguf";   // "gguf" or "safetensors"
  int64_t size_bytes = 0;        // the file, or every .safetensors file of the directory
  int64_t n_params = 0;          // elements of every tensor; 0 when unknown
  std::string quantization;      // llama.cpp's file type name ("Q4_K_M", "Q8_0", "F16", ...); "" unknown
  int64_t modified_unix = 0;     // the file's modification time
  // 64 hex digits identifying the file (FNV-1a over path, size and time; not a hash of its bytes,
  // which would mean reading gigabytes at start-up).
  std::string digest;
};

// Never throws: what cannot be read stays at its default (and is logged at debug level).
ModelFileInfo describe_model_file(const std::string& path);

// Ollama's parameter_size: "494.03M", "7.6B", "8B".
std::string human_parameter_count(int64_t n);

// llama.cpp's LLAMA_FTYPE name for general.file_type ("" for ids it does not name).
const char* llama_ftype_name(int64_t ftype);

}  // namespace anelm::server
