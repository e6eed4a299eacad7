// The optimised transformer against the naive one-function forward (every ISA, every weight type,
// prefill batch vs token by token), and against llama.cpp's reference logits on the real test models.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/generator.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/rope.h"
#include "engine/model_loader.h"
#include "engine/transformer.h"
#include "tests/engine/naive_forward_util.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

using testing::NaiveState;
using testing::naive_forward;

float max_abs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

// Runs `ids` through the naive oracle; returns [n][vocab] logits.
std::vector<std::vector<float>> naive_logits(const ModelConfig& cfg, const ModelWeights& w, const std::vector<int>& ids,
                                             bool kv_f16) {
  NaiveState st(cfg, static_cast<int>(ids.size()), kv_f16);
  std::vector<std::vector<float>> out;
  for (size_t p = 0; p < ids.size(); ++p) out.push_back(naive_forward(cfg, w, st, ids[p], static_cast<int>(p)));
  return out;
}

struct FastRun {
  std::vector<float> prefill;      // [n][vocab] from one batched forward (chunked by max_batch)
  std::vector<float> stepwise;     // [n][vocab] token by token
  std::vector<float> sampled;      // [vocab] the last position's, from a prefill that samples only:
                                   // earlier chunks skip their last layer's FFN, the last chunk runs
                                   // it for its last row alone
};

FastRun fast_logits(const ModelConfig& cfg, const ModelWeights& w, const std::vector<int>& ids,
                    const kernels::KernelTable& k, DType kv_type, int max_batch, int threads, int64_t inline_macs) {
  ThreadPool pool(threads);
  Transformer tf(cfg, w, pool, k, inline_macs);
  const int n = static_cast<int>(ids.size());
  KvCache kv(cfg, n, kv_type);
  Activations acts(cfg, max_batch, n, threads);
  FastRun r;
  r.prefill.assign(static_cast<size_t>(n) * cfg.vocab_size, 0.0f);
  EXPECT_EQ(n, tf.forward(ids, 0, kv, acts, r.prefill.data()));
  // acts.logits must equal the last row of all_logits.
  for (int v = 0; v < cfg.vocab_size; ++v) {
    EXPECT_EQ(acts.logits[v], r.prefill[static_cast<size_t>(n - 1) * cfg.vocab_size + v]);
  }
  {
    KvCache kv_s(cfg, n, kv_type);
    Activations acts_s(cfg, max_batch, n, threads);
    EXPECT_EQ(n, tf.forward(ids, 0, kv_s, acts_s));
    r.sampled = acts_s.logits;
  }
  KvCache kv2(cfg, n, kv_type);
  Activations acts2(cfg, 1, n, threads);
  for (int p = 0; p < n; ++p) {
    EXPECT_EQ(1, tf.forward(std::span<const int>(&ids[p], 1), p, kv2, acts2));
    r.stepwise.insert(r.stepwise.end(), acts2.logits.begin(), acts2.logits.end());
  }
  return r;
}

// max |a - b| over a row; reports the worst index.
void expect_row_close(const std::string& what, const float* expected, const float* actual, int n, float tol) {
  float worst = 0;
  int at = 0;
  for (int i = 0; i < n; ++i) {
    const float d = std::fabs(expected[i] - actual[i]);
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  EXPECT_LE(worst, tol) << what << ": max |diff| " << worst << " at id " << at << " expected " << expected[at]
                        << " actual " << actual[at];
}

void check_against_naive(const ModelConfig& cfg, const ModelWeights& w, const std::vector<int>& ids, float tol,
                         const std::string& name) {
  for (DType kv : {DType::kF32, DType::kF16}) {
    const auto expected = naive_logits(cfg, w, ids, kv == DType::kF16);
    for (kernels::Isa isa : kernels::supported_isas()) {
      for (int max_batch : {3, 64}) {
        // max_batch 3: several prefill chunks, every kernel through the pool (inline threshold 0);
        // 64: one chunk, small kernels inline on the caller.
        const int64_t inline_macs = max_batch == 3 ? 0 : kDefaultInlineMacs;
        const FastRun r = fast_logits(cfg, w, ids, *kernels::kernel_table(isa), kv, max_batch, 2, inline_macs);
        for (size_t p = 0; p < ids.size(); ++p) {
          const std::string what = name + " isa=" + kernels::isa_name(isa) + " kv=" + (kv == DType::kF16 ? "f16" : "f32") +
                                   " max_batch=" + std::to_string(max_batch) + " pos=" + std::to_string(p);
          // An F16 cache rounds K/V: 1e-7 differences can flip a rounding and grow through the layers.
          const float scale = std::max(1.0f, max_abs(expected[p])) * (kv == DType::kF16 ? 5.0f : 1.0f);
          expect_row_close(what + " prefill vs naive", expected[p].data(), r.prefill.data() + p * cfg.vocab_size,
                           cfg.vocab_size, tol * scale);
          expect_row_close(what + " decode vs naive", expected[p].data(), r.stepwise.data() + p * cfg.vocab_size,
                           cfg.vocab_size, tol * scale);
          if (p + 1 == ids.size())
            expect_row_close(what + " sampling prefill vs naive", expected[p].data(), r.sampled.data(),
                             cfg.vocab_size, tol * scale);
        }
      }
    }
  }
}

// ---- real models vs the naive oracle --------------------------------------------------------------

const std::vector<int> kStoriesIds = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338};

TEST(TransformerVsNaive, Stories260K) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  auto m = load_model(path.string());
  check_against_naive(m->config, m->weights, kStoriesIds, 2e-4f, "stories260K");
}

TEST(TransformerVsNaive, Llama2TinyRandomF16) {
  ANELM_REQUIRE_SHARED_MODEL(path, "llama-2-tiny-random.gguf");
  auto m = load_model(path.string());
  check_against_naive(m->config, m->weights, {1, 9038, 2501, 263, 931, 17196, 5211, 21440}, 2e-4f,
                      "llama-2-tiny-random");
}

// ---- synthetic models: every weight type, qwen2 flags (bias, rotate-half, tied) and llama flags --

TEST(TransformerVsNaive, SyntheticEveryWeightType) {
  const std::vector<int> ids = {1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41};
  for (bool qwen2 : {true, false}) {
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
      auto m = testing::make_synthetic_model(t, 1234, qwen2);
      // The oracle also rounds activations through Q8 for quantised weights, but a float-order
      // difference can still flip one Q8 rounding (a 1/127 step), which the coarse Q4_0 weights
      // amplify through the layers: those get 2e-2 of the logit scale (kernel tests are tight, 1e-4).
      const float tol = uses_q8_activations(t) ? 2e-2f : 2e-4f;
      check_against_naive(m->cfg, m->w, ids, tol,
                          std::string(qwen2 ? "qwen2" : "llama") + " synthetic " + dtype_name(t));
    }
  }
}

// A prompt long enough for the opt-in AMX-BF16 table's tiles (one chunk of 300 rows, from 256 for
// these types), where the engine also skips the int8 activations those matrices no longer read. The
// oracle rounds activations through Q8 and the tiles through bf16, so the logit scale's 2e-2 again.
TEST(TransformerVsNaive, SyntheticLongPromptOnBf16Tiles) {
  const kernels::KernelTable* amx = kernels::amx_bf16_table();
  if (amx == nullptr) GTEST_SKIP() << "no AMX-BF16 on this CPU";
  std::vector<int> ids(300);
  for (DType t : {DType::kQ8_0, DType::kQ4_0}) {
    ASSERT_LE(amx->bf16_min_tokens[dtype_index(t)], static_cast<int>(ids.size())) << dtype_name(t);
    auto m = testing::make_synthetic_model(t, 77, true);
    m->cfg.max_ctx = static_cast<int>(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(1 + (i * 37) % (m->cfg.vocab_size - 1));
    const auto expected = naive_logits(m->cfg, m->w, ids, true);
    const FastRun r = fast_logits(m->cfg, m->w, ids, *amx, DType::kF16, 512, 2, kDefaultInlineMacs);
    for (size_t p = 0; p < ids.size(); p += 23) {
      const float tol = 2e-2f * std::max(1.0f, max_abs(expected[p])) * 5.0f;  // F16 cache, as above
      expect_row_close(std::string(dtype_name(t)) + " pos=" + std::to_string(p) + " prefill vs naive", expected[p].data(),
                       r.prefill.data() + p * m->cfg.vocab_size, m->cfg.vocab_size, tol);
    }
  }
}

TEST(Transformer, CancelStopsBetweenLayersAndChunks) {
  auto m = testing::make_synthetic_model(DType::kF32, 7);
  ThreadPool pool(2);
  Transformer tf(m->cfg, m->w, pool, kernels::active_kernels());
  KvCache kv(m->cfg, 16, DType::kF16);
  Activations acts(m->cfg, 4, 16, 2);
  std::atomic<bool> cancel{true};
  const std::vector<int> ids(10, 3);
  EXPECT_EQ(0, tf.forward(ids, 0, kv, acts, nullptr, &cancel));
  cancel = false;
  EXPECT_EQ(10, tf.forward(ids, 0, kv, acts, nullptr, &cancel));
}

// A row's RoPE angles are kept across layers but follow its position: a decode row reused at the
// next position, or a row of another sequence, gets that position's cosines and sines.
TEST(Activations, RopeAnglesFollowTheRowsPosition) {
  auto m = testing::make_synthetic_model(DType::kF32, 7);
  Activations acts(m->cfg, 4, 16, 1);
  const auto freq = kernels::rope_frequencies(m->cfg.rope_dim, m->cfg.rope_theta, m->cfg.rope_factors());
  std::vector<float> expect(static_cast<size_t>(m->cfg.rope_dim));
  for (int pos : {3, 3, 4, 0, 9}) {
    for (int t : {0, 2}) {
      kernels::rope_cos_sin(pos + t, freq, expect.data());
      const float* got = acts.rope_cs(t, pos + t);
      for (size_t i = 0; i < expect.size(); ++i) ASSERT_EQ(expect[i], got[i]) << "pos " << pos + t << " i " << i;
    }
  }
}

// ---- golden greedy ids on every ISA (forced kernel tables, both KV types) ---------------------------

TEST(TransformerGolden, Stories260KGreedy40EveryIsa) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  auto golden_path = anelm::testing::shared_model("reference/stories260K.greedy40.json");
  ASSERT_TRUE(golden_path);
  nlohmann::json j;
  std::ifstream(*golden_path) >> j;
  const auto golden = j["generated_ids"].get<std::vector<int>>();
  auto m = load_model(path.string());
  for (kernels::Isa isa : kernels::supported_isas()) {
    for (DType kv : {DType::kF16, DType::kF32}) {
      ThreadPool pool(2);
      Transformer tf(m->config, m->weights, pool, *kernels::kernel_table(isa));
      Generator gen(tf, 128, 8, kv, 2);
      GenerateRequest r;
      r.prompt = j["prompt_ids"].get<std::vector<int>>();
      r.max_tokens = 40;
      r.sampling.temperature = 0.0f;
      EXPECT_EQ(gen.generate(r, {}).ids, golden) << kernels::isa_name(isa) << " kv " << dtype_name(kv);
    }
  }
}

// ---- llama.cpp reference logits --------------------------------------------------------------------

struct RefCheck {
  float max_err = 0;
  int top1_checked = 0;
};

RefCheck compare_with_reference(const std::string& model, const std::string& ref_json, DType kv_type) {
  RefCheck rc;
  auto ref_path = anelm::testing::shared_model("reference/" + ref_json);
  auto model_path = anelm::testing::shared_model(model);
  if (!ref_path || !model_path) return rc;
  nlohmann::json j;
  std::ifstream(*ref_path) >> j;
  const std::vector<int> ids = j["ids"].get<std::vector<int>>();
  EngineOptions opts;
  opts.model_path = model_path->string();
  opts.threads = 2;
  opts.ctx = 64;
  opts.kv_type = kv_type;
  auto engine = Engine::load(opts);
  const int vocab = engine->config().vocab_size;
  const auto logits = engine->forward(ids, 0, true);
  for (const auto& pos : j["positions"]) {
    const int p = pos["pos"].get<int>();
    const float* row = logits.data() + static_cast<size_t>(p) * vocab;
    const auto& top = pos["top"];
    for (const auto& e : top) {
      const float err = std::fabs(row[e["id"].get<int>()] - e["logit"].get<float>());
      rc.max_err = std::max(rc.max_err, err);
      EXPECT_LE(err, 1e-2f) << model << " pos " << p << " id " << e["id"] << " ref " << e["logit"] << " ours "
                            << row[e["id"].get<int>()];
    }
    const float margin = top[0]["logit"].get<float>() - top[1]["logit"].get<float>();
    if (margin > 0.02f) {
      ++rc.top1_checked;
      int best = 0;
      for (int v = 1; v < vocab; ++v) best = row[v] > row[best] ? v : best;
      EXPECT_EQ(best, pos["greedy"].get<int>()) << model << " pos " << p << " (margin " << margin << ")";
    }
  }
  return rc;
}

TEST(ReferenceLogits, Stories260K) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  for (DType kv : {DType::kF16, DType::kF32}) {
    const RefCheck rc = compare_with_reference("stories260K.gguf", "stories260K.logits-top10.json", kv);
    std::cout << "[stories260K kv=" << dtype_name(kv) << "] max |logit - llama.cpp| = " << rc.max_err
              << ", top-1 checked at " << rc.top1_checked << " positions\n";
  }
}

TEST(ReferenceLogits, Llama2TinyRandom) {
  ANELM_REQUIRE_SHARED_MODEL(path, "llama-2-tiny-random.gguf");
  for (DType kv : {DType::kF16, DType::kF32}) {
    const RefCheck rc =
        compare_with_reference("llama-2-tiny-random.gguf", "llama-2-tiny-random.logits-top10.json", kv);
    std::cout << "[llama-2-tiny-random kv=" << dtype_name(kv) << "] max |logit - llama.cpp| = " << rc.max_err
              << ", top-1 checked at " << rc.top1_checked << " positions\n";
  }
}

}  // namespace
}  // namespace anelm::engine
