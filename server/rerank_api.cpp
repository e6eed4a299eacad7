// Rerank request parsing, pair prompts and the response body (Jina/Cohere and TEI shapes).
#include "server/rerank_api.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/json_body.h"

namespace anelm::server {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// documents: [{"text": ...}] is the deepest form.
constexpr int kMaxDepth = 8;

// Jina and Cohere take a document as a string or an object with a `text` (Cohere v1's form).
std::string document_text(const ordered_json& d, const std::string& where) {
  if (d.is_string()) return d.get<std::string>();
  if (d.is_object()) {
    const auto t = d.find("text");
    if (t != d.end() && t->is_string()) return t->get<std::string>();
  }
  throw invalid_field(where, where + " must be a string or an object with a string \"text\"");
}

std::vector<std::string> parse_documents(const ordered_json& a, const char* field) {
  if (!a.is_array() || a.empty()) throw invalid_field(field, std::string(field) + " must be a non-empty array of strings");
  if (a.size() > RerankLimits::kMaxDocuments) {
    throw invalid_field(field, std::string("at most ") + std::to_string(RerankLimits::kMaxDocuments) + " " + field +
                                   " per request, got " + std::to_string(a.size()));
  }
  std::vector<std::string> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) out.push_back(document_text(a[i], std::string(field) + "[" + std::to_string(i) + "]"));
  return out;
}

bool optional_bool(const ordered_json& v, const char* field) {
  if (v.is_null()) return false;
  if (!v.is_boolean()) throw invalid_field(field, std::string(field) + " must be a boolean");
  return v.get<bool>();
}

}  // namespace

const char* const kQwen3RerankTemplate =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: Given a "
    "web search query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: "
    "{document}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

RerankRequest parse_rerank_request(std::string_view body) {
  const ordered_json j = parse_json_body(body, kMaxDepth);
  RerankRequest r;
  bool has_query = false, has_docs = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "query") {
      if (!v.is_string()) throw invalid_field("query", "query must be a string");
      r.query = v.get<std::string>();
      has_query = true;
    } else if (key == "documents" || key == "texts") {
      if (v.is_null()) continue;
      if (has_docs) throw invalid_field(key, "give documents or texts (TEI), not both");
      r.documents = parse_documents(v, key.c_str());
      r.tei = key == "texts";
      has_docs = true;
    } else if (key == "top_n") {
      if (v.is_null()) continue;
      if (!v.is_number_integer() || v.get<int64_t>() < 1) throw invalid_field("top_n", "top_n must be an integer >= 1");
      r.top_n = static_cast<size_t>(std::min<int64_t>(v.get<int64_t>(), RerankLimits::kMaxDocuments));
    } else if (key == "return_documents" || key == "return_text") {
      r.return_documents = optional_bool(v, key.c_str()) || r.return_documents;
    } else if (key == "raw_scores") {
      // TEI's logits instead of probabilities: it would change every score.
      if (optional_bool(v, "raw_scores")) throw invalid_field("raw_scores", "raw_scores is not supported: scores are the reranker's probabilities");
    } else if (key == "model") {
      if (!v.is_null() && !v.is_string()) throw invalid_field("model", "model must be a string");
    } else {
      // truncate, max_tokens_per_doc, rank_fields, user, ... (server/http-api.md#api_rerank). A pair
      // longer than the context is refused by name, so nothing is cut silently either way.
      spdlog::debug("rerank request field '{}' ignored (no meaning for this server)", key);
    }
  }
  if (!has_query) throw invalid_field("query", "query is required");
  if (!has_docs) throw invalid_field("documents", "documents is required (or texts, in TEI's shape)");
  if (r.top_n == 0 || r.top_n > r.documents.size()) r.top_n = r.documents.size();
  return r;
}

std::string rerank_response_body(const RerankRequest& r, std::span<const float> scores, const std::string& model,
                                 int prompt_tokens) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  order.resize(std::min(order.size(), r.top_n));
  json results = json::array();
  for (size_t i : order) {
    json e = {{"index", i}, {r.tei ? "score" : "relevance_score", scores[i]}};
    if (r.return_documents) {
      if (r.tei) e["text"] = r.documents[i];
      else e["document"] = {{"text", r.documents[i]}};
    }
    results.push_back(std::move(e));
  }
  if (r.tei) return results.dump();
  const json out = {{"model", model},
                    {"object", "list"},
                    {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}},
                    {"results", std::move(results)}};
  return out.dump();
}

}  // namespace anelm::server
