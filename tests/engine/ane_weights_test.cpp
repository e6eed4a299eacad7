// ANE backend weight handling: every source dtype (F32/F16/BF16/Q8_0 files, Q4_0 by
// re-quantisation) dequantised into fp16 programs, int8 per-channel programs, decode-only buckets,
// norm prescale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "engine/ane/ane_executor.h"
#include "engine/generator.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/reference.h"
#include "engine/model_loader.h"
#include "tools/model_maker.h"
#include "engine/thread_pool.h"
#include "engine/transformer.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

using namespace anelm::tools;

// Matrices of `m` dequantised to owned F32 tensors: the exact weights the ANE programs are built
// from (before their single fp16 rounding), so a CPU run over them is the oracle for any source
// type.
struct Dequantized {
  std::vector<std::vector<float>> owned;
  ModelWeights w;
  explicit Dequantized(const LoadedModel& m) : w(m.weights) {
    auto f32 = [&](TensorView& t) {
      if (t.empty() || t.dtype == DType::kF32) return;
      owned.emplace_back(static_cast<std::size_t>(t.numel()));
      kernels::ref::dequantize_row(t.data, t.dtype, 0, t.numel(), owned.back().data());
      t.dtype = DType::kF32;
      t.data = owned.back().data();
      t.nbytes = t.numel() * 4;
    };
    owned.reserve(4 + 12 * w.layers.size());
    const bool tied = w.lm_head.data == w.tok_embd.data;
    f32(w.tok_embd);
    if (tied)
      w.lm_head = w.tok_embd;
    else
      f32(w.lm_head);
    for (LayerWeights& L : w.layers)
      for (TensorView* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) f32(*t);
  }
};

// One model (optionally re-quantised) run on the CPU over `weights` (default: as loaded) and
// through an AneBackend, fed identical tokens.
struct Pair {
  std::unique_ptr<LoadedModel> model;
  std::unique_ptr<Dequantized> deq;
  ThreadPool pool{2};
  std::unique_ptr<Transformer> cpu_tf, ane_tf;
  std::unique_ptr<Generator> cpu, ane;
  std::unique_ptr<AneBackend> backend;

  Pair(const std::string& path, const AneBackendOptions& o, std::optional<DType> requant = {},
       bool cpu_on_dequantized = false) {
    model = load_model(path, requant);
    const ModelWeights* cw = &model->weights;
    if (cpu_on_dequantized) {
      deq = std::make_unique<Dequantized>(*model);
      cw = &deq->w;
    }
    const auto& k = kernels::active_kernels();
    cpu_tf = std::make_unique<Transformer>(model->config, *cw, pool, k);
    ane_tf = std::make_unique<Transformer>(model->config, model->weights, pool, k);
    cpu = std::make_unique<Generator>(*cpu_tf, 256, 256, DType::kF32, pool.size());
    ane = std::make_unique<Generator>(*ane_tf, 256, 256, DType::kF32, pool.size());
    backend = make_ane_backend(model->config, model->weights, *ane_tf, pool, o);
  }

  // max |ane - cpu| / max(1, max |cpu|) over every position's logits of `ids`.
  float rel_diff(const std::vector<int>& ids) {
    const auto c = cpu->forward(ids, 0, true);
    const std::vector<float> lc(c.begin(), c.end());
    const auto a = ane->forward(ids, 0, true);
    float d = 0, m = 1;
    for (std::size_t i = 0; i < lc.size(); ++i) {
      d = std::max(d, std::fabs(lc[i] - a[i]));
      m = std::max(m, std::fabs(lc[i]));
    }
    return d / m;
  }
};

std::vector<int> test_ids(int n, int vocab) {
  std::vector<int> ids = {1};
  for (int i = 1; i < n; ++i) ids.push_back(3 + (i * 131) % (vocab - 3));
  return ids;
}

std::string make_tiny(DType dtype, const std::string& tag) {
  MakeModelOptions mo;
  mo.shape = "tiny";
  mo.dtype = dtype;
  return make_model(mo, (anelm::testing::make_temp_dir(tag) / "tiny.gguf").string()).path;
}

// fp16 programs from every source type: the ANE dequantises rows with row_to_f32 and rounds once
// to fp16. The oracle is the CPU over the same weights dequantised to F32 (for Q8_0/Q4_0 the CPU's
// own path quantises activations to Q8 as well, a ~5% deviation of its own on this random model).
TEST(AneWeights, EverySourceTypeMatchesCpu) {
  struct Case {
    DType file;
    std::optional<DType> requant;
    const char* name;
  };
  for (const Case& c :
       {Case{DType::kF32, {}, "f32"}, Case{DType::kF16, {}, "f16"}, Case{DType::kBF16, {}, "bf16"},
        Case{DType::kQ8_0, {}, "q8_0"}, Case{DType::kF32, DType::kQ4_0, "q4_0 (requant)"}}) {
    Pair p(make_tiny(c.file, "ane-dtype"), {}, c.requant, true);
    const float d = p.rel_diff(test_ids(40, p.model->config.vocab_size));
    std::cout << "[" << c.name << "] max |dlogit| / max |logit| = " << d << "\n";
    EXPECT_LE(d, 0.01f) << c.name;
  }
}

// The GGUF block types (K-quants, IQ4, Q4_1/Q5_x) the same way: anelm's own writers re-quantise a
// tiny256 model (rows of whole 256-blocks), the ANE bakes fp16 blobs from the stored blocks, and the
// oracle is the CPU over the same blocks dequantised to F32.
TEST(AneWeights, EveryBlockTypeMatchesCpu) {
  MakeModelOptions mo;
  mo.shape = "tiny256";
  mo.dtype = DType::kF32;
  const std::string path = make_model(mo, (anelm::testing::make_temp_dir("ane-blocks") / "t.gguf").string()).path;
  for (DType t : {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kQ2_K, DType::kQ3_K,
                  DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS}) {
    Pair p(path, {}, t, true);
    ASSERT_EQ(p.model->weights.layers[0].wq.dtype, t) << dtype_name(t);
    const float d = p.rel_diff(test_ids(40, p.model->config.vocab_size));
    std::cout << "[" << dtype_name(t) << "] max |dlogit| / max |logit| = " << d << "\n";
    EXPECT_LE(d, 0.01f) << dtype_name(t);
  }
}

// int8 per-output-channel weights: about half the blob bytes, and a deviation from the f32 CPU of
// the same order as the CPU's own q8_0 path (weights and activations quantised) on the same model
// (measured: tiny 0.068 vs 0.068-0.087, stories260K 0.028 vs 0.021-0.026).
TEST(AneWeights, Int8PerChannelIsAsCloseAsCpuQ8) {
  ANELM_REQUIRE_SHARED_MODEL(stories, "stories260K.gguf");
  for (const std::string& path : {make_tiny(DType::kF32, "ane-int8"), stories.string()}) {
    AneBackendOptions fp16, int8;
    int8.int8_weights = true;
    Pair a(path, fp16), b(path, int8), q8(path, fp16, DType::kQ8_0);
    const auto& sa = a.backend->stats();
    const auto& sb = b.backend->stats();
    EXPECT_EQ(sb.weight_format, "int8");
    EXPECT_LT(sb.weight_bytes, sa.weight_bytes * 3 / 4);
    const std::vector<int> ids = test_ids(40, b.model->config.vocab_size);
    // q8's CPU side runs Q8_0 weights; its "ane" side is irrelevant here. Compare CPU q8 vs f32.
    const auto ref = b.cpu->forward(ids, 0, true);
    const std::vector<float> lf(ref.begin(), ref.end());
    const auto lq = q8.cpu->forward(ids, 0, true);
    float dq = 0, m = 1;
    for (std::size_t i = 0; i < lf.size(); ++i) {
      dq = std::max(dq, std::fabs(lf[i] - lq[i]));
      m = std::max(m, std::fabs(lf[i]));
    }
    dq /= m;
    const float d = b.rel_diff(ids);
    std::cout << "[int8 " << path.substr(path.rfind('/') + 1) << "] weight bytes "
              << sb.weight_bytes << " vs fp16 " << sa.weight_bytes
              << "; max |dlogit| / max |logit|: ane int8 " << d << ", cpu q8_0 " << dq << "\n";
    EXPECT_LE(d, 2.0f * dq + 0.005f);
  }
}

// Only the decode bucket: a 70-token prefill runs as three S=32 chunks (32 + 32 + 6 tokens).
TEST(AneWeights, DecodeBucketOnlyChunksThePrefill) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  AneBackendOptions o;
  o.seq_buckets = {32};
  Pair p(path.string(), o);
  EXPECT_EQ(p.backend->stats().programs, 5 * 2 + 1);
  EXPECT_EQ(p.backend->stats().seq_buckets, (std::vector<int>{32}));
  const float d = p.rel_diff(test_ids(70, 512));
  std::cout << "[S=32 only, 70 tokens] max |dlogit| / max |logit| = " << d << "\n";
  EXPECT_LE(d, 0.01f);
}

// llama-2-tiny-random's residual stream is ~0.02: at the bridge's fixed 1/16 prescale its norm
// squares fall into fp16 subnormals (flushed to zero); the calibrated prescale lifts the stream into
// fp16's accurate band (p > 1 is allowed since the FTZ-safe RMSNorm) and is far more precise.
TEST(AneWeights, CalibratedPrescaleBeatsFixedOnSmallActivations) {
  ANELM_REQUIRE_SHARED_MODEL(path, "llama-2-tiny-random.gguf");
  AneBackendOptions fixed, calibrated;
  fixed.rms_prescale = 1.0 / 16;
  Pair f(path.string(), fixed), c(path.string(), calibrated);
  EXPECT_EQ(f.backend->stats().prescale_max, 1.0 / 16);
  EXPECT_GE(c.backend->stats().prescale_min, 1.0);
  const std::vector<int> ids = test_ids(40, 32000);
  const float df = f.rel_diff(ids), dc = c.rel_diff(ids);
  std::cout << "[llama-2-tiny-random] max |dlogit|: prescale 1/16 " << df << ", calibrated " << dc
            << "\n";
  EXPECT_LE(dc, 0.001f);  // logits here span only +-0.26
  EXPECT_LT(dc * 4, df);
}

}  // namespace
}  // namespace anelm::engine
