// libFuzzer target: the HF-directory readers. Each input is tried as (1) a .safetensors file,
// (2) a config.json (parsed, then validated), and (3) a model.safetensors.index.json beside one
// real shard, which exercises the shard-path confinement. Only anelm::Error may escape.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/config_hf.h"
#include "engine/error.h"
#include "engine/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

using namespace anelm;
using namespace anelm::engine;

namespace {

namespace fs = std::filesystem;

void read_all(const SafetensorsFile& st) {
  volatile uint8_t sink = 0;
  for (const std::string& name : st.names()) {
    const SafetensorsEntry* e = st.find(name);
    if (e->nbytes > 0) {
      const auto* p = static_cast<const uint8_t*>(e->data);
      sink = sink ^ p[0] ^ p[e->nbytes - 1];
    }
    try {
      (void)st.tensor_view(name);
    } catch (const Error&) {}
  }
}

// A model directory holding one valid shard; inputs become its index.
const fs::path& index_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::path(fuzz::scratch_dir("st")) / "model";
    fs::create_directories(d);
    SafetensorsWriter w((d / "model-00001-of-00001.safetensors").string(), {{"t0", DType::kF32, {2}}});
    const float x[2] = {1, 2};
    w.append_data(x, sizeof x);
    w.finish();
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file;
  file.write(data, size);
  try {
    read_all(*SafetensorsFile::open(file.path()));
  } catch (const Error&) {}

  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    config_from_hf_json(text, "config.json").validate("config.json");
  } catch (const Error&) {}

  if (size > 0 && data[0] == '{') {  // index candidates only: keeps the common path cheap
    const fs::path& dir = index_dir();
    std::ofstream(dir / "model.safetensors.index.json", std::ios::binary | std::ios::trunc) << text;
    try {
      read_all(*SafetensorsFile::open(dir.string()));
    } catch (const Error&) {}
  }
  return 0;
}
