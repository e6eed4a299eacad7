// anelm's block writers against llama.cpp's quantizer, the independent reference: the peer's
// llamacpp-quantize (llama_model_quantize of the prebuilt libllama, so exactly what llama-quantize
// writes) and anelm quantize the same F32 model (a generated Llama of shape tiny256, every row a
// multiple of 256, with 12x outliers added to every other matrix). For every type and every
// matrix, anelm's reconstruction error must be at most kMaxRatio times llama.cpp's. Then llama.cpp
// reads anelm's blocks back (re-quantizing anelm's file to F32) and must decode them to exactly
// anelm's values: the blocks are valid GGUF, not merely self-consistent. Skips when
// ../shared/peers is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "engine/kernels/quantize.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;

// anelm's RMSE over llama.cpp's, per matrix. anelm minimises the plain squared error, llama.cpp a
// magnitude-weighted one (and its Q4_1/Q5_0/Q5_1 are plain min/max), so anelm is usually below 1.
constexpr double kMaxRatio = 1.15;

struct PeerType {
  DType type;
  const char* peer;  // llamacpp-quantize TYPE whose base (--pure) type is `type`
};
constexpr PeerType kTypes[] = {{DType::kQ4_1, "Q4_1"},   {DType::kQ5_0, "Q5_0"},     {DType::kQ5_1, "Q5_1"},
                               {DType::kIQ4_NL, "IQ4_NL"}, {DType::kQ2_K, "Q2_K"},   {DType::kQ3_K, "Q3_K_S"},
                               {DType::kQ4_K, "Q4_K_S"}, {DType::kQ5_K, "Q5_K_S"}, {DType::kQ6_K, "Q6_K"},
                               {DType::kIQ4_XS, "IQ4_XS"}};

std::vector<float> matrix_f32(const TensorView& v) {
  std::vector<float> out(static_cast<size_t>(v.numel()));
  const int64_t cols = v.cols(), row_bytes = dtype_row_bytes(v.dtype, cols);
  for (int64_t r = 0; r < v.rows(); ++r) {
    kernels::row_to_f32(v.dtype, static_cast<const uint8_t*>(v.data) + r * row_bytes, out.data() + r * cols, cols);
  }
  return out;
}

// anelm's encoding of an f32 matrix in type t (row by row, as the loader does).
std::vector<uint8_t> encode(const std::vector<float>& x, int64_t rows, int64_t cols, DType t) {
  const int64_t row_bytes = dtype_row_bytes(t, cols);
  std::vector<uint8_t> out(static_cast<size_t>(rows * row_bytes));
  for (int64_t r = 0; r < rows; ++r) kernels::row_from_f32(x.data() + r * cols, t, out.data() + r * row_bytes, cols);
  return out;
}

double sq_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) e += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  return e;
}

// Copies `src` (metadata and tensors) to `path`; every 2-D tensor is written in `matrix_type` by
// anelm's writer, and with `outliers` every other one gets a 12x outlier in one element of 97.
void write_copy(const GgufFile& src, const std::string& path, DType matrix_type, bool outliers) {
  GgufWriter w;
  for (const std::string& k : src.keys()) w.copy_key(src, k);
  std::vector<std::vector<uint8_t>> data;
  int n_matrix = 0;
  for (const GgufTensorInfo& info : src.tensors()) {
    const TensorView v = src.tensor_view(info);
    std::vector<int64_t> shape(v.shape.begin(), v.shape.begin() + v.ndim);
    std::vector<float> x = matrix_f32(v);
    const bool matrix = v.ndim == 2;
    if (matrix && outliers && n_matrix++ % 2 == 1) {
      for (size_t i = 5; i < x.size(); i += 97) x[i] *= 12.0f;
    }
    const DType t = matrix ? matrix_type : DType::kF32;
    w.add_tensor(v.name, t, shape);
    data.push_back(encode(x, v.rows(), v.cols(), t));
  }
  w.begin(path);
  for (const auto& d : data) w.write_data(d.data(), d.size());
  w.finish();
}

void peer_quantize(const fs::path& tool, const fs::path& in, const fs::path& out, const std::string& type) {
  const std::string cmd = "'" + tool.string() + "' '" + in.string() + "' '" + out.string() + "' " + type +
                          " --pure > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(QuantizeVsLlamaCpp, ErrorWithinRatioAndBlocksReadBack) {
  const auto shared = anelm::testing::shared_dir();
  const fs::path tool = shared ? *shared / "peers/bin/llamacpp-quantize" : fs::path();
  if (!shared || !fs::exists(tool)) GTEST_SKIP() << "../shared/peers/bin/llamacpp-quantize not found";

  const fs::path dir = anelm::testing::make_temp_dir("quantize-vs-llamacpp");
  tools::MakeModelOptions o;
  o.arch = Arch::kLlama;  // untied: an output.weight matrix as well
  o.shape = "tiny256";
  o.dtype = DType::kF32;
  o.seed = 5;
  const std::string base = tools::make_model(o, (dir / "base.gguf").string()).path;
  const fs::path source = dir / "source-f32.gguf";
  write_copy(*GgufFile::open(base), source.string(), DType::kF32, /*outliers=*/true);
  const auto src = GgufFile::open(source.string());

  std::printf("%-7s %12s %12s %10s %10s\n", "type", "anelm rmse", "llama rmse", "ratio", "max ratio");
  for (const PeerType& pt : kTypes) {
    const std::string name = dtype_name(pt.type);
    const fs::path peer_file = dir / ("llamacpp-" + name + ".gguf");
    ASSERT_NO_FATAL_FAILURE(peer_quantize(tool, source, peer_file, pt.peer));
    const auto peer = GgufFile::open(peer_file.string());
    double anelm_total = 0, peer_total = 0, power = 0, worst = 0;
    int matrices = 0;
    for (const GgufTensorInfo& info : src->tensors()) {
      const TensorView v = src->tensor_view(info);
      if (v.ndim != 2) continue;
      const GgufTensorInfo* pi = peer->find_tensor(v.name);
      ASSERT_NE(pi, nullptr) << v.name;
      const TensorView pv = peer->tensor_view(*pi);
      ASSERT_EQ(pv.dtype, pt.type) << name << " " << v.name << " (llama.cpp --pure chose another type)";
      const std::vector<float> x = matrix_f32(v);
      std::vector<float> mine(x.size());
      const std::vector<uint8_t> blocks = encode(x, v.rows(), v.cols(), pt.type);
      const int64_t row_bytes = dtype_row_bytes(pt.type, v.cols());
      for (int64_t r = 0; r < v.rows(); ++r) {
        kernels::row_to_f32(pt.type, blocks.data() + r * row_bytes, mine.data() + r * v.cols(), v.cols());
      }
      const double e_anelm = sq_diff(x, mine), e_peer = sq_diff(x, matrix_f32(pv));
      EXPECT_LE(std::sqrt(e_anelm), kMaxRatio * std::sqrt(e_peer) + 1e-9)
          << name << " " << v.name << ": anelm / llama.cpp RMSE = " << std::sqrt(e_anelm / e_peer);
      worst = std::max(worst, std::sqrt(e_anelm / e_peer));
      anelm_total += e_anelm, peer_total += e_peer, ++matrices;
      for (float f : x) power += static_cast<double>(f) * f;
    }
    EXPECT_GE(matrices, 15) << name;
    std::printf("%-7s %12.5f %12.5f %10.3f %10.3f\n", name.c_str(), std::sqrt(anelm_total / power),
                std::sqrt(peer_total / power), std::sqrt(anelm_total / peer_total), worst);

    // llama.cpp decodes anelm's blocks (re-quantizing to F32 dequantizes every matrix).
    const fs::path mine_file = dir / ("anelm-" + name + ".gguf"), back_file = dir / ("back-" + name + ".gguf");
    write_copy(*src, mine_file.string(), pt.type, /*outliers=*/false);
    ASSERT_NO_FATAL_FAILURE(peer_quantize(tool, mine_file, back_file, "F32"));
    const auto mine = GgufFile::open(mine_file.string()), back = GgufFile::open(back_file.string());
    for (const GgufTensorInfo& info : mine->tensors()) {
      const TensorView v = mine->tensor_view(info);
      if (v.ndim != 2) continue;
      ASSERT_EQ(v.dtype, pt.type);
      const GgufTensorInfo* bi = back->find_tensor(v.name);
      ASSERT_NE(bi, nullptr) << v.name;
      const TensorView bv = back->tensor_view(*bi);
      ASSERT_EQ(bv.dtype, DType::kF32) << v.name;
      const std::vector<float> ours = matrix_f32(v), theirs = matrix_f32(bv);
      double max_diff = 0, max_abs = 0;
      for (size_t i = 0; i < ours.size(); ++i) {
        max_diff = std::max(max_diff, std::fabs(static_cast<double>(ours[i]) - theirs[i]));
        max_abs = std::max(max_abs, std::fabs(static_cast<double>(ours[i])));
      }
      // Same products in the same order; a fused multiply-add in llama.cpp's build may differ by an ulp.
      EXPECT_LE(max_diff, 1e-6 * max_abs) << name << " " << v.name << ": llama.cpp decodes anelm's blocks differently";
    }
  }
}

}  // namespace
}  // namespace anelm::engine
