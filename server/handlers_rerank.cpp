// POST /v1/rerank: parse -> one prompt per (query, document) pair -> one engine job of the
// reranker (rank pooling) -> the documents sorted by relevance.
#include <cmath>
#include <string>
#include <vector>

#include "server/chat_generation.h"
#include "server/handlers.h"
#include "server/rerank_api.h"

namespace anelm::server {

std::vector<int> rerank_prompt(const tok::Tokenizer& tk, std::string_view tmpl, std::string_view query,
                               std::string_view document) {
  const tok::VocabData& v = tk.vocab();
  if (!tmpl.empty()) {
    // One pass over the template, so that a query containing "{document}" stays as written.
    static constexpr std::string_view kQuery = "{query}", kDocument = "{document}";
    const std::string_view t = tmpl;
    std::string text;
    text.reserve(t.size() + query.size() + document.size());
    for (size_t i = 0; i < t.size();) {
      if (t.compare(i, kQuery.size(), kQuery) == 0) {
        text += query;
        i += kQuery.size();
      } else if (t.compare(i, kDocument.size(), kDocument) == 0) {
        text += document;
        i += kDocument.size();
      } else {
        text += t[i++];
      }
    }
    return tk.encode(text, /*parse_special=*/true);
  }
  std::vector<int> ids;
  maybe_add_bos(tk, ids);
  auto add = [&](std::string_view s) {
    const std::vector<int> part = tk.encode(s, /*parse_special=*/false);
    ids.insert(ids.end(), part.begin(), part.end());
    if (v.add_eos && v.eos_id >= 0) ids.push_back(v.eos_id);
  };
  add(query);
  add(document);
  return ids;
}

HttpResponse handle_rerank(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  if (ctx.model().engine->config().pooling != engine::Pooling::kRank) {
    throw ApiError(501, "not_supported_error",
                   "this model is not a reranker (no pooling_type rank in the file): serve a reranker GGUF such "
                   "as Qwen3-Reranker's, or its causal-LM form (an HF directory) with --reranking");
  }
  const RerankRequest r = parse_rerank_request(req.body);
  // The file's template; a reranker made from a causal LM (--reranking) without one is Qwen3-Reranker.
  const std::string& own = ctx.tokenizer().vocab().rerank_template;
  const std::string_view tmpl = !own.empty() ? std::string_view(own)
                                : ctx.options().reranking ? std::string_view(kQwen3RerankTemplate)
                                                          : std::string_view();
  const char* field = r.tei ? "texts" : "documents";
  engine::EmbedRequest er;
  er.pooling = engine::Pooling::kRank;
  er.inputs.reserve(r.documents.size());
  const int n_ctx = ctx.n_ctx();
  int prompt_tokens = 0;
  for (size_t i = 0; i < r.documents.size(); ++i) {
    const std::string name = std::string(field) + "[" + std::to_string(i) + "]";
    std::vector<int> ids = rerank_prompt(ctx.tokenizer(), tmpl, r.query, r.documents[i]);
    if (ids.empty()) throw invalid_field(name, "the query and " + name + " have no tokens");
    if (static_cast<int64_t>(ids.size()) > n_ctx) {
      throw ApiError(400, "invalid_request_error",
                     "the query and " + name + " make " + std::to_string(ids.size()) +
                         " tokens, more than the context of " + std::to_string(n_ctx) + " (--ctx): shorten " + name,
                     name, "context_length_exceeded");
    }
    prompt_tokens += static_cast<int>(ids.size());
    er.inputs.push_back(std::move(ids));
  }
  if (req.log) req.log->prompt_tokens = prompt_tokens;

  const engine::EmbedResult res = run_embed_job(ctx, req, std::move(er));
  std::vector<float> scores(r.documents.size());
  for (size_t i = 0; i < scores.size(); ++i) {
    scores[i] = res.vectors[i * static_cast<size_t>(res.dims)];
    if (!std::isfinite(scores[i]))
      throw internal_error("the model produced a non-finite score for " + std::string(field) + "[" + std::to_string(i) + "]");
  }
  HttpResponse resp;
  resp.body = rerank_response_body(r, scores, served_model_id(ctx), res.prompt_tokens);
  return resp;
}

}  // namespace anelm::server
