// Append-style GGUF v3 writer: metadata of every type, tensor infos, then tensor data streamed in order.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf.h"
#include "engine/tensor.h"

namespace anelm::engine {

// Usage: add_* metadata and add_tensor() declarations, then begin(path) writes the header, then
// write_data() receives every tensor's bytes in declaration order (any number of pieces per
// tensor; padding to the alignment is inserted automatically), then finish(). Memory use is the
// metadata only, so large models stream straight to disk.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = 32);
  ~GgufWriter();

  void add_u8(const std::string& key, uint8_t v);
  void add_i8(const std::string& key, int8_t v);
  void add_u16(const std::string& key, uint16_t v);
  void add_i16(const std::string& key, int16_t v);
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_u64(const std::string& key, uint64_t v);
  void add_i64(const std::string& key, int64_t v);
  void add_f32(const std::string& key, float v);
  void add_f64(const std::string& key, double v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, std::string_view v);
  void add_string_array(const std::string& key, const std::vector<std::string>& v);
  void add_i32_array(const std::string& key, const std::vector<int32_t>& v);
  void add_u32_array(const std::string& key, const std::vector<uint32_t>& v);
  void add_i64_array(const std::string& key, const std::vector<int64_t>& v);
  void add_f32_array(const std::string& key, const std::vector<float>& v);
  void add_f64_array(const std::string& key, const std::vector<double>& v);
  void add_bool_array(const std::string& key, const std::vector<bool>& v);
  // A value exactly as GgufFile::raw_value returns it (type id + payload): copies keys verbatim.
  void add_raw(const std::string& key, std::string_view raw_value);
  // Copies `key` from `src` verbatim.
  void copy_key(const GgufFile& src, const std::string& key);
  bool has_key(const std::string& key) const;

  // `shape` in PyTorch order ([rows, cols]); stored reversed as GGUF ne. Returns the byte size.
  int64_t add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape);

  void begin(const std::string& path);
  void write_data(const void* data, size_t nbytes);
  void finish();

 private:
  void add_key(const std::string& key, uint32_t type, const void* payload, size_t n);
  void pad_to_alignment();
  struct Tensor {
    std::string name;
    uint32_t ggml_type;
    std::vector<int64_t> ne;
    uint64_t offset;
    uint64_t nbytes;
  };
  uint32_t alignment_;
  std::vector<std::string> keys_;
  std::string kv_bytes_;  // encoded key/value pairs
  std::vector<Tensor> tensors_;
  uint64_t data_bytes_ = 0;  // data section size so far (with padding)
  std::string path_;
  std::ofstream out_;
  uint64_t file_pos_ = 0;
  size_t cur_ = 0;           // tensor receiving data
  uint64_t cur_written_ = 0;
  bool begun_ = false, finished_ = false;
};

}  // namespace anelm::engine
