// BERT embedding models (bge, all-MiniLM, ...: GGUF arch bert, WordPiece vocabulary) served on
// /v1/embeddings: random tiny files made by `anelm make-model --arch bert` with the real BGE vocabulary
// (llama.cpp's models/ggml-vocab-bert-bge.gguf) give llama.cpp's vectors (tests/server/peer_embed.mjs
// on the same file and texts: cosine >= 0.9999 for float weights; for Q8_0, whose rounded
// activations spread any two engines apart, 1 - cosine within twice llama.cpp's own between flash
// attention on and off) for mean and CLS pooling, one input and several packed into one pass, up to
// the 512 learned positions; longer inputs are refused (or truncated where the API asks for it),
// and generation endpoints answer 501. nomic-bert (nomic-embed-text: RoPE, fused QKV, SwiGLU) is
// held to the same bounds, with an input past BERT's 512 positions.
#include <gtest/gtest.h>

#include <httplib.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/config_gguf.h"
#include "engine/error.h"
#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "peer_embed.h"
#include "real_model_server.h"
#include "test_server.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

httplib::Result post(int port, const std::string& path, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(300, 0);
  return c.Post(path, body.dump(), "application/json");
}

const std::vector<std::string> kTexts = {
    "The quick brown fox jumps over the lazy dog.",
    "Héllo, Wörld! Embeddings map text to vectors: similar texts land close together (42 times).",
    "北京 is a city; unbelievable tokenization-with-hyphens and CAPS.",
};

// `words` English words and a period every sixth: about 1.17 WordPiece tokens per word.
std::string long_text(int words) {
  static const char* kWords[] = {"river", "stone", "lantern", "quietly", "harbor", "seven", "garden", "orbit"};
  std::string s;
  for (int i = 0; i < words; ++i) s += std::string(kWords[(i * 5 + i / 8) % 8]) + (i % 6 == 5 ? ". " : " ");
  return s;
}

// A copy of the GGUF `src` with `override_key` (when not empty) written as the bool true and one more
// f32 tensor `extra` [rows] (when not empty): the variants a loader must refuse.
std::string gguf_variant(const std::string& src, const std::string& dst, const std::string& override_key,
                         const std::string& extra = "", int64_t rows = 0) {
  auto g = engine::GgufFile::open(src);
  engine::GgufWriter w(static_cast<uint32_t>(g->alignment()));
  for (const std::string& k : g->keys()) {
    if (k != override_key) w.add_raw(k, g->raw_value(k));
  }
  if (!override_key.empty()) w.add_bool(override_key, true);
  std::vector<engine::TensorView> views;
  for (const engine::GgufTensorInfo& info : g->tensors()) {
    views.push_back(g->tensor_view(info));
    const engine::TensorView& v = views.back();
    w.add_tensor(info.name, v.dtype, std::vector<int64_t>(v.shape.begin(), v.shape.begin() + v.ndim));
  }
  if (!extra.empty()) w.add_tensor(extra, engine::DType::kF32, {rows});
  w.begin(dst);
  for (const engine::TensorView& v : views) w.write_data(v.data, static_cast<size_t>(v.nbytes));
  if (!extra.empty()) {
    const std::vector<float> zeros(static_cast<size_t>(rows));
    w.write_data(zeros.data(), zeros.size() * sizeof(float));
  }
  w.finish();
  return dst;
}

// The Error message of reading `path`'s config, or "" when it loads.
std::string config_error(const std::string& path) {
  try {
    engine::config_from_gguf(*engine::GgufFile::open(path));
  } catch (const anelm::Error& e) {
    return e.what();
  }
  return "";
}

class BertEmbeddings : public ::testing::Test {
 protected:
  void SetUp() override {
    vocab_ = anelm::testing::llama_vocab_file("ggml-vocab-bert-bge.gguf", &why_);
    if (!vocab_) GTEST_SKIP() << why_;
    dir_ = anelm::testing::make_temp_dir("bert-embeddings");
    if (!anelm::testing::peer_embed(make("bert-probe.gguf", "--dtype f16 --layers 1"), {"probe"}))
      GTEST_SKIP() << "llama.cpp peer kit not found (../shared/peers)";
  }

  std::string make(const std::string& name, const std::string& args, const std::string& arch = "bert") {
    const fs::path out = dir_ / name;
    const std::string cmd = anelm::testing::anelm_binary().string() + " make-model --arch " + arch + " --shape tiny --seed 5 " +
                            args + " --tokenizer-from " + vocab_->string() + " --out " + out.string() + " >/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out.string();
  }

  void serve(const std::string& model) {
    engine::EngineOptions e;
    e.model_path = model;
    e.threads = 2;
    server_.reset();
    server_ = std::make_unique<anelm::testing::RealModelServer>(e, "bge", 16);
    port_ = server_->port();
  }

  // Our vectors of `texts` (one request) against llama.cpp's: cosine >= 0.9999 each, or with
  // `quantized` weights 1 - cosine <= 2 (1 - llama.cpp's own cosine between flash attention on and off).
  void expect_matches_peer(const std::string& model, const std::vector<std::string>& texts, bool quantized = false) {
    using anelm::testing::cosine;
    const auto ours = anelm::testing::embedding_vectors(post(port_, "/v1/embeddings", {{"input", texts}, {"model", "bge"}}));
    const auto on = anelm::testing::peer_embed(model, texts, "on");
    const auto off = quantized ? anelm::testing::peer_embed(model, texts, "off") : on;
    ASSERT_TRUE(on && off);
    ASSERT_EQ(ours.size(), texts.size());
    ASSERT_EQ(on->size(), texts.size());
    ASSERT_EQ(off->size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      ASSERT_EQ(ours[i].size(), (*on)[i].size());
      EXPECT_NEAR(anelm::testing::l2_norm(ours[i]), 1.0, 1e-5);
      const double c = std::max(cosine(ours[i], (*on)[i]), cosine(ours[i], (*off)[i]));
      const double bound = quantized ? 1 - 2 * (1 - cosine((*on)[i], (*off)[i])) : 0.9999;
      std::printf("[ cosine   ] %s input %zu (%zu bytes): %.7f (bound %.7f)\n", fs::path(model).filename().c_str(), i,
                  texts[i].size(), c, bound);
      EXPECT_GE(c, bound) << "input " << i;
    }
  }

  std::optional<fs::path> vocab_;
  std::string why_;
  fs::path dir_;
  std::unique_ptr<anelm::testing::RealModelServer> server_;
  int port_ = 0;
};

TEST_F(BertEmbeddings, MeanPoolingMatchesLlamaCppInEveryWeightType) {
  for (const char* dtype : {"f32", "f16", "q8_0"}) {
    SCOPED_TRACE(dtype);
    const std::string model = make(std::string("bert-mean-") + dtype + ".gguf", std::string("--dtype ") + dtype);
    serve(model);
    const bool quantized = std::string(dtype) == "q8_0";
    expect_matches_peer(model, {kTexts[0]}, quantized);
    expect_matches_peer(model, kTexts, quantized);
  }
}

TEST_F(BertEmbeddings, ClsPoolingAndALongInputMatchLlamaCpp) {
  const std::string model = make("bert-cls.gguf", "--dtype f16 --pooling cls");
  serve(model);
  expect_matches_peer(model, kTexts);
  expect_matches_peer(model, {long_text(400), kTexts[1]});
}

TEST_F(BertEmbeddings, NomicBertMatchesLlamaCpp) {
  for (const char* dtype : {"f32", "q8_0"}) {
    SCOPED_TRACE(dtype);
    const std::string model = make(std::string("nomic-") + dtype + ".gguf", std::string("--dtype ") + dtype, "nomic-bert");
    serve(model);
    const bool quantized = std::string(dtype) == "q8_0";
    expect_matches_peer(model, kTexts, quantized);
    expect_matches_peer(model, {long_text(700)}, quantized);  // ~820 tokens: RoPE past 512 positions
  }
}

// What the encoders do not run is refused by name at load: a causal flag, a bias nomic-bert has no
// place for, a BERT reranker's classifier head. The unchanged files load.
TEST_F(BertEmbeddings, UnsupportedVariantsAreRefusedByName) {
  const std::string bert = make("bert-variants.gguf", "--dtype f32 --layers 1");
  const std::string nomic = make("nomic-variants.gguf", "--dtype f32 --layers 1", "nomic-bert");
  EXPECT_EQ(config_error(bert), "");
  EXPECT_EQ(config_error(nomic), "");
  const struct {
    std::string src, key, tensor, want;
  } cases[] = {
      {bert, "bert.attention.causal", "", "bert.attention.causal"},
      {nomic, "nomic-bert.attention.causal", "", "nomic-bert.attention.causal"},
      {nomic, "", "blk.0.attn_output.bias", "blk.0.attn_output.bias"},
      {bert, "", "cls.output.bias", ""},  // a bias alone is no head: loads
      {bert, "", "cls.weight", "cls.weight"},
  };
  int i = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.want.empty() ? c.tensor : c.want);
    const std::string out = gguf_variant(c.src, (dir_ / ("variant-" + std::to_string(i++) + ".gguf")).string(), c.key,
                                         c.tensor, 256);
    const std::string err = config_error(out);
    if (c.want.empty()) {
      EXPECT_EQ(err, "");
    } else {
      EXPECT_NE(err.find(c.want), std::string::npos) << err;
      EXPECT_NE(err.find("not supported"), std::string::npos) << err;
    }
  }
}

TEST_F(BertEmbeddings, InputsBeyondTheLearnedPositionsAndGenerationAreRefused) {
  const std::string model = make("bert-limits.gguf", "--dtype f16");
  serve(model);
  const auto h = server_->health();
  EXPECT_EQ(h.value("n_ctx", 0), 512) << h.dump();
  auto r = post(port_, "/v1/embeddings", {{"input", long_text(900)}, {"model", "bge"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("512"), std::string::npos) << r->body;
  // Ollama's /api/embed truncates by default: the vector of the first 512 tokens.
  r = post(port_, "/api/embed", {{"input", long_text(900)}, {"model", "bge"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = post(port_, "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"model", "bge"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 501) << r->body;
  EXPECT_NE(r->body.find("embedding model"), std::string::npos) << r->body;
  r = post(port_, "/v1/completions", {{"prompt", "hi"}, {"model", "bge"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 501) << r->body;
}

}  // namespace
}  // namespace anelm::server
