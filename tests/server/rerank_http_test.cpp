// POST /v1/rerank over HTTP on tiny Qwen3 rerankers made by `anelm make-model --pooling rank` (the
// classifier head and rerank template llama.cpp's converter writes for Qwen3-Reranker) with the real
// Qwen2.5 tokenizer: every score against llama.cpp's (node-llama-cpp's ranking context, the pair built
// as llama-server builds it: tests/server/peer_rerank.mjs), the same token counts, the sort and
// top_n, the Jina/Cohere and TEI shapes, the refusals by field, and the embedding routes refusing a
// reranker (and the rerank routes a model that is not one).
#include <gtest/gtest.h>

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "peer_embed.h"
#include "real_model_server.h"
#include "tests/support/shared_data.h"

namespace anelm::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A tiny model with Qwen2.5's tokenizer (its "yes" and "no") made by this build's anelm.
std::string make_model(const fs::path& dir, const std::string& name, const std::string& args) {
  return anelm::testing::make_model_with_qwen25_tokenizer(dir, name, "--shape tiny --seed 11 " + args);
}

struct PeerScores {
  std::vector<double> scores;
  std::vector<int> tokens;
};

// llama.cpp's score and token count of each (query, document) pair, with flash attention `fa` ("on",
// "off", or "" for llama.cpp's choice); nullopt without the peer kit.
std::optional<PeerScores> peer_rerank(const std::string& model, const std::string& query,
                                      const std::vector<std::string>& docs, const std::string& fa = "") {
  const auto j = anelm::testing::run_peer_script("peer_rerank.mjs", model, {{"query", query}, {"documents", docs}}, fa);
  if (!j) return std::nullopt;
  if (!j->contains("scores")) return PeerScores{};
  return PeerScores{(*j)["scores"].get<std::vector<double>>(), (*j)["tokens"].get<std::vector<int>>()};
}

httplib::Result post(int port, const std::string& path, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(300, 0);
  return c.Post(path, body.dump(), "application/json");
}

// ~600 tokens of varied prose.
std::string long_document() {
  static const char* words[] = {"river", "stone", "lantern", "quietly", "harbor", "seven", "garden", "orbit"};
  std::string s;
  for (int i = 0; i < 400; ++i) s += std::string(words[(i * 5 + i / 8) % 8]) + (i % 6 == 5 ? ". " : " ");
  return s;
}

const std::string kQuery = "What do cats eat?";
const std::vector<std::string> kDocs = {
    "Cats are obligate carnivores: they eat meat, mostly small prey such as mice and birds.",
    "The Eiffel Tower was finished in 1889 for the World's Fair in Paris.",
    "Le chat mange des croquettes et boit de l'eau. 猫は魚が好きです。",
    "",
    "x",
};

class RerankHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(anelm::testing::make_temp_dir("rerank-http"));
    f32_ = new std::string(make_model(*dir_, "rerank-f32.gguf", "--arch qwen3 --dtype f32 --pooling rank"));
    q8_ = new std::string(make_model(*dir_, "rerank-q8_0.gguf", "--arch qwen3 --dtype q8_0 --pooling rank --shape tiny256"));
    // The same weights as f32_ stored as a causal LM (no head, no rerank template), GGUF and HF.
    plain_ = new std::string(make_model(*dir_, "plain-f32.gguf", "--arch qwen3 --dtype f32"));
    hf_ = new std::string(make_model(*dir_, "plain-f32-hf", "--arch qwen3 --dtype f32 --format hf"));
    qwen2_ = new std::string(make_model(*dir_, "qwen2.gguf", "--arch qwen2 --dtype f16"));
  }
  static void TearDownTestSuite() { delete f32_, delete q8_, delete plain_, delete hf_, delete qwen2_, delete dir_; }

  void SetUp() override {
    if (!anelm::testing::shared_model("qwen2.5-0.5b-instruct"))
      GTEST_SKIP() << "shared test data not found: ../shared/models/qwen2.5-0.5b-instruct";
    ASSERT_FALSE(f32_->empty() || q8_->empty() || plain_->empty() || hf_->empty() || qwen2_->empty());
  }

  void serve(const std::string& model, int ctx = 2048, bool reranking = false) {
    engine::EngineOptions e;
    e.model_path = model;
    e.threads = 2;
    e.ctx = ctx;
    e.parallel = 2;
    server_.reset();
    server_ = std::make_unique<anelm::testing::RealModelServer>(
        e, "reranker", 16, [reranking](ServerOptions& o) { o.reranking = reranking; });
    port_ = server_->port();
  }

  json rerank(const json& body, const std::string& path = "/v1/rerank") {
    const auto r = post(port_, path, body);
    if (!r || r->status != 200) {
      ADD_FAILURE() << path << ": " << (r ? std::to_string(r->status) + " " + r->body : "no response");
      return json::object();
    }
    return json::parse(r->body);
  }

  // Every score of one request against llama.cpp's, within `tol`; the token counts equal. tol < 0:
  // within llama.cpp's own spread, the largest difference between its scores with flash attention
  // on and off (the quantised models', where the two part by up to a few hundredths).
  void expect_matches_peer(const std::string& model, const std::vector<std::string>& docs, double tol) {
    const auto peer = peer_rerank(model, kQuery, docs, tol < 0 ? "on" : "");
    if (!peer) GTEST_SKIP() << "llama.cpp peer kit or node not found (../shared/peers)";
    if (tol < 0) {
      const auto off = peer_rerank(model, kQuery, docs, "off");
      ASSERT_TRUE(off && off->scores.size() == docs.size());
      tol = 1e-4;
      for (size_t i = 0; i < docs.size(); ++i) tol = std::max(tol, std::abs(peer->scores[i] - off->scores[i]));
      std::printf("[ spread   ] llama.cpp flash attention on vs off: %.6f\n", tol);
    }
    ASSERT_EQ(peer->scores.size(), docs.size());
    const json j = rerank({{"query", kQuery}, {"documents", docs}});
    ASSERT_EQ(j["results"].size(), docs.size());
    int tokens = 0;
    for (int n : peer->tokens) tokens += n;
    EXPECT_EQ(j["usage"]["prompt_tokens"], tokens) << "the pairs are tokenized as llama-server does";
    std::vector<bool> seen(docs.size());
    double prev = 2;
    for (const json& e : j["results"]) {
      const size_t i = e["index"];
      ASSERT_LT(i, docs.size());
      EXPECT_FALSE(seen[i]);
      seen[i] = true;
      const double s = e["relevance_score"];
      EXPECT_LE(s, prev) << "sorted by score, highest first";
      prev = s;
      std::printf("[ score    ] %s doc %zu: %.6f llama.cpp %.6f\n", fs::path(model).filename().c_str(), i, s,
                  peer->scores[i]);
      EXPECT_NEAR(s, peer->scores[i], tol) << "document " << i;
    }
  }

  static fs::path* dir_;
  static std::string *f32_, *q8_, *plain_, *hf_, *qwen2_;
  std::unique_ptr<anelm::testing::RealModelServer> server_;
  int port_ = 0;
};

fs::path* RerankHttp::dir_ = nullptr;
std::string* RerankHttp::f32_ = nullptr;
std::string* RerankHttp::q8_ = nullptr;
std::string* RerankHttp::plain_ = nullptr;
std::string* RerankHttp::hf_ = nullptr;
std::string* RerankHttp::qwen2_ = nullptr;

TEST_F(RerankHttp, ScoresMatchLlamaCpp) {
  serve(*f32_);
  std::vector<std::string> docs = kDocs;
  docs.push_back(long_document());
  expect_matches_peer(*f32_, docs, 1e-4);
}

// Q8_0 on a shape whose rows take the block type throughout (the classifier head too).
TEST_F(RerankHttp, QuantizedScoresMatchLlamaCppWithinItsOwnSpread) {
  serve(*q8_);
  expect_matches_peer(*q8_, kDocs, -1);
}

TEST_F(RerankHttp, ScoresDoNotDependOnTheOtherDocuments) {
  serve(*f32_);
  const json all = rerank({{"query", kQuery}, {"documents", kDocs}});
  ASSERT_EQ(all["results"].size(), kDocs.size());
  for (const json& e : all["results"]) {
    const size_t i = e["index"];
    const json one = rerank({{"query", kQuery}, {"documents", {kDocs[i]}}});
    ASSERT_EQ(one["results"].size(), 1u);
    EXPECT_EQ(one["results"][0]["index"], 0);
    EXPECT_NEAR(one["results"][0]["relevance_score"].get<double>(), e["relevance_score"].get<double>(), 1e-5) << i;
  }
}

TEST_F(RerankHttp, RequestShapes) {
  serve(*f32_);
  const json base = rerank({{"query", kQuery}, {"documents", kDocs}, {"model", "anything"}});
  ASSERT_EQ(base["results"].size(), kDocs.size());
  EXPECT_EQ(base["object"], "list");
  EXPECT_EQ(base["model"], "reranker");
  EXPECT_EQ(base["usage"]["prompt_tokens"], base["usage"]["total_tokens"]);
  EXPECT_FALSE(base["results"][0].contains("document")) << "documents only when asked, as llama-server";

  // top_n keeps the best; return_documents adds each text; objects with "text" are documents too;
  // every path llama-server serves, and Cohere v2's, answer the same.
  json docs_as_objects = json::array();
  for (const auto& d : kDocs) docs_as_objects.push_back({{"text", d}});
  for (const char* path : {"/v1/rerank", "/rerank", "/v1/reranking", "/reranking", "/v2/rerank"}) {
    const json top = rerank({{"query", kQuery}, {"documents", docs_as_objects}, {"top_n", 2}, {"return_documents", true}},
                            path);
    ASSERT_EQ(top["results"].size(), 2u) << path;
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(top["results"][k]["index"], base["results"][k]["index"]) << path;
      EXPECT_EQ(top["results"][k]["relevance_score"], base["results"][k]["relevance_score"]) << path;
      EXPECT_EQ(top["results"][k]["document"]["text"], kDocs[base["results"][k]["index"].get<size_t>()]) << path;
    }
  }
  const json big = rerank({{"query", kQuery}, {"documents", kDocs}, {"top_n", 100}});
  EXPECT_EQ(big["results"].size(), kDocs.size());

  // TEI: `texts`, answered with a bare array of {index, score} (and text with return_text).
  const json tei = rerank({{"query", kQuery}, {"texts", kDocs}, {"return_text", true}, {"truncate", true}});
  ASSERT_TRUE(tei.is_array());
  ASSERT_EQ(tei.size(), kDocs.size());
  for (size_t k = 0; k < tei.size(); ++k) {
    EXPECT_EQ(tei[k]["index"], base["results"][k]["index"]);
    EXPECT_EQ(tei[k]["score"], base["results"][k]["relevance_score"]);
    EXPECT_EQ(tei[k]["text"], kDocs[tei[k]["index"].get<size_t>()]);
  }
}

TEST_F(RerankHttp, RefusalsNameTheField) {
  serve(*f32_, 256);
  auto expect_400 = [&](const json& body, const std::string& param) {
    const auto r = post(port_, "/v1/rerank", body);
    ASSERT_TRUE(r) << body.dump();
    EXPECT_EQ(r->status, 400) << body.dump() << " -> " << r->body;
    const json e = json::parse(r->body, nullptr, false);
    ASSERT_FALSE(e.is_discarded()) << r->body;
    EXPECT_EQ(e["error"]["param"], param) << r->body;
  };
  expect_400({{"documents", kDocs}}, "query");
  expect_400({{"query", 3}, {"documents", kDocs}}, "query");
  expect_400({{"query", kQuery}}, "documents");
  expect_400({{"query", kQuery}, {"documents", json::array()}}, "documents");
  expect_400({{"query", kQuery}, {"documents", {"a", "b", 7}}}, "documents[2]");
  expect_400({{"query", kQuery}, {"documents", {"a", {{"title", "b"}}}}}, "documents[1]");
  expect_400({{"query", kQuery}, {"documents", kDocs}, {"texts", kDocs}}, "texts");
  expect_400({{"query", kQuery}, {"documents", kDocs}, {"top_n", 0}}, "top_n");
  expect_400({{"query", kQuery}, {"documents", kDocs}, {"top_n", "3"}}, "top_n");
  expect_400({{"query", kQuery}, {"texts", kDocs}, {"raw_scores", true}}, "raw_scores");
  expect_400({{"query", kQuery}, {"documents", kDocs}, {"return_documents", "yes"}}, "return_documents");
  expect_400({{"query", kQuery}, {"documents", std::vector<std::string>(2049, "a")}}, "documents");
  // A pair longer than the context (256) is refused naming the document, with OpenAI's code.
  const auto r = post(port_, "/v1/rerank", {{"query", kQuery}, {"documents", {"short", long_document()}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  const json e = json::parse(r->body);
  EXPECT_EQ(e["error"]["param"], "documents[1]");
  EXPECT_EQ(e["error"]["code"], "context_length_exceeded");

  // A reranker gives no embeddings.
  for (const char* path : {"/v1/embeddings", "/api/embed"}) {
    const auto emb = post(port_, path, {{"input", "x"}});
    ASSERT_TRUE(emb);
    EXPECT_EQ(emb->status, 501) << path;
    EXPECT_NE(emb->body.find("reranker"), std::string::npos) << emb->body;
  }
}

// --reranking serves the causal-LM form of a Qwen3-Reranker (an HF directory, or a GGUF converted
// without its head) as the converted reranker: the same weights score the same, GGUF and HF.
TEST_F(RerankHttp, ACausalLmServedWithRerankingScoresAsItsConvertedFile) {
  const json body = {{"query", kQuery}, {"documents", kDocs}};
  serve(*f32_);
  const json want = rerank(body);
  for (const std::string* model : {plain_, hf_}) {
    serve(*model, 2048, /*reranking=*/true);
    const json got = rerank(body);
    EXPECT_EQ(got["usage"], want["usage"]) << *model << ": the same pairs, from Qwen3-Reranker's template";
    ASSERT_EQ(got["results"].size(), want["results"].size());
    for (size_t k = 0; k < want["results"].size(); ++k) {
      EXPECT_EQ(got["results"][k]["index"], want["results"][k]["index"]) << *model;
      EXPECT_NEAR(got["results"][k]["relevance_score"].get<double>(), want["results"][k]["relevance_score"].get<double>(),
                  1e-6) << *model;
    }
  }
  // Only Qwen3 is read as a reranker.
  try {
    serve(*qwen2_, 2048, /*reranking=*/true);
    ADD_FAILURE() << "--reranking on a qwen2 model was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("--reranking"), std::string::npos) << e.what();
  }
}

TEST_F(RerankHttp, AModelThatIsNotARerankerIsRefused) {
  serve(*plain_);
  const auto r = post(port_, "/v1/rerank", {{"query", kQuery}, {"documents", kDocs}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 501);
  EXPECT_NE(r->body.find("not a reranker"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace anelm::server
