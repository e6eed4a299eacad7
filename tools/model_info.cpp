// model_info: header-only inspection of GGUF files and HF safetensors directories.
#include "tools/model_info.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "engine/config_gguf.h"
#include "engine/config_hf.h"
#include "engine/gguf.h"
#include "engine/mapped_file.h"
#include "engine/safetensors.h"

namespace anelm::tools {

using namespace engine;

namespace fs = std::filesystem;

ModelInfo model_info(const std::string& path) {
  ModelInfo info;
  info.path = path;
  info.format = detect_model_format(path);
  std::map<std::string, DTypeStats> stats;
  auto add = [&](const std::string& dtype, int64_t numel, int64_t bytes) {
    DTypeStats& s = stats[dtype];
    s.dtype = dtype;
    ++s.count;
    s.bytes += bytes;
    ++info.n_tensors;
    info.n_params += numel;
    info.total_bytes += bytes;
  };
  if (info.format == ModelFormat::kGguf) {
    auto g = GgufFile::open(path);
    info.gguf_version = g->version();
    info.config = config_from_gguf(*g);
    info.file_bytes = static_cast<int64_t>(g->file_size());
    const auto& ts = g->tensors();
    for (size_t i = 0; i < ts.size(); ++i) {
      int64_t numel = 1;
      for (int64_t n : ts[i].ne) numel *= n;
      const int64_t bytes = ggml_type_nbytes(ts[i].ggml_type, numel);  // known: checked at open
      add(ggml_type_name(ts[i].ggml_type), numel, bytes);
    }
  } else {
    fs::path dir = fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
    info.config = config_from_hf_dir(dir.string());
    auto st = SafetensorsFile::open(fs::is_directory(path) ? path : dir.string());
    for (const auto& f : st->files()) info.file_bytes += static_cast<int64_t>(f->size());
    for (const std::string& name : st->names()) {
      const SafetensorsEntry* e = st->find(name);
      int64_t numel = 1;
      for (int64_t n : e->shape) numel *= n;
      add(e->dtype, numel, e->nbytes);
    }
  }
  info.config.validate(path);
  for (auto& [k, s] : stats) info.by_dtype.push_back(s);
  std::sort(info.by_dtype.begin(), info.by_dtype.end(),
            [](const DTypeStats& a, const DTypeStats& b) { return a.bytes > b.bytes; });
  return info;
}

}  // namespace anelm::tools
