// Compile cache: FNV-1a keys, entry directories with a verified manifest, atomic completion marker.
#include "ane_bridge/program_cache.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace anelm::ane {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kCacheFormat = "anelm-ane-cache 1";
constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

std::uint64_t mix_u64(std::uint64_t h, std::uint64_t v) {
  std::uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return fnv1a64(std::span<const std::uint8_t>(b, 8), h);
}

std::uint64_t mix_str(std::uint64_t h, std::string_view s) {
  return fnv1a64(s, mix_u64(h, s.size()));
}

std::span<const std::uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace

std::uint64_t fnv1a64(std::span<const std::uint8_t> data, std::uint64_t h) {
  for (std::uint8_t b : data) {
    h ^= b;
    h *= kFnvPrime;
  }
  return h;
}

std::uint64_t fnv1a64(std::string_view text, std::uint64_t h) { return fnv1a64(as_bytes(text), h); }

std::uint64_t program_key(const ProgramSource& source, std::string_view runtime_id) {
  std::uint64_t h = mix_str(kFnvOffset, kCacheFormat);
  h = mix_str(h, runtime_id);
  h = mix_str(h, source.mil_text);
  h = mix_u64(h, source.weights.size());
  for (const WeightFile& w : source.weights) {
    h = mix_str(h, w.path);
    h = mix_u64(h, w.bytes.size());
    h = fnv1a64(w.bytes, h);
  }
  return h;
}

std::string key_hex(std::uint64_t key) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(key));
  return buf;
}

std::string weight_relative_path(std::string_view p) {
  constexpr std::string_view kPrefix = "@model_path/";
  if (p.substr(0, kPrefix.size()) != kPrefix) return "";
  const std::string rel(p.substr(kPrefix.size()));
  if (rel.empty() || rel.front() == '/') return "";
  for (const auto& part : fs::path(rel))
    if (part == ".." || part == ".") return "";
  return rel;
}

Status read_file_bytes(const fs::path& path, std::vector<std::uint8_t>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return io_error("cannot open " + path.string());
  f.seekg(0, std::ios::end);
  const std::streamoff n = f.tellg();
  f.seekg(0);
  out->resize(static_cast<std::size_t>(n));
  if (n > 0 && !f.read(reinterpret_cast<char*>(out->data()), n))
    return io_error("cannot read " + path.string());
  return {};
}

Status write_file_bytes(const fs::path& path, std::span<const std::uint8_t> bytes) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return io_error("cannot create " + path.string());
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) return io_error("cannot write " + path.string());
  return {};
}

bool ProgramCache::contains(std::uint64_t key) const {
  if (!enabled()) return false;
  std::error_code ec;
  return fs::is_regular_file(entry_dir(key) / "entry.txt", ec);
}

Status ProgramCache::store(std::uint64_t key, const ProgramSource& source,
                           std::string_view runtime_id) const {
  if (!enabled()) return {};
  const fs::path dir = entry_dir(key);
  std::ostringstream entry;
  entry << kCacheFormat << "\nkey " << key_hex(key) << "\nruntime " << runtime_id << "\nname "
        << source.name << "\nmil " << source.mil_text.size() << " "
        << key_hex(fnv1a64(source.mil_text)) << "\n";
  ANE_RETURN_IF_ERROR(write_file_bytes(dir / "model.mil", as_bytes(source.mil_text)));
  for (const WeightFile& w : source.weights) {
    const std::string rel = weight_relative_path(w.path);
    if (rel.empty())
      return invalid_argument("weight path \"" + w.path + "\" is not under @model_path/");
    ANE_RETURN_IF_ERROR(write_file_bytes(dir / rel, w.bytes));
    entry << "weight " << w.path << " " << w.bytes.size() << " " << key_hex(fnv1a64(w.bytes))
          << "\n";
  }
  const std::string text = entry.str();
  ANE_RETURN_IF_ERROR(write_file_bytes(dir / "entry.txt.tmp", as_bytes(text)));
  std::error_code ec;
  fs::rename(dir / "entry.txt.tmp", dir / "entry.txt", ec);
  if (ec) return io_error("cannot complete cache entry " + dir.string() + ": " + ec.message());
  return {};
}

Status ProgramCache::load(std::uint64_t key, std::string_view runtime_id,
                          ProgramSource* out) const {
  const fs::path dir = entry_dir(key);
  auto corrupt = [&](const std::string& why) {
    remove(key);
    return io_error("cache entry " + dir.string() + " is corrupt (" + why + "); removed");
  };
  std::vector<std::uint8_t> raw;
  ANE_RETURN_IF_ERROR(read_file_bytes(dir / "entry.txt", &raw));
  std::istringstream in(std::string(raw.begin(), raw.end()));
  std::string line;
  if (!std::getline(in, line) || line != kCacheFormat) return corrupt("unknown format");
  ProgramSource src;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string tag;
    ls >> tag;
    if (tag == "name") {
      std::getline(ls >> std::ws, src.name);
    } else if (tag == "mil" || tag == "weight") {
      std::string path = "model.mil", hash;
      std::size_t size = 0;
      if (tag == "weight") ls >> path;
      ls >> size >> hash;
      const std::string rel = tag == "mil" ? path : weight_relative_path(path);
      if (rel.empty()) return corrupt("unsafe path " + path);
      std::vector<std::uint8_t> bytes;
      if (!read_file_bytes(dir / rel, &bytes).ok()) return corrupt("missing " + rel);
      if (bytes.size() != size || key_hex(fnv1a64(bytes)) != hash)
        return corrupt("size or hash mismatch in " + rel);
      if (tag == "mil")
        src.mil_text.assign(bytes.begin(), bytes.end());
      else
        src.weights.push_back({path, std::move(bytes)});
    }
  }
  if (program_key(src, runtime_id) != key) return corrupt("key mismatch");
  *out = std::move(src);
  return {};
}

void ProgramCache::remove(std::uint64_t key) const {
  if (!enabled()) return;
  std::error_code ec;
  fs::remove_all(entry_dir(key), ec);
}

}  // namespace anelm::ane
