// GGUF v2/v3 parser over a memory map: every read is bounds-checked and every error names the file.
#include "engine/gguf.h"

#include <bit>
#include <cstring>
#include <limits>

#include "engine/error.h"
#include "engine/mapped_file.h"

namespace anelm::engine {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kMaxDims = 4;                  // GGML_MAX_DIMS

struct GgmlTypeInfo {
  const char* name;
  int64_t block_elems;  // 0: id unused (removed from ggml)
  int64_t block_bytes;
};

// Block geometry of every ggml type id up to MXFP4, so files holding types we cannot compute with
// still open and bounds-check; ids marked 0 were removed from ggml.
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {"f32", 1, 4},        {"f16", 1, 2},       {"q4_0", 32, 18},    {"q4_1", 32, 20},
    {"q4_2", 0, 0},       {"q4_3", 0, 0},      {"q5_0", 32, 22},    {"q5_1", 32, 24},
    {"q8_0", 32, 34},     {"q8_1", 32, 36},    {"q2_K", 256, 84},   {"q3_K", 256, 110},
    {"q4_K", 256, 144},   {"q5_K", 256, 176},  {"q6_K", 256, 210},  {"q8_K", 256, 292},
    {"iq2_xxs", 256, 66}, {"iq2_xs", 256, 74}, {"iq3_xxs", 256, 98}, {"iq1_s", 256, 50},
    {"iq4_nl", 32, 18},   {"iq3_s", 256, 110}, {"iq2_s", 256, 82},  {"iq4_xs", 256, 136},
    {"i8", 1, 1},         {"i16", 1, 2},       {"i32", 1, 4},       {"i64", 1, 8},
    {"f64", 1, 8},        {"iq1_m", 256, 56},  {"bf16", 1, 2},      {"q4_0_4_4", 0, 0},
    {"q4_0_4_8", 0, 0},   {"q4_0_8_8", 0, 0},  {"tq1_0", 256, 54},  {"tq2_0", 256, 66},
    {"iq4_nl_4_4", 0, 0}, {"iq4_nl_4_8", 0, 0}, {"iq4_nl_8_8", 0, 0}, {"mxfp4", 32, 17},
};
constexpr uint32_t kNumGgmlTypes = sizeof(kGgmlTypes) / sizeof(kGgmlTypes[0]);

const GgmlTypeInfo* ggml_info(uint32_t id) {
  if (id >= kNumGgmlTypes || kGgmlTypes[id].block_elems == 0) return nullptr;
  return &kGgmlTypes[id];
}

// Fixed payload size of a scalar metadata type; 0 for string/array/unknown.
uint64_t scalar_size(uint32_t t) {
  switch (static_cast<GgufType>(t)) {
    case GgufType::kUint8: case GgufType::kInt8: case GgufType::kBool: return 1;
    case GgufType::kUint16: case GgufType::kInt16: return 2;
    case GgufType::kUint32: case GgufType::kInt32: case GgufType::kFloat32: return 4;
    case GgufType::kUint64: case GgufType::kInt64: case GgufType::kFloat64: return 8;
    default: return 0;
  }
}

bool is_int_type(GgufType t) {
  switch (t) {
    case GgufType::kUint8: case GgufType::kInt8: case GgufType::kUint16: case GgufType::kInt16:
    case GgufType::kUint32: case GgufType::kInt32: case GgufType::kUint64: case GgufType::kInt64:
      return true;
    default: return false;
  }
}

bool is_float_type(GgufType t) { return t == GgufType::kFloat32 || t == GgufType::kFloat64; }

}  // namespace

const char* gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::kUint8: return "uint8";
    case GgufType::kInt8: return "int8";
    case GgufType::kUint16: return "uint16";
    case GgufType::kInt16: return "int16";
    case GgufType::kUint32: return "uint32";
    case GgufType::kInt32: return "int32";
    case GgufType::kFloat32: return "float32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kUint64: return "uint64";
    case GgufType::kInt64: return "int64";
    case GgufType::kFloat64: return "float64";
  }
  return "unknown";
}

const char* ggml_type_name(uint32_t ggml_type) {
  const GgmlTypeInfo* info = ggml_info(ggml_type);
  return info ? info->name : "?";
}

int64_t ggml_type_nbytes(uint32_t ggml_type, int64_t numel) {
  const GgmlTypeInfo* info = ggml_info(ggml_type);
  return info ? numel / info->block_elems * info->block_bytes : -1;
}

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
  switch (ggml_type) {
    case 0: return DType::kF32;
    case 1: return DType::kF16;
    case 2: return DType::kQ4_0;
    case 3: return DType::kQ4_1;
    case 6: return DType::kQ5_0;
    case 7: return DType::kQ5_1;
    case 8: return DType::kQ8_0;
    case 10: return DType::kQ2_K;
    case 11: return DType::kQ3_K;
    case 12: return DType::kQ4_K;
    case 13: return DType::kQ5_K;
    case 14: return DType::kQ6_K;
    case 20: return DType::kIQ4_NL;
    case 23: return DType::kIQ4_XS;
    case 30: return DType::kBF16;
    default: return std::nullopt;
  }
}

uint32_t ggml_type_of(DType t) {
  switch (t) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kQ4_0: return 2;
    case DType::kQ4_1: return 3;
    case DType::kQ5_0: return 6;
    case DType::kQ5_1: return 7;
    case DType::kQ8_0: return 8;
    case DType::kQ2_K: return 10;
    case DType::kQ3_K: return 11;
    case DType::kQ4_K: return 12;
    case DType::kQ5_K: return 13;
    case DType::kQ6_K: return 14;
    case DType::kIQ4_NL: return 20;
    case DType::kIQ4_XS: return 23;
    case DType::kBF16: return 30;
  }
  return 0;
}

// One parsed metadata value. Scalars fill i/f/b/s; arrays fill exactly one of ints/floats/strs
// (bool arrays go to ints; arrays of arrays keep only their count).
struct GgufFile::Value {
  GgufType type = GgufType::kUint8;
  GgufType elem_type = GgufType::kUint8;
  int64_t i = 0;
  bool u64_too_big = false;  // a uint64 above INT64_MAX
  double f = 0;
  bool b = false;
  std::string s;
  uint64_t count = 0;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strs;
  std::string_view raw;  // type id + payload as stored in the file
};

namespace {

// Cursor over the mapped bytes; every read checks the remaining length first.
class Reader {
 public:
  Reader(const std::string& path, const uint8_t* data, uint64_t size)
      : path_(path), data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorKind::kFormat, "GGUF '" + path_ + "': " + what);
  }

  void need(uint64_t n, const std::string& what) const {
    if (n > remaining()) {
      fail("truncated while reading " + what + " at offset " + std::to_string(pos_) + ": need " +
           std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left (file size " +
           std::to_string(size_) + ")");
    }
  }

  template <typename T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const std::string& what) {
    uint64_t len = read<uint64_t>(what + " length");
    if (len > remaining()) {
      fail("string length " + std::to_string(len) + " of " + what + " at offset " +
           std::to_string(pos_ - 8) + " runs past the end of the file (" + std::to_string(remaining()) +
           " bytes left)");
    }
    std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }

  void skip(uint64_t n, const std::string& what) {
    need(n, what);
    pos_ += n;
  }

  std::string_view bytes(uint64_t begin, uint64_t end) const {
    return std::string_view(reinterpret_cast<const char*>(data_ + begin), end - begin);
  }

 private:
  const std::string& path_;
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

int64_t read_int_scalar(Reader& r, GgufType t, const std::string& what, bool* too_big) {
  switch (t) {
    case GgufType::kUint8: return r.read<uint8_t>(what);
    case GgufType::kInt8: return r.read<int8_t>(what);
    case GgufType::kUint16: return r.read<uint16_t>(what);
    case GgufType::kInt16: return r.read<int16_t>(what);
    case GgufType::kUint32: return r.read<uint32_t>(what);
    case GgufType::kInt32: return r.read<int32_t>(what);
    case GgufType::kInt64: return r.read<int64_t>(what);
    case GgufType::kUint64: {
      uint64_t u = r.read<uint64_t>(what);
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) && too_big) *too_big = true;
      return static_cast<int64_t>(u);
    }
    default: return 0;
  }
}

double read_float_scalar(Reader& r, GgufType t, const std::string& what) {
  if (t == GgufType::kFloat32) return r.read<float>(what);
  return r.read<double>(what);
}

void read_value(Reader& r, GgufType t, const std::string& key, GgufFile::Value& v, int depth);

void read_array(Reader& r, const std::string& key, GgufFile::Value& v, int depth) {
  uint32_t et = r.read<uint32_t>("array element type of key '" + key + "'");
  if (et > static_cast<uint32_t>(GgufType::kFloat64)) {
    r.fail("key '" + key + "': unknown array element type " + std::to_string(et));
  }
  v.elem_type = static_cast<GgufType>(et);
  uint64_t count = r.read<uint64_t>("array length of key '" + key + "'");
  v.count = count;
  // Smallest possible encoding per element: fixed size, 8-byte length for strings, 12 for arrays.
  uint64_t min_elem = scalar_size(et);
  if (v.elem_type == GgufType::kString) min_elem = 8;
  if (v.elem_type == GgufType::kArray) min_elem = 12;
  if (count > r.remaining() / min_elem) {
    r.fail("key '" + key + "': array of " + std::to_string(count) + " " +
           gguf_type_name(v.elem_type) + " needs at least " +
           (count > std::numeric_limits<uint64_t>::max() / min_elem
                ? std::string("more than 2^64")
                : std::to_string(count * min_elem)) +
           " bytes but only " + std::to_string(r.remaining()) + " remain");
  }
  const std::string what = "element of array '" + key + "'";
  if (v.elem_type == GgufType::kString) {
    v.strs.reserve(count);
    for (uint64_t i = 0; i < count; ++i) v.strs.push_back(r.read_string(what));
  } else if (v.elem_type == GgufType::kArray) {
    if (depth >= 4) r.fail("key '" + key + "': arrays nested deeper than 4 levels");
    GgufFile::Value inner;
    for (uint64_t i = 0; i < count; ++i) read_value(r, GgufType::kArray, key, inner, depth + 1);
  } else if (is_float_type(v.elem_type)) {
    v.floats.reserve(count);
    for (uint64_t i = 0; i < count; ++i) v.floats.push_back(read_float_scalar(r, v.elem_type, what));
  } else if (v.elem_type == GgufType::kBool) {
    v.ints.reserve(count);
    for (uint64_t i = 0; i < count; ++i) v.ints.push_back(r.read<uint8_t>(what) != 0);
  } else {
    v.ints.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      v.ints.push_back(read_int_scalar(r, v.elem_type, what, &v.u64_too_big));
    }
  }
}

void read_value(Reader& r, GgufType t, const std::string& key, GgufFile::Value& v, int depth) {
  v.type = t;
  const std::string what = "value of key '" + key + "'";
  if (t == GgufType::kString) {
    v.s = r.read_string(what);
  } else if (t == GgufType::kArray) {
    read_array(r, key, v, depth);
  } else if (t == GgufType::kBool) {
    v.b = r.read<uint8_t>(what) != 0;
    v.i = v.b;
  } else if (is_float_type(t)) {
    v.f = read_float_scalar(r, t, what);
  } else {
    v.i = read_int_scalar(r, t, what, &v.u64_too_big);
    v.f = static_cast<double>(v.i);
  }
}

std::string dims_string(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

}  // namespace

// ---- open: header, metadata, tensor infos, data section ------------------------------------------

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::unique_ptr<GgufFile> g(new GgufFile());
  g->path_ = path;
  g->file_ = std::make_unique<MappedFile>(path);
  Reader r(g->path_, g->file_->data(), g->file_->size());

  uint32_t magic = r.read<uint32_t>("magic");
  if (magic != kGgufMagic) {
    char m[5] = {0};
    std::memcpy(m, &magic, 4);
    for (char& c : m) if (c && (c < 32 || c > 126)) c = '?';
    r.fail("bad magic '" + std::string(m) + "' (expected 'GGUF'); not a GGUF file");
  }
  g->version_ = r.read<uint32_t>("version");
  if (g->version_ == 1) {
    throw Error(ErrorKind::kUnsupported,
                "GGUF '" + path + "': version 1 is not supported (only v2 and v3); re-convert the "
                "model with a current llama.cpp convert script");
  }
  if (g->version_ != 2 && g->version_ != 3) {
    throw Error(ErrorKind::kUnsupported,
                "GGUF '" + path + "': unsupported version " + std::to_string(g->version_) +
                    " (supported: 2, 3" + (g->version_ > 0xffff ? "; big-endian file?" : "") + ")");
  }
  uint64_t n_tensors = r.read<uint64_t>("tensor count");
  uint64_t n_kv = r.read<uint64_t>("metadata count");
  // A tensor info takes at least 8 (name length) + 4 (n_dims) + 8 (one dim) + 4 + 8 bytes, a
  // metadata pair at least 8 + 4 + 1: larger counts cannot fit in the file.
  if (n_tensors > r.remaining() / 32) {
    r.fail("tensor count " + std::to_string(n_tensors) + " is impossible for a file of " +
           std::to_string(g->file_->size()) + " bytes");
  }
  if (n_kv > r.remaining() / 13) {
    r.fail("metadata count " + std::to_string(n_kv) + " is impossible for a file of " +
           std::to_string(g->file_->size()) + " bytes");
  }

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.read_string("key of metadata pair " + std::to_string(i));
    uint64_t begin = r.pos();
    uint32_t t = r.read<uint32_t>("type of key '" + key + "'");
    if (t > static_cast<uint32_t>(GgufType::kFloat64)) {
      r.fail("key '" + key + "' has unknown value type " + std::to_string(t));
    }
    auto v = std::make_shared<Value>();
    read_value(r, static_cast<GgufType>(t), key, *v, 0);
    v->raw = r.bytes(begin, r.pos());
    if (!g->kv_.emplace(key, std::move(v)).second) r.fail("duplicate metadata key '" + key + "'");
  }

  if (auto it = g->kv_.find("general.alignment"); it != g->kv_.end()) {
    const Value& a = *it->second;
    if (!is_int_type(a.type) || a.i <= 0 || !std::has_single_bit(static_cast<uint64_t>(a.i))) {
      r.fail("general.alignment must be a positive power-of-two integer, got " +
             (is_int_type(a.type) ? std::to_string(a.i) : std::string(gguf_type_name(a.type))));
    }
    g->alignment_ = static_cast<uint64_t>(a.i);
  }

  g->tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo info;
    info.name = r.read_string("name of tensor " + std::to_string(i));
    const std::string tn = "tensor '" + info.name + "'";
    uint32_t n_dims = r.read<uint32_t>("dimension count of " + tn);
    if (n_dims == 0 || n_dims > kMaxDims) {
      r.fail(tn + " has " + std::to_string(n_dims) + " dimensions (supported: 1.." +
             std::to_string(kMaxDims) + ")");
    }
    int64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      int64_t n = r.read<int64_t>("dimension " + std::to_string(d) + " of " + tn);
      info.ne.push_back(n);
      if (n <= 0) r.fail(tn + " has non-positive dimension " + std::to_string(d) + " = " + std::to_string(n));
      if (numel > std::numeric_limits<int64_t>::max() / n) {
        r.fail(tn + " dimensions " + dims_string(info.ne) + " overflow int64 element count");
      }
      numel *= n;
    }
    info.ggml_type = r.read<uint32_t>("type of " + tn);
    info.offset = r.read<uint64_t>("data offset of " + tn);
    if (!g->tensor_index_.emplace(info.name, g->tensors_.size()).second) {
      r.fail("duplicate tensor name '" + info.name + "'");
    }
    g->tensors_.push_back(std::move(info));
  }

  // The data section starts at the next multiple of the alignment after the tensor infos.
  uint64_t a = g->alignment_;
  g->data_offset_ = (r.pos() + a - 1) / a * a;
  const uint64_t fsize = g->file_->size();
  for (const GgufTensorInfo& info : g->tensors_) {
    const std::string tn = "tensor '" + info.name + "'";
    const GgmlTypeInfo* ti = ggml_info(info.ggml_type);
    if (!ti) {
      r.fail(tn + " has unknown ggml type id " + std::to_string(info.ggml_type));
    }
    if (info.ne[0] % ti->block_elems != 0) {
      r.fail(tn + " of type " + ti->name + ": row length " + std::to_string(info.ne[0]) +
             " is not a multiple of the block size " + std::to_string(ti->block_elems));
    }
    if (info.offset % a != 0) {
      r.fail(tn + " data offset " + std::to_string(info.offset) + " is not aligned to " +
             std::to_string(a) + " (general.alignment)");
    }
    int64_t numel = 1;
    for (int64_t n : info.ne) numel *= n;
    // Compared in blocks: blocks * block_bytes can wrap uint64 (f32 with 2^62 elements is 2^64 bytes),
    // and a wrapped size would pass the check and overflow every later byte count.
    const uint64_t blocks = static_cast<uint64_t>(numel / ti->block_elems);
    const uint64_t avail = fsize > g->data_offset_ ? fsize - g->data_offset_ : 0;
    if (info.offset > avail || blocks > (avail - info.offset) / ti->block_bytes) {
      const std::string size = blocks > std::numeric_limits<uint64_t>::max() / ti->block_bytes
                                   ? std::to_string(blocks) + " blocks of " + std::to_string(ti->block_bytes)
                                   : std::to_string(blocks * ti->block_bytes);
      r.fail(tn + " data [" + std::to_string(info.offset) + ", +" + size + " bytes) at file offset " +
             std::to_string(g->data_offset_ + info.offset) + " runs past the end of the file (" +
             std::to_string(fsize) + " bytes); file truncated?");
    }
  }
  return g;
}

GgufFile::~GgufFile() = default;

uint64_t GgufFile::file_size() const { return file_->size(); }

// ---- metadata getters ------------------------------------------------------------------------------

namespace {

[[noreturn]] void missing_key(const std::string& path, std::string_view key) {
  throw Error(ErrorKind::kNotFound, "GGUF '" + path + "': metadata key '" + std::string(key) + "' not found");
}

[[noreturn]] void wrong_type(const std::string& path, std::string_view key, const std::string& found,
                             const char* expected) {
  throw Error(ErrorKind::kFormat, "GGUF '" + path + "': metadata key '" + std::string(key) +
                                      "' has type " + found + ", expected " + expected);
}

std::string type_desc(const GgufFile::Value& v) {
  if (v.type != GgufType::kArray) return gguf_type_name(v.type);
  return std::string("array of ") + gguf_type_name(v.elem_type);
}

}  // namespace

bool GgufFile::has(std::string_view key) const { return kv_.find(key) != kv_.end(); }

GgufType GgufFile::type_of(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) missing_key(path_, key);
  return it->second->type;
}

std::vector<std::string> GgufFile::keys() const {
  std::vector<std::string> out;
  out.reserve(kv_.size());
  for (const auto& [k, v] : kv_) out.push_back(k);
  return out;
}

std::optional<std::string> GgufFile::find_string(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) return std::nullopt;
  if (it->second->type != GgufType::kString) wrong_type(path_, key, type_desc(*it->second), "string");
  return it->second->s;
}

std::optional<int64_t> GgufFile::find_int(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) return std::nullopt;
  const Value& v = *it->second;
  if (!is_int_type(v.type)) wrong_type(path_, key, type_desc(v), "an integer");
  if (v.u64_too_big) {
    throw Error(ErrorKind::kFormat, "GGUF '" + path_ + "': metadata key '" + std::string(key) +
                                        "' = " + std::to_string(static_cast<uint64_t>(v.i)) +
                                        " does not fit in int64");
  }
  return v.i;
}

std::optional<double> GgufFile::find_float(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) return std::nullopt;
  const Value& v = *it->second;
  if (!is_int_type(v.type) && !is_float_type(v.type)) wrong_type(path_, key, type_desc(v), "a number");
  return v.f;
}

std::optional<bool> GgufFile::find_bool(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) return std::nullopt;
  if (it->second->type != GgufType::kBool) wrong_type(path_, key, type_desc(*it->second), "bool");
  return it->second->b;
}

std::string GgufFile::get_string(std::string_view key) const {
  auto v = find_string(key);
  if (!v) missing_key(path_, key);
  return *v;
}

int64_t GgufFile::get_int(std::string_view key) const {
  auto v = find_int(key);
  if (!v) missing_key(path_, key);
  return *v;
}

double GgufFile::get_float(std::string_view key) const {
  auto v = find_float(key);
  if (!v) missing_key(path_, key);
  return *v;
}

bool GgufFile::get_bool(std::string_view key) const {
  auto v = find_bool(key);
  if (!v) missing_key(path_, key);
  return *v;
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) missing_key(path_, key);
  const Value& v = *it->second;
  if (v.type != GgufType::kArray || v.elem_type != GgufType::kString) {
    wrong_type(path_, key, type_desc(v), "array of string");
  }
  return v.strs;
}

std::vector<double> GgufFile::get_float_array(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) missing_key(path_, key);
  const Value& v = *it->second;
  if (v.type != GgufType::kArray) wrong_type(path_, key, type_desc(v), "array of numbers");
  if (is_float_type(v.elem_type)) return v.floats;
  if (!is_int_type(v.elem_type)) wrong_type(path_, key, type_desc(v), "array of numbers");
  return std::vector<double>(v.ints.begin(), v.ints.end());
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) missing_key(path_, key);
  const Value& v = *it->second;
  if (v.type != GgufType::kArray || !(is_int_type(v.elem_type) || v.elem_type == GgufType::kBool)) {
    wrong_type(path_, key, type_desc(v), "array of integers");
  }
  if (v.u64_too_big) {
    throw Error(ErrorKind::kFormat, "GGUF '" + path_ + "': array '" + std::string(key) +
                                        "' holds a uint64 that does not fit in int64");
  }
  return v.ints;
}

GgufType GgufFile::array_type_of(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) missing_key(path_, key);
  if (it->second->type != GgufType::kArray) wrong_type(path_, key, type_desc(*it->second), "array");
  return it->second->elem_type;
}

uint64_t GgufFile::array_size(std::string_view key) const {
  array_type_of(key);
  return kv_.find(key)->second->count;
}

std::string_view GgufFile::raw_value(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) missing_key(path_, key);
  return it->second->raw;
}

// ---- tensors ---------------------------------------------------------------------------------------

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

TensorView GgufFile::tensor_view(const GgufTensorInfo& info) const {
  std::optional<DType> dt = dtype_from_ggml(info.ggml_type);
  if (!dt) {
    throw Error(ErrorKind::kUnsupported,
                "GGUF '" + path_ + "': tensor '" + info.name + "' has ggml type " +
                    ggml_type_name(info.ggml_type) + " (id " + std::to_string(info.ggml_type) +
                    "), which anelm does not support (supported: f32, f16, bf16, q8_0, q4_0, q4_1, "
                    "q5_0, q5_1, iq4_nl, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs); re-quantize the "
                    "model to one of those");
  }
  TensorView v;
  v.name = info.name;
  v.dtype = *dt;
  v.ndim = static_cast<int>(info.ne.size());
  int64_t numel = 1;
  for (int i = 0; i < v.ndim; ++i) {
    v.shape[i] = info.ne[v.ndim - 1 - i];  // GGUF ne[0] is the contiguous dim: last in PyTorch order
    numel *= info.ne[i];
  }
  v.nbytes = numel / dtype_block_elems(*dt) * dtype_block_bytes(*dt);
  v.data = file_->data() + data_offset_ + info.offset;
  return v;
}

}  // namespace anelm::engine
