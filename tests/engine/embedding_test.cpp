// Embedder against the naive forward oracle (by linearity of the LM head: W . pool(h) equals the
// pooled oracle logits), packing invariance (inputs alone vs packed at distinct cache bases and
// split across passes), validation, cancellation, and Engine::embed on a GGUF embedding model.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/embedding.h"
#include "engine/engine.h"
#include "engine/error.h"
#include "engine/gguf.h"
#include "engine/kernels/kernels.h"
#include "engine/thread_pool.h"
#include "engine/transformer.h"
#include "tests/engine/naive_forward_util.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

constexpr int kCtx = 64;       // the synthetic model's max_ctx
constexpr int kMaxBatch = 8;   // small: inputs split across passes and share them

double cosine(std::span<const float> a, std::span<const float> b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

std::vector<int> ids(int n, int seed) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(3 + (i * 7 + seed * 13) % 60);
  return v;
}

class EmbedderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = testing::make_synthetic_model(DType::kF32, 5);
    tf_.emplace(m_->cfg, m_->w, pool_, kernels::active_kernels());
  }

  // W_out . e: the LM head applied to an embedding (tied: the token embedding matrix, F32 here).
  std::vector<float> head(std::span<const float> e) const {
    const ModelConfig& c = m_->cfg;
    const TensorView& w = c.tie_embeddings ? m_->w.tok_embd : m_->w.lm_head;
    std::vector<float> out(static_cast<size_t>(c.vocab_size));
    const auto* W = static_cast<const float*>(w.data);
    for (int v = 0; v < c.vocab_size; ++v) {
      double s = 0;
      for (int i = 0; i < c.d_model; ++i) s += double(W[int64_t(v) * c.d_model + i]) * e[size_t(i)];
      out[size_t(v)] = float(s);
    }
    return out;
  }

  // The oracle's logits at every position of `in`, from a fresh F16-KV state.
  std::vector<std::vector<float>> oracle(const std::vector<int>& in) const {
    testing::NaiveState s(m_->cfg, kCtx, /*kv_f16=*/true);
    std::vector<std::vector<float>> out;
    for (size_t p = 0; p < in.size(); ++p) out.push_back(testing::naive_forward(m_->cfg, m_->w, s, in[p], int(p)));
    return out;
  }

  std::unique_ptr<testing::SyntheticModel> m_;
  ThreadPool pool_{2};
  std::optional<Transformer> tf_;
};

TEST_F(EmbedderTest, PoolingsMatchTheNaiveOracle) {
  const std::vector<std::vector<int>> inputs = {ids(1, 1), ids(5, 2), ids(8, 3), ids(19, 4), ids(kCtx, 5)};
  for (Pooling p : {Pooling::kLast, Pooling::kMean, Pooling::kCls}) {
    Embedder emb(*tf_, kCtx, kMaxBatch, DType::kF16, pool_.size(), /*pack=*/true);
    EmbedRequest r;
    r.inputs = inputs;
    r.pooling = p;
    const EmbedResult res = emb.embed(r);
    ASSERT_EQ(res.dims, m_->cfg.d_model);
    ASSERT_EQ(res.vectors.size(), inputs.size() * size_t(res.dims));
    int tokens = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      tokens += int(inputs[i].size());
      const auto logits = oracle(inputs[i]);
      std::vector<float> want(logits[0].size(), 0.0f);
      if (p == Pooling::kLast) want = logits.back();
      if (p == Pooling::kCls) want = logits.front();
      if (p == Pooling::kMean) {
        for (const auto& l : logits)
          for (size_t v = 0; v < want.size(); ++v) want[v] += l[v] / float(logits.size());
      }
      const auto got = head({res.vectors.data() + i * size_t(res.dims), size_t(res.dims)});
      double worst = 0, scale = 0;
      for (size_t v = 0; v < want.size(); ++v) worst = std::max(worst, double(std::fabs(got[v] - want[v]))), scale = std::max(scale, double(std::fabs(want[v])));
      EXPECT_LT(worst, 2e-3 * scale) << pooling_name(p) << " input " << i << " (" << inputs[i].size() << " tokens)";
      EXPECT_GT(cosine(got, want), 0.99999) << pooling_name(p) << " input " << i;
    }
    EXPECT_EQ(res.prompt_tokens, tokens);
  }
}

// Packed inputs (shared passes, distinct cache bases, chunks across passes) equal each input alone.
TEST_F(EmbedderTest, PackingDoesNotMixInputs) {
  std::vector<std::vector<int>> inputs;
  for (int i = 0; i < 12; ++i) inputs.push_back(ids(1 + (i * 5) % 23, i));
  for (Pooling p : {Pooling::kLast, Pooling::kMean}) {
    Embedder packed(*tf_, kCtx, kMaxBatch, DType::kF16, pool_.size(), true);
    Embedder single(*tf_, kCtx, kMaxBatch, DType::kF16, pool_.size(), false);
    EmbedRequest all;
    all.inputs = inputs;
    all.pooling = p;
    const EmbedResult a = packed.embed(all);
    const EmbedResult b = single.embed(all);
    for (size_t i = 0; i < inputs.size(); ++i) {
      EmbedRequest one;
      one.inputs = {inputs[i]};
      one.pooling = p;
      const EmbedResult c = packed.embed(one);
      const std::span<const float> va(a.vectors.data() + i * size_t(a.dims), size_t(a.dims));
      const std::span<const float> vb(b.vectors.data() + i * size_t(b.dims), size_t(b.dims));
      EXPECT_GT(cosine(va, c.vectors), 0.999999) << pooling_name(p) << " input " << i;
      EXPECT_GT(cosine(vb, c.vectors), 0.999999) << pooling_name(p) << " input " << i;
    }
  }
}

// Several requests queued at once share passes and each gets its own vectors.
TEST_F(EmbedderTest, ConcurrentRequestsEachGetTheirOwn) {
  Embedder emb(*tf_, kCtx, kMaxBatch, DType::kF16, pool_.size(), true);
  std::vector<std::optional<EmbedResult>> got(6);
  for (int j = 0; j < 6; ++j) {
    EmbedRequest r;
    r.inputs = {ids(3 + j, j), ids(9, j + 10)};
    r.pooling = Pooling::kLast;
    emb.start(r, [&got, j](EmbedResult&& res, const Error* e) {
      ASSERT_EQ(e, nullptr);
      got[size_t(j)] = std::move(res);
    });
  }
  while (emb.step()) {
  }
  for (int j = 0; j < 6; ++j) {
    ASSERT_TRUE(got[size_t(j)]);
    EmbedRequest r;
    r.inputs = {ids(3 + j, j), ids(9, j + 10)};
    r.pooling = Pooling::kLast;
    const EmbedResult alone = emb.embed(r);
    EXPECT_GT(cosine(got[size_t(j)]->vectors, alone.vectors), 0.999999) << "request " << j;
  }
}

TEST_F(EmbedderTest, ValidationNamesTheInput) {
  Embedder emb(*tf_, kCtx, kMaxBatch, DType::kF16, pool_.size(), true);
  EmbedRequest r;
  r.pooling = Pooling::kMean;
  r.inputs = {ids(3, 1), {}};
  try {
    emb.start(r, {});
    FAIL() << "empty input accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("input[1]"), std::string::npos) << e.what();
  }
  r.inputs = {ids(3, 1), ids(kCtx + 1, 2)};
  try {
    emb.start(r, {});
    FAIL() << "too long input accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kContextLength);
    EXPECT_NE(std::string(e.what()).find("input[1] has 65 tokens"), std::string::npos) << e.what();
  }
  r.inputs = {{m_->cfg.vocab_size}};
  EXPECT_THROW(emb.start(r, {}), Error);
  r.inputs = {ids(3, 1)};
  r.pooling = Pooling::kNone;
  EXPECT_THROW(emb.start(r, {}), Error);
  EXPECT_FALSE(emb.pending());
}

TEST_F(EmbedderTest, CancelledRequestEndsOthersFinish) {
  Embedder emb(*tf_, kCtx, kMaxBatch, DType::kF16, pool_.size(), true);
  std::atomic<bool> cancel{false};
  std::optional<ErrorKind> first_error;
  bool second_ok = false;
  EmbedRequest a;
  a.inputs = {ids(40, 1), ids(40, 2)};
  a.pooling = Pooling::kMean;
  a.cancel = &cancel;
  emb.start(a, [&](EmbedResult&&, const Error* e) { first_error = e ? std::optional(e->kind()) : std::nullopt; });
  EmbedRequest b;
  b.inputs = {ids(10, 3)};
  b.pooling = Pooling::kMean;
  emb.start(b, [&](EmbedResult&& r, const Error* e) { second_ok = !e && r.vectors.size() == size_t(m_->cfg.d_model); });
  emb.step();  // the first request is under way
  cancel = true;
  while (emb.step()) {
  }
  ASSERT_TRUE(first_error);
  EXPECT_EQ(*first_error, ErrorKind::kCancelled);
  EXPECT_TRUE(second_ok);
}

TEST(EmbeddingNormalize, UnitLengthAndZeroKept) {
  std::vector<float> v = {3, 4};
  l2_normalize(v);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], 0.8f);
  std::vector<float> z = {0, 0};
  l2_normalize(z);
  EXPECT_EQ(z[0], 0.0f);
}

// A tiny f32 Qwen3 GGUF made with `pooling` in `dir` (the vocabulary of `tokenizer`, "" synthetic),
// loaded with an f32 KV cache.
struct MadeEngine {
  std::string path;
  std::unique_ptr<Engine> engine;
};
MadeEngine make_qwen3(const std::filesystem::path& dir, const std::string& name, Pooling pooling,
                      const std::string& tokenizer = "") {
  tools::MakeModelOptions mo;
  mo.arch = Arch::kQwen3;
  mo.shape = "tiny";
  mo.dtype = DType::kF32;
  mo.pooling = pooling;
  mo.tokenizer = tokenizer;
  EngineOptions eo;
  eo.model_path = tools::make_model(mo, (dir / name).string()).path;
  eo.threads = 2;
  eo.ctx = 128;
  eo.kv_type = DType::kF32;
  return {eo.model_path, Engine::load(eo)};
}

// A GGUF made with --pooling last: the loader reads pooling_type, Engine::embed serves it, and the
// last-token vector is the generation path's hidden state (its logits through the tied head).
TEST(EngineEmbed, GgufPoolingTypeAndLastTokenMatchesForward) {
  const MadeEngine made = make_qwen3(anelm::testing::make_temp_dir("embed-gguf"), "emb.gguf", Pooling::kLast);
  Engine* engine = made.engine.get();
  ASSERT_EQ(engine->config().pooling, Pooling::kLast);
  const std::vector<int> in = {11, 22, 33, 44, 55, 66, 77};
  EmbedRequest r;
  r.inputs = {in};
  r.pooling = Pooling::kLast;
  const EmbedResult e = engine->embed(r);
  const std::span<const float> logits = engine->forward(in, 0);
  // Tied head: logits[v] = tok_embd[v] . e for every (7th) vocabulary row.
  const ModelConfig& c = engine->config();
  ASSERT_TRUE(c.tie_embeddings);
  double worst = 0, scale = 0;
  auto gguf = GgufFile::open(made.path);
  const GgufTensorInfo* t = gguf->find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  const TensorView w = gguf->tensor_view(*t);
  for (int v = 0; v < c.vocab_size; v += 7) {
    const auto* W = static_cast<const float*>(w.data) + int64_t(v) * c.d_model;
    double s = 0;
    for (int i = 0; i < c.d_model; ++i) s += double(W[i]) * e.vectors[size_t(i)];
    worst = std::max(worst, std::fabs(s - logits[size_t(v)]));
    scale = std::max(scale, double(std::fabs(logits[size_t(v)])));
  }
  EXPECT_LT(worst, 1e-3 * scale);
}

// A GGUF made with --pooling rank (Qwen3-Reranker's layout): the score vector is the classifier head
// (cls.output.weight, read from the file) over the last token's normed state, softmaxed, computed
// here in double from the kLast vector; rank pooling on a model without the head is refused.
TEST(EngineEmbed, RankIsTheSoftmaxedClassifierHeadOverTheLastToken) {
  ANELM_REQUIRE_SHARED_MODEL(vocab, "qwen2.5-0.5b-instruct");  // the labels "yes" and "no"
  const auto dir = anelm::testing::make_temp_dir("rank-gguf");
  const MadeEngine made = make_qwen3(dir, "rank.gguf", Pooling::kRank, vocab.string());
  Engine* engine = made.engine.get();
  const ModelConfig& c = engine->config();
  ASSERT_EQ(c.pooling, Pooling::kRank);
  ASSERT_EQ(c.n_cls_out, 2);
  auto gguf = GgufFile::open(made.path);
  const GgufTensorInfo* t = gguf->find_tensor("cls.output.weight");
  ASSERT_NE(t, nullptr);
  const auto* W = static_cast<const float*>(gguf->tensor_view(*t).data);
  for (const std::vector<int>& in : {std::vector<int>{5}, std::vector<int>{11, 22, 33, 44, 55, 66, 77}, ids(40, 3)}) {
    EmbedRequest r;
    r.inputs = {in, in};  // twice: the second input's scores are written at its own offset
    r.pooling = Pooling::kLast;
    const EmbedResult h = engine->embed(r);
    r.pooling = Pooling::kRank;
    const EmbedResult p = engine->embed(r);
    ASSERT_EQ(p.dims, 2);
    ASSERT_EQ(p.vectors.size(), 4u);
    double z[2];
    for (int k = 0; k < 2; ++k) {
      z[k] = 0;
      for (int i = 0; i < c.d_model; ++i) z[k] += double(W[int64_t(k) * c.d_model + i]) * h.vectors[size_t(i)];
    }
    const double yes = 1.0 / (1.0 + std::exp(z[1] - z[0]));
    for (int j = 0; j < 2; ++j) {
      EXPECT_NEAR(p.vectors[size_t(2 * j)], yes, 1e-5) << in.size() << " tokens, input " << j;
      EXPECT_NEAR(p.vectors[size_t(2 * j + 1)], 1.0 - yes, 1e-5);
    }
  }

  const MadeEngine last = make_qwen3(dir, "last.gguf", Pooling::kLast);
  EmbedRequest r;
  r.inputs = {{5, 6}};
  r.pooling = Pooling::kRank;
  try {
    last.engine->embed(r);
    ADD_FAILURE() << "rank pooling without a classifier head was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("classifier head"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace anelm::engine
