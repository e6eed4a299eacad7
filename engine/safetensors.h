// safetensors reader (single file or sharded via model.safetensors.index.json) and streaming writer.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tensor.h"

namespace anelm::engine {

class MappedFile;

struct SafetensorsEntry {
  std::string name;
  std::string dtype;            // as stored: "F32", "BF16", "I64", ...
  std::vector<int64_t> shape;   // PyTorch order
  const void* data = nullptr;   // into the mapping
  int64_t nbytes = 0;
  std::string file;             // the shard holding it
};

// All tensors of one checkpoint, mapped read-only. Const after open: thread-safe.
class SafetensorsFile {
 public:
  // `path` is a .safetensors file, a model.safetensors.index.json, or a directory holding either
  // (the index wins). Throws anelm::Error naming file and tensor for every malformed header, JSON,
  // offset range or size, and for a shard the index names but that is missing.
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();

  const std::vector<std::string>& names() const { return names_; }  // sorted
  const SafetensorsEntry* find(std::string_view name) const;
  // View of an F32/F16/BF16 tensor; other dtypes throw kUnsupported naming tensor and dtype,
  // an absent name throws kNotFound.
  TensorView tensor_view(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // __metadata__
  const std::vector<std::shared_ptr<MappedFile>>& files() const { return files_; }

 private:
  SafetensorsFile() = default;
  void add_file(const std::string& path, const std::vector<std::string>* expected);
  std::vector<std::shared_ptr<MappedFile>> files_;
  std::map<std::string, SafetensorsEntry, std::less<>> entries_;
  std::vector<std::string> names_;
  std::map<std::string, std::string> metadata_;
};

// Bytes per element of a safetensors dtype string; 0 when unknown.
int64_t safetensors_dtype_size(std::string_view dtype);
const char* safetensors_dtype_name(DType t);  // "F32" / "F16" / "BF16"; throws for block types

// Streaming writer: the header (all names, dtypes, shapes) is written first, then each tensor's
// bytes in declaration order, in as many append_data() pieces as the caller likes, so a large
// model never has to sit in memory. finish() checks every byte arrived.
class SafetensorsWriter {
 public:
  struct Decl {
    std::string name;
    DType dtype = DType::kF32;  // F32, F16 or BF16
    std::vector<int64_t> shape;
  };
  SafetensorsWriter(const std::string& path, const std::vector<Decl>& tensors,
                    const std::map<std::string, std::string>& metadata = {});
  ~SafetensorsWriter();
  void append_data(const void* data, size_t nbytes);
  void finish();

 private:
  std::string path_;
  std::ofstream out_;
  uint64_t expected_ = 0;
  uint64_t written_ = 0;
  bool finished_ = false;
};

}  // namespace anelm::engine
