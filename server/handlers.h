// One function per endpoint: parse -> (template) -> tokenize -> submit -> respond or stream.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "engine/embedding.h"
#include "server/embeddings_api.h"
#include "server/http_types.h"
#include "server/server_context.h"

namespace anelm::server {

HttpResponse handle_completions(ServerContext& ctx, const HttpRequest& req);
HttpResponse handle_chat_completions(ServerContext& ctx, const HttpRequest& req);
// llama-server's own API (handlers_llamacpp.cpp): POST /completion and /infill.
HttpResponse handle_llamacpp_completion(ServerContext& ctx, const HttpRequest& req);
HttpResponse handle_infill(ServerContext& ctx, const HttpRequest& req);
HttpResponse handle_props(ServerContext& ctx, const HttpRequest& req);  // GET /props
HttpResponse handle_apply_template(ServerContext& ctx, const HttpRequest& req);  // POST /apply-template
HttpResponse handle_models(ServerContext& ctx, const HttpRequest& req);
HttpResponse handle_model(ServerContext& ctx, const HttpRequest& req);  // GET /v1/models/{id}
HttpResponse handle_health(ServerContext& ctx, const HttpRequest& req);
HttpResponse handle_tokenize(ServerContext& ctx, const HttpRequest& req);
HttpResponse handle_detokenize(ServerContext& ctx, const HttpRequest& req);
HttpResponse handle_metrics(ServerContext& ctx, const HttpRequest& req);
HttpResponse handle_embeddings(ServerContext& ctx, const HttpRequest& req);  // POST /v1/embeddings (handlers_embeddings.cpp)
HttpResponse handle_rerank(ServerContext& ctx, const HttpRequest& req);  // POST /v1/rerank (handlers_rerank.cpp)
// Anthropic Messages API (handlers_anthropic.cpp); errors in Anthropic's shape.
HttpResponse handle_messages(ServerContext& ctx, const HttpRequest& req);      // POST /v1/messages
HttpResponse handle_count_tokens(ServerContext& ctx, const HttpRequest& req);  // POST /v1/messages/count_tokens
// OpenAI Responses API (handlers_responses.cpp).
HttpResponse handle_responses_create(ServerContext& ctx, const HttpRequest& req);  // POST /v1/responses
HttpResponse handle_responses_get(ServerContext& ctx, const HttpRequest& req);     // GET /v1/responses/{id}
HttpResponse handle_responses_delete(ServerContext& ctx, const HttpRequest& req);  // DELETE /v1/responses/{id}
// Ollama's API (handlers_ollama.cpp); errors in Ollama's shape {"error": "..."}.
HttpResponse handle_ollama_chat(ServerContext& ctx, const HttpRequest& req);      // POST /api/chat
HttpResponse handle_ollama_generate(ServerContext& ctx, const HttpRequest& req);  // POST /api/generate
HttpResponse handle_ollama_embed(ServerContext& ctx, const HttpRequest& req);     // POST /api/embed, /api/embeddings
HttpResponse handle_ollama_tags(ServerContext& ctx, const HttpRequest& req);      // GET /api/tags
HttpResponse handle_ollama_ps(ServerContext& ctx, const HttpRequest& req);        // GET /api/ps
HttpResponse handle_ollama_show(ServerContext& ctx, const HttpRequest& req);      // POST /api/show
HttpResponse handle_ollama_version(ServerContext& ctx, const HttpRequest& req);   // GET /api/version
HttpResponse handle_ollama_pull(ServerContext& ctx, const HttpRequest& req);      // POST /api/pull
// /api/create, /api/copy, /api/delete, /api/push, /api/blobs/: model management this server does not do.
HttpResponse handle_ollama_unsupported(ServerContext& ctx, const HttpRequest& req);

// The embedding vectors of `r`'s inputs ([count][dims], row-major), unit length when `normalize`;
// call after require_ready.
// `truncate`: an input longer than the context is cut to it instead of refused.
struct EmbeddingsOutput {
  std::vector<float> vectors;
  int dims = 0;
  int prompt_tokens = 0;
};
EmbeddingsOutput compute_embeddings(ServerContext& ctx, const HttpRequest& req, EmbeddingsRequest& r, bool truncate,
                                    bool normalize);

// Runs one embedding-engine job (embeddings, or a reranker's scores) and waits for it; cancels it
// when the client hangs up. Throws 429/503 when the worker does not take it, and the job's error.
engine::EmbedResult run_embed_job(ServerContext& ctx, const HttpRequest& req, engine::EmbedRequest er);

// The token ids of one rerank (query, document) pair, as llama-server builds them: `tmpl` (the model's
// rerank template, GGUF tokenizer.chat_template.rerank) with {query} and {document} replaced, special
// tokens parsed and no BOS added; `tmpl` empty: [BOS] query [EOS] document [EOS] as the vocabulary
// adds them.
std::vector<int> rerank_prompt(const tok::Tokenizer& tk, std::string_view tmpl, std::string_view query,
                               std::string_view document);

// Runs `fn`; any failure becomes a response with its status, Retry-After, and `body(e)`: the error
// in the shape of the route's API (Anthropic's, Ollama's).
template <typename Body, typename Fn>
HttpResponse with_error_body(const HttpRequest& req, Body&& body, Fn&& fn) {
  try {
    return fn();
  } catch (...) {
    const ApiError e = to_api_error(std::current_exception());
    if (req.log) req.log->error = e.what();
    HttpResponse res;
    res.status = e.status();
    res.body = body(e);
    if (e.retry_after_s() > 0) res.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s()));
    return res;
  }
}

// Throws 503 + Retry-After unless the model is loaded and the server is not draining.
void require_ready(ServerContext& ctx);

// The id /v1/models reports: the loaded model's, or before that the configured one.
std::string served_model_id(ServerContext& ctx);

}  // namespace anelm::server
