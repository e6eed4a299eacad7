// POST /v1/embeddings: parse -> tokenize (the model's BOS/EOS rule, as llama-server) -> one engine
// job for all inputs -> L2-normalised (and Matryoshka-truncated) vectors.
#include <cmath>
#include <string>
#include <vector>

#include "engine/embedding.h"
#include "server/api_error.h"
#include "server/chat_generation.h"
#include "server/embeddings_api.h"
#include "server/handlers.h"

namespace anelm::server {

namespace {

// The pooling this server uses: the model file's; mean for any other model under --embeddings
// (llama-server's usual choice for decoders); none means embeddings are not served.
engine::Pooling serving_pooling(ServerContext& ctx) {
  const engine::Pooling p = ctx.model().engine->config().pooling;
  if (p != engine::Pooling::kNone) return p;
  return ctx.options().embeddings ? engine::Pooling::kMean : engine::Pooling::kNone;
}

// Text inputs as llama-server tokenizes them for embeddings: special tokens parsed, BOS and EOS
// added when the vocabulary asks for them (Qwen3-Embedding's GGUF sets add_eos_token: its vector is
// the hidden state at <|endoftext|>; BERT's WordPiece: [CLS] and [SEP]). Token-id inputs are used as given.
std::vector<std::vector<int>> tokenize_inputs(const tok::Tokenizer& tk, EmbeddingsRequest& r) {
  if (r.is_ids) return std::move(r.ids);
  const auto& v = tk.vocab();
  std::vector<std::vector<int>> out;
  out.reserve(r.texts.size());
  for (size_t i = 0; i < r.texts.size(); ++i) {
    std::vector<int> ids = tk.encode(r.texts[i], /*parse_special=*/true);
    if (v.kind == tok::VocabKind::kWordPiece) {
      ids = tok::add_special_tokens(v, std::move(ids));  // [CLS] text [SEP], as llama_tokenize(add_special)
    } else {
      maybe_add_bos(tk, ids);
      if (v.add_eos && v.eos_id >= 0 && (ids.empty() || ids.back() != v.eos_id)) ids.push_back(v.eos_id);
    }
    if (ids.empty()) throw invalid_field("input[" + std::to_string(i) + "]", "input[" + std::to_string(i) + "] has no tokens");
    out.push_back(std::move(ids));
  }
  return out;
}

// Waits for the worker's answer, cancelling the job when the client hangs up.
void wait_answer(EmbeddingChannel& ch, const HttpRequest& req) {
  while (!ch.wait(std::chrono::milliseconds(50))) {
    if (req.client_gone && req.client_gone()) {
      ch.cancel();
      throw ApiError(499, "invalid_request_error", "the client closed the connection");
    }
  }
}

}  // namespace

engine::EmbedResult run_embed_job(ServerContext& ctx, const HttpRequest& req, engine::EmbedRequest er) {
  auto ch = std::make_shared<EmbeddingChannel>();
  const EngineWorker::Admit admit = ctx.worker().try_submit_embedding(EmbeddingJob{std::move(er), ch});
  if (admit == EngineWorker::Admit::kQueueFull) {
    ctx.metrics().queue_rejections++;
    throw queue_full(ctx.options().retry_after_s);
  }
  if (admit == EngineWorker::Admit::kStopped) throw unavailable("the server is shutting down", ctx.options().retry_after_s);
  wait_answer(*ch, req);
  if (const auto& e = ch->error()) {
    if (e->kind() == ErrorKind::kCancelled)
      throw unavailable("the request was cancelled: the server is shutting down", ctx.options().retry_after_s);
    throw *e;
  }
  return std::move(ch->result());
}

EmbeddingsOutput compute_embeddings(ServerContext& ctx, const HttpRequest& req, EmbeddingsRequest& r, bool truncate,
                                    bool normalize) {
  const engine::Engine& engine = *ctx.model().engine;
  const engine::Pooling pooling = serving_pooling(ctx);
  if (pooling == engine::Pooling::kNone) {
    throw ApiError(501, "not_supported_error",
                   "this model is not an embedding model (no pooling_type in the file): start the server with "
                   "--embeddings to serve mean-pooled embeddings of it");
  }
  if (pooling == engine::Pooling::kRank) {
    throw ApiError(501, "not_supported_error",
                   "this model is a reranker (pooling_type rank in the file): it scores documents against a "
                   "query on POST /v1/rerank, and gives no embeddings");
  }
  const int n_embd = engine.config().d_model;
  if (r.dimensions && *r.dimensions > n_embd) {
    throw invalid_field("dimensions", "dimensions " + std::to_string(*r.dimensions) +
                                          " is larger than the model's embedding size " + std::to_string(n_embd));
  }
  engine::EmbedRequest er;
  er.pooling = pooling;
  er.inputs = tokenize_inputs(ctx.tokenizer(), r);
  const size_t n_inputs = er.inputs.size();
  const int n_ctx = ctx.n_ctx();
  int prompt_tokens = 0;
  for (size_t i = 0; i < er.inputs.size(); ++i) {
    const std::string name = "input[" + std::to_string(i) + "]";
    if (truncate && static_cast<int64_t>(er.inputs[i].size()) > n_ctx) {  // keep an EOS a last-token pooling reads
      const auto& v = ctx.tokenizer().vocab();
      const bool eos = v.add_eos && v.eos_id >= 0 && er.inputs[i].back() == v.eos_id;
      er.inputs[i].resize(static_cast<size_t>(n_ctx));
      if (eos) er.inputs[i].back() = v.eos_id;
    }
    const auto n = static_cast<int64_t>(er.inputs[i].size());
    if (n > n_ctx) {
      throw ApiError(400, "invalid_request_error",
                     name + " has " + std::to_string(n) + " tokens, more than the context of " +
                         std::to_string(n_ctx) + " (--ctx)",
                     name, "context_length_exceeded");
    }
    for (int id : er.inputs[i]) {
      if (id >= engine.config().vocab_size)
        throw invalid_field(name, name + ": token id " + std::to_string(id) + " is out of range");
    }
    prompt_tokens += static_cast<int>(n);
  }
  if (req.log) req.log->prompt_tokens = prompt_tokens;

  engine::EmbedResult res = run_embed_job(ctx, req, std::move(er));

  // OpenAI's vectors are unit length; `dimensions` keeps the first values and normalises again.
  EmbeddingsOutput out;
  out.dims = r.dimensions.value_or(res.dims);
  out.prompt_tokens = res.prompt_tokens;
  out.vectors.resize(n_inputs * static_cast<size_t>(out.dims));
  for (size_t i = 0; i < n_inputs; ++i) {
    const float* src = res.vectors.data() + i * static_cast<size_t>(res.dims);
    std::span<float> dst(out.vectors.data() + i * static_cast<size_t>(out.dims), static_cast<size_t>(out.dims));
    std::copy(src, src + out.dims, dst.begin());
    for (float x : dst)
      if (!std::isfinite(x)) throw internal_error("the model produced a non-finite embedding for input[" + std::to_string(i) + "]");
    if (normalize) engine::l2_normalize(dst);
  }
  return out;
}

HttpResponse handle_embeddings(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  EmbeddingsRequest r = parse_embeddings_request(req.body);
  const EmbeddingsOutput out = compute_embeddings(ctx, req, r, /*truncate=*/false, /*normalize=*/true);
  HttpResponse resp;
  resp.body = embeddings_response_body(out.vectors, out.dims, r.base64, served_model_id(ctx), out.prompt_tokens);
  return resp;
}

}  // namespace anelm::server
