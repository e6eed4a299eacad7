// Reads the served file's header once for the model listings (model_file_info.h).
#include "server/model_file_info.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>

#include <spdlog/spdlog.h>

#include "engine/gguf.h"
#include "engine/safetensors.h"

namespace anelm::server {

namespace fs = std::filesystem;

const char* llama_ftype_name(int64_t ftype) {
  switch (ftype) {  // llama.cpp's llama_ftype
    case 0: return "F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K";
    case 11: return "Q3_K_S";
    case 12: return "Q3_K_M";
    case 13: return "Q3_K_L";
    case 14: return "Q4_K_S";
    case 15: return "Q4_K_M";
    case 16: return "Q5_K_S";
    case 17: return "Q5_K_M";
    case 18: return "Q6_K";
    case 19: return "IQ2_XXS";
    case 20: return "IQ2_XS";
    case 21: return "Q2_K_S";
    case 22: return "IQ3_XS";
    case 23: return "IQ3_XXS";
    case 24: return "IQ1_S";
    case 25: return "IQ4_NL";
    case 26: return "IQ3_S";
    case 27: return "IQ3_M";
    case 28: return "IQ2_S";
    case 29: return "IQ2_M";
    case 30: return "IQ4_XS";
    case 31: return "IQ1_M";
    case 32: return "BF16";
    case 36: return "TQ1_0";
    case 37: return "TQ2_0";
    default: return "";
  }
}

std::string human_parameter_count(int64_t n) {
  struct Unit { double size; const char* suffix; int decimals; };
  static constexpr Unit kUnits[] = {{1e9, "B", 1}, {1e6, "M", 2}, {1e3, "K", 1}};
  char buf[32];
  for (const Unit& u : kUnits) {
    if (static_cast<double>(n) < u.size) continue;
    const double v = static_cast<double>(n) / u.size;
    std::snprintf(buf, sizeof buf, "%.*f%s", v == static_cast<double>(static_cast<int64_t>(v)) ? 0 : u.decimals, v, u.suffix);
    return buf;
  }
  return std::to_string(n);
}

namespace {

void read_gguf(const std::string& path, ModelFileInfo& info) {
  const auto g = engine::GgufFile::open(path);
  std::map<uint32_t, int64_t> bytes_by_type;
  for (const engine::GgufTensorInfo& t : g->tensors()) {
    int64_t n = 1;
    for (int64_t d : t.ne) n *= d;
    info.n_params += n;
    if (t.ne.size() >= 2) bytes_by_type[t.ggml_type] += engine::ggml_type_nbytes(t.ggml_type, n);
  }
  if (auto ft = g->find_int("general.file_type")) info.quantization = llama_ftype_name(*ft);
  if (info.quantization.empty() && !bytes_by_type.empty()) {  // the type holding most matrix bytes
    auto most = bytes_by_type.begin();
    for (auto it = bytes_by_type.begin(); it != bytes_by_type.end(); ++it)
      if (it->second > most->second) most = it;
    for (char c : std::string(engine::ggml_type_name(most->first)))
      info.quantization += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
}

void read_safetensors(const std::string& path, ModelFileInfo& info) {
  info.format = "safetensors";
  const auto st = engine::SafetensorsFile::open(path);
  std::map<std::string, int64_t> bytes_by_type;
  for (const std::string& name : st->names()) {
    const engine::SafetensorsEntry* e = st->find(name);
    int64_t n = 1;
    for (int64_t d : e->shape) n *= d;
    info.n_params += n;
    bytes_by_type[e->dtype] += e->nbytes;
  }
  int64_t most = -1;
  for (const auto& [dtype, bytes] : bytes_by_type)
    if (bytes > most) { most = bytes; info.quantization = dtype; }
}

}  // namespace

ModelFileInfo describe_model_file(const std::string& path) {
  ModelFileInfo info;
  std::error_code ec;
  const bool dir = fs::is_directory(path, ec);
  try {
    if (dir) {
      for (const auto& f : fs::directory_iterator(path, ec))
        if (f.path().extension() == ".safetensors") info.size_bytes += static_cast<int64_t>(f.file_size(ec));
      read_safetensors(path, info);
    } else {
      info.size_bytes = static_cast<int64_t>(fs::file_size(path, ec));
      read_gguf(path, info);
    }
  } catch (const std::exception& e) {
    spdlog::debug("model listing: could not read {}: {}", path, e.what());
  }
  const auto mtime = fs::last_write_time(path, ec);
  if (!ec)
    info.modified_unix = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::file_clock::to_sys(mtime).time_since_epoch()).count();
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64, four lanes for 256 bits
  std::string digest;
  const std::string what = fs::absolute(path, ec).string() + "|" + std::to_string(info.size_bytes) + "|" +
                           std::to_string(info.modified_unix);
  for (int lane = 0; lane < 4; ++lane) {
    for (unsigned char c : what) h = (h ^ c) * 1099511628211ull;
    h = (h ^ static_cast<uint64_t>(lane)) * 1099511628211ull;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    digest += buf;
  }
  info.digest = digest;
  return info;
}

}  // namespace anelm::server
