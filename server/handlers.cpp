// GET /health, /v1/models, /metrics and POST /tokenize, /detokenize (llama-server shapes).
#include "server/handlers.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/response_store.h"

namespace anelm::server {

using nlohmann::json;

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

HttpResponse json_response(int status, const json& j) {
  HttpResponse r;
  r.status = status;
  r.body = dump(j);
  return r;
}

json model_object(ServerContext& ctx) {
  json m = {{"id", served_model_id(ctx)}, {"object", "model"}, {"created", 0}, {"owned_by", "anelm"}};
  if (ctx.state() == ServerState::kReady || ctx.state() == ServerState::kDraining)
    m["meta"] = {{"n_ctx", ctx.n_ctx()}, {"backend", ctx.backend_stats().backend},
                 {"n_vocab", ctx.tokenizer().vocab_size()}};
  return m;
}

json stats_json(const engine::BackendStats& s) {
  return {{"backend", s.backend}, {"isa", s.isa}, {"ane_programs", s.ane_programs},
          {"ane_cache_hits", s.ane_cache_hits}, {"ane_compile_ms", s.ane_compile_ms},
          {"weight_bytes", s.weight_bytes}, {"kv_bytes", s.kv_bytes},
          {"recurrent_state_bytes", s.recurrent_state_bytes},
          {"parallel", s.parallel}, {"ane_self_check_rel_error", s.ane_self_check_rel_error}};
}

}  // namespace

std::string served_model_id(ServerContext& ctx) {
  ServerState s = ctx.state();
  if (s == ServerState::kReady || s == ServerState::kDraining) return ctx.model().model_id;
  if (!ctx.options().model_id.empty()) return ctx.options().model_id;
  std::filesystem::path p(ctx.options().model);
  return p.has_filename() ? p.filename().string() : p.parent_path().filename().string();
}

void require_ready(ServerContext& ctx) {
  const int retry = ctx.options().retry_after_s;
  switch (ctx.state()) {
    case ServerState::kReady: return;
    case ServerState::kLoading: throw unavailable("Loading model", retry);
    case ServerState::kDraining: throw unavailable("the server is shutting down", retry);
    case ServerState::kFailed: throw unavailable("the model failed to load: " + ctx.failure(), retry);
  }
}

HttpResponse handle_health(ServerContext& ctx, const HttpRequest&) {
  const ServerState s = ctx.state();
  json j = {{"state", server_state_name(s)}, {"uptime_s", ctx.uptime_s()}, {"model", served_model_id(ctx)}};
  if (s == ServerState::kReady || s == ServerState::kDraining) {
    j["status"] = s == ServerState::kReady ? "ok" : "draining";
    j["backend"] = ctx.backend_stats().backend;
    j["n_ctx"] = ctx.n_ctx();
    j["preset"] = ctx.model().preset;
    j["queue_depth"] = ctx.worker().queue_depth();
    j["requests_processing"] = ctx.worker().active();
    j["parallel"] = ctx.worker().parallel();
    j["backend_stats"] = stats_json(ctx.backend_stats());
    const PromptCacheSnapshot pc = ctx.worker().prompt_cache();
    j["prompt_cache"] = {{"budget_bytes", pc.budget_bytes}, {"bytes", pc.bytes}, {"entries", pc.entries},
                         {"hits", pc.hits}};
    const ResponseStore& rs = response_store();
    j["response_store"] = {{"budget_bytes", rs.max_bytes()}, {"bytes", rs.bytes()}, {"entries", rs.size()}};
  } else {
    j["status"] = s == ServerState::kLoading ? "loading" : "error";
    j["stage"] = ctx.progress_stage();
    j["progress"] = ctx.progress_fraction();
    std::string msg = s == ServerState::kLoading ? "Loading model" : "Model failed to load: " + ctx.failure();
    j["error"] = {{"code", 503}, {"message", msg}, {"type", "unavailable_error"}};
  }
  HttpResponse r = json_response(s == ServerState::kReady ? 200 : 503, j);
  if (s != ServerState::kReady) r.headers.emplace_back("Retry-After", std::to_string(ctx.options().retry_after_s));
  return r;
}

HttpResponse handle_models(ServerContext& ctx, const HttpRequest&) {
  return json_response(200, json{{"object", "list"}, {"data", json::array({model_object(ctx)})}});
}

HttpResponse handle_model(ServerContext& ctx, const HttpRequest& req) {
  const std::string prefix = "/v1/models/";
  std::string id = req.path.size() > prefix.size() ? req.path.substr(prefix.size()) : "";
  if (id != served_model_id(ctx)) throw not_found("model '" + id + "'");
  return json_response(200, model_object(ctx));
}

HttpResponse handle_tokenize(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  TokenizeRequest r = parse_tokenize_request(req.body);
  const tok::Tokenizer& tk = ctx.tokenizer();
  std::vector<int> ids = tk.encode(r.content, r.parse_special);
  const auto& v = tk.vocab();
  if (r.add_special) ids = tok::add_special_tokens(v, std::move(ids));  // as llama_tokenize(add_special)
  json tokens = json::array();
  for (int id : ids) {
    if (r.with_pieces) tokens.push_back({{"id", id}, {"piece", tk.token_bytes(id)}});
    else tokens.push_back(id);
  }
  return json_response(200, json{{"tokens", tokens}});
}

HttpResponse handle_detokenize(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  DetokenizeRequest r = parse_detokenize_request(req.body);
  const tok::Tokenizer& tk = ctx.tokenizer();
  for (int id : r.tokens)
    if (id >= tk.vocab_size())
      throw invalid_field("tokens", "token id " + std::to_string(id) + " is out of range");
  return json_response(200, json{{"content", tk.decode(r.tokens)}});
}

HttpResponse handle_metrics(ServerContext& ctx, const HttpRequest&) {
  MetricsGauges g;
  g.uptime_s = ctx.uptime_s();
  if (ctx.state() == ServerState::kReady || ctx.state() == ServerState::kDraining) {
    g.queue_depth = ctx.worker().queue_depth();
    g.requests_processing = ctx.worker().active();
    g.n_ctx = ctx.n_ctx();
  }
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4";
  r.body = render_prometheus(ctx.metrics(), g);
  return r;
}

}  // namespace anelm::server
