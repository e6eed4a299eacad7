// safetensors parsing with full header/offset validation, shard resolution, and a streaming writer.
#include "engine/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/json_depth.h"
#include "engine/mapped_file.h"

namespace anelm::engine {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the format's own limit (100 MB)

[[noreturn]] void format_error(const std::string& file, const std::string& what) {
  throw Error(ErrorKind::kFormat, "safetensors '" + file + "': " + what);
}

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// nlohmann's parse errors quote the bytes last read ("; last read: '...'"): cut them, so that an
// error (which /health serves) never shows a file's contents.
std::string json_error_text(const json::exception& e) {
  std::string msg = e.what();
  if (size_t at = msg.find("; last read"); at != std::string::npos) msg.resize(at);
  return msg;
}

// A JSON value in an error message, cut to a few dozen characters.
std::string brief(const json& v) {
  std::string s = v.dump();
  return s.size() <= 64 ? s : s.substr(0, 60) + " ...";
}

json parse_json_or_throw(const std::string& text, const std::string& file, const char* what) {
  // nlohmann::json parses iteratively but dumps, copies and compares recursively: bound the depth first.
  if (json_nesting_depth(text, kMaxJsonDepth) > kMaxJsonDepth) {
    format_error(file, std::string(what) + " nests deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels of arrays/objects");
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    format_error(file, std::string("invalid JSON in ") + what + ": " + json_error_text(e));
  }
}

bool is_within(const fs::path& p, const fs::path& dir) {
  const fs::path rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != ".." && !rel.is_absolute();
}

// The shard a weight_map entry names, confined to the index's directory: a relative path without
// '..' whose target, after symlinks, lies inside that directory or, for a HuggingFace cache
// snapshot (<repo>/snapshots/<commit>/, files symlinked to ../../blobs/), inside <repo>/blobs/.
fs::path confined_shard(const fs::path& index, const std::string& file, const std::string& tensor) {
  const bool odd_chars = std::any_of(file.begin(), file.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (file.empty() || odd_chars || file.size() > 4096) {  // not echoed: control characters, or too long
    throw Error(ErrorKind::kFormat, "safetensors index '" + index.string() + "' names a shard for tensor '" +
                                        tensor + "' that is not a plain file name");
  }
  const std::string where = "safetensors index '" + index.string() + "' names shard '" + file +
                            "' (for tensor '" + tensor + "')";
  const fs::path rel(file);
  if (rel.is_absolute() || rel.has_root_path()) {
    throw Error(ErrorKind::kFormat, where + ": an absolute path; shards must be inside the model directory");
  }
  for (const fs::path& part : rel) {
    if (part == "..") throw Error(ErrorKind::kFormat, where + ": '..' may not leave the model directory");
  }
  const fs::path dir = index.parent_path().empty() ? fs::path(".") : index.parent_path();
  const fs::path shard = dir / rel;
  std::error_code ec;
  if (!fs::exists(shard, ec)) throw Error(ErrorKind::kNotFound, where + ", which does not exist");
  const fs::path real_dir = fs::canonical(dir, ec);
  const fs::path real_shard = ec ? fs::path() : fs::canonical(shard, ec);
  if (ec) throw Error(ErrorKind::kIo, where + ", which cannot be resolved: " + ec.message());
  bool inside = is_within(real_shard, real_dir);
  if (!inside && real_dir.parent_path().filename() == "snapshots") {
    inside = is_within(real_shard, real_dir.parent_path().parent_path() / "blobs");
  }
  if (!inside) throw Error(ErrorKind::kFormat, where + ", a link that leads outside the model directory");
  return shard;
}

}  // namespace

int64_t safetensors_dtype_size(std::string_view d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    default:
      throw Error(ErrorKind::kUnsupported, std::string("safetensors cannot store dtype ") + dtype_name(t));
  }
}

// ---- reader ----------------------------------------------------------------------------------------

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> st(new SafetensorsFile());
  fs::path p(path);
  fs::path index;
  if (fs::is_directory(p)) {
    if (fs::exists(p / "model.safetensors.index.json")) {
      index = p / "model.safetensors.index.json";
    } else if (fs::exists(p / "model.safetensors")) {
      p = p / "model.safetensors";
    } else {
      throw Error(ErrorKind::kNotFound, "'" + path + "' holds neither model.safetensors nor "
                                        "model.safetensors.index.json");
    }
  } else if (p.filename().string().ends_with(".index.json")) {
    index = p;
  }
  if (index.empty()) {
    st->add_file(p.string(), nullptr);
  } else {
    MappedFile idx(index.string());
    json j = parse_json_or_throw(std::string(reinterpret_cast<const char*>(idx.data()), idx.size()),
                                 index.string(), "the index");
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      format_error(index.string(), "the index has no \"weight_map\" object");
    }
    std::map<std::string, std::vector<std::string>> by_file;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) format_error(index.string(), "weight_map entry '" + name + "' is not a file name");
      by_file[file.get<std::string>()].push_back(name);
    }
    for (const auto& [file, names] : by_file) {
      st->add_file(confined_shard(index, file, names[0]).string(), &names);
    }
  }
  for (const auto& [name, e] : st->entries_) st->names_.push_back(name);
  return st;
}

SafetensorsFile::~SafetensorsFile() = default;

// Parses one file's header; with `expected` (from an index), every listed name must be in it.
void SafetensorsFile::add_file(const std::string& path, const std::vector<std::string>* expected) {
  auto mf = std::make_shared<MappedFile>(path);
  const uint64_t fsize = mf->size();
  if (fsize < 8) format_error(path, "file of " + std::to_string(fsize) + " bytes is too short for a header");
  uint64_t hlen;
  std::memcpy(&hlen, mf->data(), 8);
  if (hlen < 2 || hlen > kMaxHeaderBytes || hlen > fsize - 8) {
    format_error(path, "header length " + std::to_string(hlen) + " is invalid (file size " +
                           std::to_string(fsize) + ", limit " + std::to_string(kMaxHeaderBytes) + ")");
  }
  json h = parse_json_or_throw(std::string(reinterpret_cast<const char*>(mf->data() + 8), hlen), path,
                               "the header");
  if (!h.is_object()) format_error(path, "the header is not a JSON object");
  const uint8_t* base = mf->data() + 8 + hlen;
  const uint64_t data_size = fsize - 8 - hlen;
  for (const auto& [name, v] : h.items()) {
    if (name == "__metadata__") {
      if (v.is_object()) {
        for (const auto& [k, mv] : v.items()) metadata_[k] = mv.is_string() ? mv.get<std::string>() : mv.dump();
      }
      continue;
    }
    const std::string tn = "tensor '" + name + "'";
    if (!v.is_object() || !v.contains("dtype") || !v["dtype"].is_string() || !v.contains("shape") ||
        !v["shape"].is_array() || !v.contains("data_offsets") || !v["data_offsets"].is_array()) {
      format_error(path, tn + " needs string \"dtype\", array \"shape\" and array \"data_offsets\", got " +
                             brief(v));
    }
    SafetensorsEntry e;
    e.name = name;
    e.file = path;
    e.dtype = v["dtype"].get<std::string>();
    int64_t numel = 1;
    for (const json& d : v["shape"]) {
      if (!d.is_number_unsigned()) format_error(path, tn + " has a bad shape " + brief(v["shape"]));
      uint64_t n = d.get<uint64_t>();
      if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          (n > 0 && numel > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(n))) {
        format_error(path, tn + " shape " + brief(v["shape"]) + " overflows int64");
      }
      e.shape.push_back(static_cast<int64_t>(n));
      numel *= static_cast<int64_t>(n);
    }
    const json& off = v["data_offsets"];
    if (off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      format_error(path, tn + " data_offsets must be two non-negative integers, got " + brief(off));
    }
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end) {
      format_error(path, tn + " data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                             "] are inverted");
    }
    if (end > data_size) {
      format_error(path, tn + " data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                             "] run past the data section (" + std::to_string(data_size) + " bytes)");
    }
    int64_t esize = safetensors_dtype_size(e.dtype);
    if (esize > 0) {
      bool overflow = numel > std::numeric_limits<int64_t>::max() / esize;
      if (overflow || static_cast<uint64_t>(numel * esize) != end - begin) {
        format_error(path, tn + " has " + std::to_string(end - begin) + " bytes of data but shape " +
                               shape_string(e.shape) + " x " + e.dtype + " needs " +
                               (overflow ? std::string("more than 2^63") : std::to_string(numel * esize)));
      }
    }
    e.data = base + begin;
    e.nbytes = static_cast<int64_t>(end - begin);
    if (entries_.count(name)) {
      format_error(path, tn + " is defined twice (also in '" + entries_[name].file + "')");
    }
    entries_.emplace(name, std::move(e));
  }
  if (expected) {
    for (const std::string& n : *expected) {
      auto it = entries_.find(n);
      if (it == entries_.end() || it->second.file != path) {
        throw Error(ErrorKind::kNotFound, "safetensors '" + path + "': tensor '" + n +
                                              "' listed in the index is not in this shard");
      }
    }
  }
  files_.push_back(std::move(mf));
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

TensorView SafetensorsFile::tensor_view(std::string_view name) const {
  const SafetensorsEntry* e = find(name);
  if (!e) throw Error(ErrorKind::kNotFound, "safetensors: tensor '" + std::string(name) + "' not found");
  TensorView v;
  if (e->dtype == "F32") v.dtype = DType::kF32;
  else if (e->dtype == "F16") v.dtype = DType::kF16;
  else if (e->dtype == "BF16") v.dtype = DType::kBF16;
  else {
    throw Error(ErrorKind::kUnsupported, "safetensors '" + e->file + "': tensor '" + e->name +
                                             "' has dtype " + e->dtype + " (supported: F32, F16, BF16)");
  }
  if (e->shape.size() > 4 || e->shape.empty()) {
    throw Error(ErrorKind::kUnsupported, "safetensors '" + e->file + "': tensor '" + e->name + "' has " +
                                             std::to_string(e->shape.size()) + " dimensions (supported: 1..4)");
  }
  v.name = e->name;
  v.ndim = static_cast<int>(e->shape.size());
  for (int i = 0; i < v.ndim; ++i) v.shape[i] = e->shape[i];
  v.data = e->data;
  v.nbytes = e->nbytes;
  return v;
}

// ---- writer ----------------------------------------------------------------------------------------

SafetensorsWriter::SafetensorsWriter(const std::string& path, const std::vector<Decl>& tensors,
                                     const std::map<std::string, std::string>& metadata)
    : path_(path) {
  json h = json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  uint64_t off = 0;
  std::set<std::string> seen;
  for (const Decl& d : tensors) {
    if (!seen.insert(d.name).second) {
      throw Error(ErrorKind::kInvalidArgument, "safetensors writer: duplicate tensor '" + d.name + "'");
    }
    int64_t numel = 1;
    for (int64_t n : d.shape) numel *= n;
    uint64_t bytes = static_cast<uint64_t>(numel) * dtype_block_bytes(d.dtype);
    h[d.name] = {{"dtype", safetensors_dtype_name(d.dtype)}, {"shape", d.shape},
                 {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  expected_ = off;
  // nlohmann orders keys alphabetically while offsets follow declaration order; readers do not
  // care about header key order. Pad the header with spaces to 8 bytes, as the reference writer does.
  std::string text = h.dump();
  while ((text.size() % 8) != 0) text += ' ';
  out_.open(path, std::ios::binary | std::ios::trunc);
  if (!out_) throw Error(ErrorKind::kIo, "cannot create '" + path + "'");
  uint64_t n = text.size();
  out_.write(reinterpret_cast<const char*>(&n), 8);
  out_.write(text.data(), static_cast<std::streamsize>(text.size()));
}

SafetensorsWriter::~SafetensorsWriter() = default;

void SafetensorsWriter::append_data(const void* data, size_t nbytes) {
  if (written_ + nbytes > expected_) {
    throw Error(ErrorKind::kInternal, "safetensors writer '" + path_ + "': more data than declared (" +
                                          std::to_string(written_ + nbytes) + " > " +
                                          std::to_string(expected_) + ")");
  }
  out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(nbytes));
  if (!out_) throw Error(ErrorKind::kIo, "write to '" + path_ + "' failed (disk full?)");
  written_ += nbytes;
}

void SafetensorsWriter::finish() {
  if (finished_) return;
  finished_ = true;
  if (written_ != expected_) {
    throw Error(ErrorKind::kInternal, "safetensors writer '" + path_ + "': " + std::to_string(written_) +
                                          " data bytes written, " + std::to_string(expected_) + " declared");
  }
  out_.close();
  if (!out_) throw Error(ErrorKind::kIo, "closing '" + path_ + "' failed");
}

}  // namespace anelm::engine
