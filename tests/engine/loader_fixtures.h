// Test fixtures for the loader suites: raw GGUF byte builders and tiny hand-made model files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/shared_data.h"

namespace anelm::testing::loader {

// Encoded GGUF metadata values (u32 type id + payload), for RawGguf::kv.
std::string kv_u32(uint32_t v);
std::string kv_f32(float v);
std::string kv_str(const std::string& s);
std::string kv_str_array(const std::vector<std::string>& v);
// Array header with an arbitrary (possibly lying) count and raw element bytes.
std::string kv_array_raw(uint32_t elem_type, uint64_t count, const std::string& elems);

struct RawTensor {
  std::string name;
  std::vector<int64_t> ne;  // GGUF order
  uint32_t type = 0;
  uint64_t offset = 0;
};

// A GGUF file assembled field by field, so tests can make every field wrong.
struct RawGguf {
  std::string magic = "GGUF";
  uint32_t version = 3;
  std::optional<uint64_t> n_tensors, n_kv;  // override the real counts
  std::vector<std::pair<std::string, std::string>> kv;
  std::vector<RawTensor> tensors;
  uint64_t alignment = 32;   // padding used before the data section
  uint64_t data_bytes = 0;   // zero bytes of tensor data appended
  std::string bytes() const;
};

using ::anelm::testing::read_file;
using ::anelm::testing::write_file;

// Tiny llama-shaped model: 2 layers, d_model 64, 4 heads / 2 kv heads, d_ff 128, vocab 96.
struct TinySpec {
  std::string omit;                 // a tensor name to leave out
  std::string reshape;              // a tensor name to give shape [3, 5]
  std::string q8_norm;              // a norm stored as q8_0
  bool f16_norms = false;
  bool qwen2 = false;
};
// Writes a GGUF with values sin(i * 0.37 + tensor_index) * 0.05; returns the path.
std::filesystem::path write_tiny_gguf(const std::filesystem::path& dir, const TinySpec& spec = {});

}  // namespace anelm::testing::loader
