// The rerank request parser, the pair prompt and the response body, apart from the engine (the scores
// against llama.cpp are rerank_http_test's).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/handlers.h"
#include "server/model_bundle.h"
#include "server/rerank_api.h"
#include "tests/support/shared_data.h"
#include "tokenizer/tokenizer.h"

namespace anelm::server {
namespace {

using nlohmann::json;

TEST(RerankRequest, ReadsJinaCohereAndTeiShapes) {
  RerankRequest r = parse_rerank_request(
      R"({"model": "m", "query": "q", "documents": ["a", {"text": "b"}], "top_n": 7, "return_documents": true,
          "max_tokens_per_doc": 512, "rank_fields": ["text"]})");
  EXPECT_EQ(r.query, "q");
  EXPECT_EQ(r.documents, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.top_n, 2u) << "top_n beyond the documents keeps them all";
  EXPECT_TRUE(r.return_documents);
  EXPECT_FALSE(r.tei);
  r = parse_rerank_request(R"({"query": "", "texts": ["a", "b", "c"], "return_text": true, "top_n": null})");
  EXPECT_TRUE(r.tei);
  EXPECT_EQ(r.top_n, 3u);
  EXPECT_TRUE(r.return_documents);
  EXPECT_EQ(r.query, "");
}

TEST(RerankRequest, RefusesByField) {
  auto param_of = [](const char* body) {
    try {
      parse_rerank_request(body);
    } catch (const ApiError& e) {
      return e.param();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(param_of(R"({"documents": ["a"]})"), "query");
  EXPECT_EQ(param_of(R"({"query": null, "documents": ["a"]})"), "query");
  EXPECT_EQ(param_of(R"({"query": "q"})"), "documents");
  EXPECT_EQ(param_of(R"({"query": "q", "documents": "a"})"), "documents");
  EXPECT_EQ(param_of(R"({"query": "q", "texts": [1]})"), "texts[0]");
  EXPECT_EQ(param_of(R"({"query": "q", "documents": [{"text": 1}]})"), "documents[0]");
  EXPECT_EQ(param_of(R"({"query": "q", "documents": ["a"], "top_n": -1})"), "top_n");
  EXPECT_EQ(param_of(R"({"query": "q", "documents": ["a"], "top_n": 1.5})"), "top_n");
  EXPECT_EQ(param_of(R"({"query": "q", "documents": ["a"], "model": 1})"), "model");
  EXPECT_EQ(param_of(R"({"query": "q", "documents": ["a"], "raw_scores": false})"), "(accepted)");
  EXPECT_EQ(param_of(R"({"query": "q", "documents": ["a"], "return_text": 1})"), "return_text");
  EXPECT_EQ(param_of(R"([1])"), "");
}

TEST(RerankResponse, SortsByScoreKeepsTiesInOrderAndCutsToTopN) {
  RerankRequest r = parse_rerank_request(R"({"query": "q", "documents": ["a", "b", "c", "d"], "top_n": 3})");
  const std::vector<float> scores = {0.25f, 0.75f, 0.25f, 0.5f};
  const json j = json::parse(rerank_response_body(r, scores, "m", 42));
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 42);
  ASSERT_EQ(j["results"].size(), 3u);
  EXPECT_EQ(j["results"][0]["index"], 1);
  EXPECT_EQ(j["results"][1]["index"], 3);
  EXPECT_EQ(j["results"][2]["index"], 0) << "a tie keeps the documents' order";
  EXPECT_EQ(j["results"][0]["relevance_score"], 0.75);

  r = parse_rerank_request(R"({"query": "q", "texts": ["a", "b"], "return_text": true})");
  const json tei = json::parse(rerank_response_body(r, std::vector<float>{0.1f, 0.9f}, "m", 1));
  ASSERT_TRUE(tei.is_array());
  EXPECT_EQ(tei[0], (json{{"index", 1}, {"score", 0.9f}, {"text", "b"}}));
}

// The pair through the model's rerank template, replaced in one pass: a query that contains
// "{document}" stays as written.
TEST(RerankPrompt, FillsTheTemplateInOnePassOrJoinsQueryAndDocument) {
  const auto dir = anelm::testing::shared_model("qwen2.5-0.5b-instruct");
  if (!dir) GTEST_SKIP() << "shared test data not found: ../shared/models/qwen2.5-0.5b-instruct";
  const auto plain = load_tokenizer(dir->string());
  ASSERT_TRUE(plain->vocab().rerank_template.empty());
  EXPECT_EQ(rerank_prompt(*plain, "", "what", " is it"), plain->encode("what is it", false))
      << "without a template: query then document (no BOS or EOS in this vocabulary)";

  const auto model = anelm::testing::make_temp_dir("rerank-api") / "rr.gguf";
  const std::string cmd = anelm::testing::anelm_binary().string() +
                          " make-model --arch qwen3 --shape tiny --pooling rank --tokenizer-from " + dir->string() +
                          " --out " + model.string() + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto tk = load_tokenizer(model.string());
  std::string text = tk->vocab().rerank_template;
  EXPECT_EQ(text, kQwen3RerankTemplate);
  ASSERT_NE(text.find("{query}"), std::string::npos);
  text.replace(text.find("{query}"), 7, "a {document} b");
  text.replace(text.rfind("{document}"), 10, "<|im_end|>D");
  EXPECT_EQ(rerank_prompt(*tk, tk->vocab().rerank_template, "a {document} b", "<|im_end|>D"), tk->encode(text, true))
      << "special tokens are parsed, as llama-server tokenizes the pair";
}

}  // namespace
}  // namespace anelm::server
