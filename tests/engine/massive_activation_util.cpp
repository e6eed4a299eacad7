// make_massive_activation_model (massive_activation.h): make a tiny model, then overwrite one value
// of its token_embd row in the file.
#include "tests/engine/massive_activation.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "engine/gguf.h"
#include "tools/model_maker.h"

namespace anelm::testing {

namespace fs = std::filesystem;

MassiveActivationModel make_massive_activation_model(const fs::path& dir, float magnitude,
                                                     const std::string& shape) {
  tools::MakeModelOptions mo;
  mo.shape = shape;
  // llama: an untied output.weight. Tied (qwen2), the edit would also give the BOS logit row a
  // 1e3 weight and the head would answer BOS whenever that channel is positive.
  mo.arch = engine::Arch::kLlama;
  mo.dtype = engine::DType::kF32;
  const tools::MadeModel made = tools::make_model(mo, (dir / "massive.gguf").string());
  MassiveActivationModel m;
  m.path = made.path;
  m.config = made.config;
  m.token = made.config.bos_id >= 0 ? made.config.bos_id : 1;
  m.channel = 7 % made.config.d_model;
  m.magnitude = magnitude;

  // The row's bytes as the reader sees them, then the same bytes in the file: random floats make a
  // 4*d_model-byte row unique, which is checked.
  std::vector<char> file;
  std::vector<char> row(static_cast<std::size_t>(made.config.d_model) * sizeof(float));
  {
    const auto g = engine::GgufFile::open(m.path);
    const engine::GgufTensorInfo* t = g->find_tensor("token_embd.weight");
    if (!t) throw std::runtime_error("massive model: no token_embd.weight in " + m.path);
    const engine::TensorView v = g->tensor_view(*t);
    if (v.dtype != engine::DType::kF32)
      throw std::runtime_error("massive model: token_embd.weight is not f32");
    std::memcpy(row.data(), static_cast<const char*>(v.data) + row.size() * m.token, row.size());
    std::ifstream in(m.path, std::ios::binary);
    file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto at = std::search(file.begin(), file.end(), row.begin(), row.end());
  if (at == file.end() || std::search(at + 1, file.end(), row.begin(), row.end()) != file.end())
    throw std::runtime_error("massive model: the BOS embedding row is not unique in the file");
  std::memcpy(&*at + sizeof(float) * m.channel, &magnitude, sizeof(float));
  std::ofstream(m.path, std::ios::binary | std::ios::trunc).write(file.data(),
                                                                  static_cast<long>(file.size()));
  return m;
}

}  // namespace anelm::testing
