// POST /v1/rerank (and /rerank, /reranking, /v1/reranking, /v2/rerank): a query scored against
// documents by a reranker, as llama-server serves it. Two request shapes: Jina's and Cohere's
// (`documents`, answered {"results": [{"index", "relevance_score"}]}) and Hugging Face TEI's
// (`texts`, answered with a bare array of {"index", "score"}). Engine-free: the handler
// (handlers_rerank.cpp) tokenizes each pair and runs the engine.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace anelm::server {

struct RerankLimits {
  static constexpr size_t kMaxDocuments = 2048;  // one engine job; as the embeddings' input limit
};

// Qwen3-Reranker's prompt, as its model card gives it and llama.cpp's converter stores it in
// tokenizer.chat_template.rerank: {query} and {document} are filled in. A reranker served with
// --reranking whose files carry no rerank template uses it.
extern const char* const kQwen3RerankTemplate;

struct RerankRequest {
  std::string query;
  std::vector<std::string> documents;
  size_t top_n = 0;              // results kept, best first: every document unless set
  bool return_documents = false; // Jina/Cohere: each result carries {"document": {"text"}}
  bool tei = false;              // TEI's shape (`texts`, `return_text`, a bare array of {index, score})
};

// Throws ApiError 400 naming the field (query, documents, documents[i], texts, top_n, ...).
// `model` and fields without meaning here are accepted and logged at debug level.
RerankRequest parse_rerank_request(std::string_view body);

// The response body: results sorted by score (highest first, ties by index), cut to top_n.
// `scores` has one relevance score per document.
std::string rerank_response_body(const RerankRequest& r, std::span<const float> scores, const std::string& model,
                                 int prompt_tokens);

}  // namespace anelm::server
