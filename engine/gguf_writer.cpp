// GgufWriter: encodes metadata in memory, writes the header once, then streams aligned tensor data.
#include "engine/gguf_writer.h"

#include <algorithm>
#include <cstring>

#include "engine/error.h"

namespace anelm::engine {

namespace {

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_str(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.append(s.data(), s.size());
}

uint32_t t(GgufType x) { return static_cast<uint32_t>(x); }

template <typename T>
std::string encode_array(GgufType elem, const std::vector<T>& v) {
  std::string out;
  put<uint32_t>(out, t(elem));
  put<uint64_t>(out, v.size());
  for (const T& x : v) put<T>(out, x);
  return out;
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    throw Error(ErrorKind::kInvalidArgument, "GGUF alignment must be a power of two, got " + std::to_string(alignment));
  }
}

GgufWriter::~GgufWriter() = default;

bool GgufWriter::has_key(const std::string& key) const {
  return std::find(keys_.begin(), keys_.end(), key) != keys_.end();
}

void GgufWriter::add_key(const std::string& key, uint32_t type, const void* payload, size_t n) {
  if (begun_) throw Error(ErrorKind::kInternal, "GGUF writer: metadata '" + key + "' added after begin()");
  if (has_key(key)) throw Error(ErrorKind::kInvalidArgument, "GGUF writer: duplicate key '" + key + "'");
  keys_.push_back(key);
  put_str(kv_bytes_, key);
  put<uint32_t>(kv_bytes_, type);
  kv_bytes_.append(static_cast<const char*>(payload), n);
}

void GgufWriter::add_u8(const std::string& k, uint8_t v) { add_key(k, t(GgufType::kUint8), &v, 1); }
void GgufWriter::add_i8(const std::string& k, int8_t v) { add_key(k, t(GgufType::kInt8), &v, 1); }
void GgufWriter::add_u16(const std::string& k, uint16_t v) { add_key(k, t(GgufType::kUint16), &v, 2); }
void GgufWriter::add_i16(const std::string& k, int16_t v) { add_key(k, t(GgufType::kInt16), &v, 2); }
void GgufWriter::add_u32(const std::string& k, uint32_t v) { add_key(k, t(GgufType::kUint32), &v, 4); }
void GgufWriter::add_i32(const std::string& k, int32_t v) { add_key(k, t(GgufType::kInt32), &v, 4); }
void GgufWriter::add_u64(const std::string& k, uint64_t v) { add_key(k, t(GgufType::kUint64), &v, 8); }
void GgufWriter::add_i64(const std::string& k, int64_t v) { add_key(k, t(GgufType::kInt64), &v, 8); }
void GgufWriter::add_f32(const std::string& k, float v) { add_key(k, t(GgufType::kFloat32), &v, 4); }
void GgufWriter::add_f64(const std::string& k, double v) { add_key(k, t(GgufType::kFloat64), &v, 8); }

void GgufWriter::add_bool(const std::string& k, bool v) {
  uint8_t b = v ? 1 : 0;
  add_key(k, t(GgufType::kBool), &b, 1);
}

void GgufWriter::add_string(const std::string& k, std::string_view v) {
  std::string p;
  put_str(p, v);
  add_key(k, t(GgufType::kString), p.data(), p.size());
}

void GgufWriter::add_string_array(const std::string& k, const std::vector<std::string>& v) {
  std::string p;
  put<uint32_t>(p, t(GgufType::kString));
  put<uint64_t>(p, v.size());
  for (const std::string& s : v) put_str(p, s);
  add_key(k, t(GgufType::kArray), p.data(), p.size());
}

void GgufWriter::add_i32_array(const std::string& k, const std::vector<int32_t>& v) {
  std::string p = encode_array(GgufType::kInt32, v);
  add_key(k, t(GgufType::kArray), p.data(), p.size());
}

void GgufWriter::add_u32_array(const std::string& k, const std::vector<uint32_t>& v) {
  std::string p = encode_array(GgufType::kUint32, v);
  add_key(k, t(GgufType::kArray), p.data(), p.size());
}

void GgufWriter::add_i64_array(const std::string& k, const std::vector<int64_t>& v) {
  std::string p = encode_array(GgufType::kInt64, v);
  add_key(k, t(GgufType::kArray), p.data(), p.size());
}

void GgufWriter::add_f32_array(const std::string& k, const std::vector<float>& v) {
  std::string p = encode_array(GgufType::kFloat32, v);
  add_key(k, t(GgufType::kArray), p.data(), p.size());
}

void GgufWriter::add_f64_array(const std::string& k, const std::vector<double>& v) {
  std::string p = encode_array(GgufType::kFloat64, v);
  add_key(k, t(GgufType::kArray), p.data(), p.size());
}

void GgufWriter::add_bool_array(const std::string& k, const std::vector<bool>& v) {
  std::vector<uint8_t> b(v.begin(), v.end());
  std::string p = encode_array(GgufType::kBool, b);
  add_key(k, t(GgufType::kArray), p.data(), p.size());
}

void GgufWriter::add_raw(const std::string& k, std::string_view raw) {
  if (raw.size() < 4) throw Error(ErrorKind::kInvalidArgument, "GGUF writer: raw value of '" + k + "' is too short");
  uint32_t type;
  std::memcpy(&type, raw.data(), 4);
  add_key(k, type, raw.data() + 4, raw.size() - 4);
}

void GgufWriter::copy_key(const GgufFile& src, const std::string& key) { add_raw(key, src.raw_value(key)); }

int64_t GgufWriter::add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape) {
  if (begun_) throw Error(ErrorKind::kInternal, "GGUF writer: tensor '" + name + "' added after begin()");
  if (shape.empty() || shape.size() > 4) {
    throw Error(ErrorKind::kInvalidArgument, "GGUF writer: tensor '" + name + "' needs 1..4 dimensions");
  }
  for (const Tensor& x : tensors_) {
    if (x.name == name) throw Error(ErrorKind::kInvalidArgument, "GGUF writer: duplicate tensor '" + name + "'");
  }
  Tensor x;
  x.name = name;
  x.ggml_type = ggml_type_of(type);
  x.ne.assign(shape.rbegin(), shape.rend());
  if (x.ne[0] % dtype_block_elems(type) != 0) {
    throw Error(ErrorKind::kInvalidArgument, "GGUF writer: tensor '" + name + "' row length " +
                                                 std::to_string(x.ne[0]) + " is not a multiple of the " +
                                                 dtype_name(type) + " block");
  }
  int64_t numel = 1;
  for (int64_t n : shape) numel *= n;
  x.nbytes = static_cast<uint64_t>(numel / dtype_block_elems(type) * dtype_block_bytes(type));
  x.offset = data_bytes_;
  data_bytes_ += (x.nbytes + alignment_ - 1) / alignment_ * alignment_;
  tensors_.push_back(std::move(x));
  return static_cast<int64_t>(tensors_.back().nbytes);
}

void GgufWriter::begin(const std::string& path) {
  if (alignment_ != 32 && !has_key("general.alignment")) add_u32("general.alignment", alignment_);
  begun_ = true;
  path_ = path;
  out_.open(path, std::ios::binary | std::ios::trunc);
  if (!out_) throw Error(ErrorKind::kIo, "cannot create '" + path + "'");
  std::string h;
  h.append("GGUF", 4);
  put<uint32_t>(h, 3);
  put<uint64_t>(h, tensors_.size());
  put<uint64_t>(h, keys_.size());
  h += kv_bytes_;
  for (const Tensor& x : tensors_) {
    put_str(h, x.name);
    put<uint32_t>(h, static_cast<uint32_t>(x.ne.size()));
    for (int64_t n : x.ne) put<int64_t>(h, n);
    put<uint32_t>(h, x.ggml_type);
    put<uint64_t>(h, x.offset);
  }
  out_.write(h.data(), static_cast<std::streamsize>(h.size()));
  file_pos_ = h.size();
  pad_to_alignment();
  cur_ = 0;
  cur_written_ = 0;
}

void GgufWriter::pad_to_alignment() {
  static const char zeros[64] = {0};
  uint64_t pad = (alignment_ - file_pos_ % alignment_) % alignment_;
  while (pad > 0) {
    uint64_t n = std::min<uint64_t>(pad, sizeof(zeros));
    out_.write(zeros, static_cast<std::streamsize>(n));
    file_pos_ += n;
    pad -= n;
  }
}

void GgufWriter::write_data(const void* data, size_t nbytes) {
  if (!begun_ || finished_) throw Error(ErrorKind::kInternal, "GGUF writer: write_data outside begin()/finish()");
  const char* p = static_cast<const char*>(data);
  while (nbytes > 0) {
    if (cur_ >= tensors_.size()) {
      throw Error(ErrorKind::kInternal, "GGUF writer '" + path_ + "': more data than the declared tensors hold");
    }
    const Tensor& x = tensors_[cur_];
    uint64_t n = std::min<uint64_t>(nbytes, x.nbytes - cur_written_);
    out_.write(p, static_cast<std::streamsize>(n));
    if (!out_) throw Error(ErrorKind::kIo, "write to '" + path_ + "' failed (disk full?)");
    p += n;
    nbytes -= n;
    file_pos_ += n;
    cur_written_ += n;
    if (cur_written_ == x.nbytes) {
      pad_to_alignment();
      ++cur_;
      cur_written_ = 0;
    }
  }
}

void GgufWriter::finish() {
  if (finished_) return;
  if (!begun_) throw Error(ErrorKind::kInternal, "GGUF writer: finish() before begin()");
  finished_ = true;
  if (cur_ != tensors_.size()) {
    throw Error(ErrorKind::kInternal, "GGUF writer '" + path_ + "': tensor '" + tensors_[cur_].name +
                                          "' received " + std::to_string(cur_written_) + " of " +
                                          std::to_string(tensors_[cur_].nbytes) + " bytes");
  }
  out_.close();
  if (!out_) throw Error(ErrorKind::kIo, "closing '" + path_ + "' failed");
}

}  // namespace anelm::engine
