// GGUF v2/v3 reader: memory-maps the file, parses metadata and tensor infos with bounds checks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/tensor.h"

namespace anelm::engine {

class MappedFile;

// GGUF metadata value types (spec numbering).
enum class GgufType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};

// ggml tensor type ids <-> DType. ggml_type_name gives "q4_K" etc. for every known id ("?" otherwise);
// dtype_from_ggml is nullopt for ids anelm cannot compute with.
const char* ggml_type_name(uint32_t ggml_type);
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
uint32_t ggml_type_of(DType t);
const char* gguf_type_name(GgufType t);
// Bytes of `numel` elements of a known ggml type (-1 for unknown ids).
int64_t ggml_type_nbytes(uint32_t ggml_type, int64_t numel);

struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;          // raw ggml type id
  std::vector<int64_t> ne;         // GGUF order: ne[0] is the contiguous dimension
  uint64_t offset = 0;             // relative to the data section
};

class GgufFile {
 public:
  // Throws anelm::Error naming the file and what is wrong (magic, version, key, tensor, offsets).
  static std::unique_ptr<GgufFile> open(const std::string& path);
  ~GgufFile();

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }

  bool has(std::string_view key) const;
  GgufType type_of(std::string_view key) const;             // throws kNotFound
  // Typed getters throw Error(kNotFound) or Error(kFormat) naming the key and the type found.
  std::string get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;             // any integer type
  double get_float(std::string_view key) const;            // float32/64 or any integer type
  bool get_bool(std::string_view key) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<double> get_float_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  std::optional<std::string> find_string(std::string_view key) const;
  std::optional<int64_t> find_int(std::string_view key) const;
  std::optional<double> find_float(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  std::vector<std::string> keys() const;
  // Array element type and length of an array-valued key (throws kNotFound / kFormat).
  GgufType array_type_of(std::string_view key) const;
  uint64_t array_size(std::string_view key) const;
  // The value's bytes exactly as stored (u32 type id, then payload; arrays include their element
  // type and count). Lets a writer copy keys (e.g. all tokenizer.*) verbatim. Valid while *this lives.
  std::string_view raw_value(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // View in PyTorch order (reversed ne); throws for unsupported ggml types, naming the tensor.
  TensorView tensor_view(const GgufTensorInfo& info) const;
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const;
  uint64_t alignment() const { return alignment_; }

  struct Value;  // parsed metadata value (defined in gguf.cpp)

 private:
  GgufFile() = default;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t data_offset_ = 0;
  uint64_t alignment_ = 32;
  std::unique_ptr<MappedFile> file_;
  std::map<std::string, std::shared_ptr<Value>, std::less<>> kv_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace anelm::engine
