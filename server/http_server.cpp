// The HTTP front end over HttpListener: routing, policy checks (from the head, before any body is
// read), the error boundary and the request log.
#include "server/http_server.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "engine/error.h"
#include "server/api_error.h"
#include "server/api_response.h"
#include "server/handlers.h"
#include "server/http_listener.h"
#include "server/http_policy.h"
#include "server/ollama_api.h"
#include "server/webui_routes.h"

namespace anelm::server {

namespace {

using Handler = HttpResponse (*)(ServerContext&, const HttpRequest&);

struct Route {
  const char* method;
  const char* path;
  bool prefix;     // path is a prefix ("/v1/models/")
  bool is_public;  // no API key needed
  Handler handler;
};

const Route kRoutes[] = {
    {"GET", "/health", false, true, handle_health},
    {"GET", "/v1/health", false, true, handle_health},
    {"GET", "/v1/models", false, true, handle_models},
    {"GET", "/models", false, true, handle_models},
    {"GET", "/v1/models/", true, true, handle_model},
    {"POST", "/v1/completions", false, false, handle_completions},
    {"POST", "/completions", false, false, handle_completions},
    {"POST", "/v1/chat/completions", false, false, handle_chat_completions},
    {"POST", "/chat/completions", false, false, handle_chat_completions},
    {"POST", "/completion", false, false, handle_llamacpp_completion},  // llama-server's own shape
    {"POST", "/infill", false, false, handle_infill},
    {"GET", "/props", false, false, handle_props},
    {"POST", "/v1/messages", false, false, handle_messages},
    {"POST", "/v1/messages/count_tokens", false, false, handle_count_tokens},
    {"POST", "/v1/responses", false, false, handle_responses_create},
    {"POST", "/responses", false, false, handle_responses_create},
    {"GET", "/v1/responses/", true, false, handle_responses_get},
    {"GET", "/responses/", true, false, handle_responses_get},
    {"DELETE", "/v1/responses/", true, false, handle_responses_delete},
    {"DELETE", "/responses/", true, false, handle_responses_delete},
    {"POST", "/v1/embeddings", false, false, handle_embeddings},
    {"POST", "/embeddings", false, false, handle_embeddings},
    {"POST", "/v1/rerank", false, false, handle_rerank},  // llama-server's four paths, and Cohere v2's
    {"POST", "/rerank", false, false, handle_rerank},
    {"POST", "/v1/reranking", false, false, handle_rerank},
    {"POST", "/reranking", false, false, handle_rerank},
    {"POST", "/v2/rerank", false, false, handle_rerank},
    {"POST", "/apply-template", false, false, handle_apply_template},
    {"POST", "/tokenize", false, false, handle_tokenize},
    {"POST", "/detokenize", false, false, handle_detokenize},
    {"GET", "/metrics", false, false, handle_metrics},
    // Ollama's API (handlers_ollama.cpp)
    {"GET", "/api/version", false, true, handle_ollama_version},
    {"GET", "/api/tags", false, true, handle_ollama_tags},
    {"GET", "/api/ps", false, true, handle_ollama_ps},
    {"POST", "/api/show", false, false, handle_ollama_show},
    {"POST", "/api/chat", false, false, handle_ollama_chat},
    {"POST", "/api/generate", false, false, handle_ollama_generate},
    {"POST", "/api/embed", false, false, handle_ollama_embed},
    {"POST", "/api/embeddings", false, false, handle_ollama_embed},
    {"POST", "/api/pull", false, false, handle_ollama_pull},
    {"POST", "/api/create", false, false, handle_ollama_unsupported},
    {"POST", "/api/copy", false, false, handle_ollama_unsupported},
    {"POST", "/api/push", false, false, handle_ollama_unsupported},
    {"DELETE", "/api/delete", false, false, handle_ollama_unsupported},
    {"POST", "/api/blobs/", true, false, handle_ollama_unsupported},
    {"GET", "/", false, true, handle_webui},        // the chat page (the page asks for the key)
    {"GET", "/webui/", true, true, handle_webui},   // its scripts and styles
};

bool path_matches(const Route& r, const std::string& path) {
  return r.prefix ? path.rfind(r.path, 0) == 0 && path.size() > std::strlen(r.path) : path == r.path;
}

// The route for (method, path); throws 404 / 405 (with the allowed methods).
const Route& find_route(const HttpRequest& req, std::string& allow) {
  const Route* found = nullptr;
  for (const Route& r : kRoutes) {
    if (!path_matches(r, req.path)) continue;
    if (req.method == r.method || (req.method == "HEAD" && std::strcmp(r.method, "GET") == 0)) found = &r;
    allow += allow.empty() ? r.method : std::string(", ") + r.method;
  }
  if (found) return *found;
  if (!allow.empty()) throw method_not_allowed(req.method, req.path);
  throw not_found("route " + req.method + " " + req.path);
}

bool is_ollama_path(const std::string& path) { return path.rfind("/api/", 0) == 0; }

// OpenAI's error shape, or Ollama's {"error": "..."} under /api/ (its clients read a string there,
// also for a route, method, key or Content-Type refused before any handler runs).
HttpResponse error_response(const ApiError& e, const std::string& path = "") {
  HttpResponse r;
  r.status = e.status();
  r.body = is_ollama_path(path) ? ollama_error_body(e) : error_body(e);
  if (e.retry_after_s() > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s()));
  return r;
}

bool is_json_content(const HttpRequest& req) {
  std::string ct = req.header("content-type");
  for (char& c : ct) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ct.rfind("application/json", 0) == 0;
}

// Ollama's routes take a JSON body whatever its Content-Type (its documentation posts with
// `curl -d`, which sends a form type). A browser can send such a body cross-site without a CORS
// preflight, so the leniency holds only without an Origin header or with an allowed one.
bool content_type_ok(const Route& r, const HttpRequest& req, const ServerOptions& opts) {
  if (req.method != "POST" || is_json_content(req)) return true;
  if (!is_ollama_path(r.path)) return false;
  const std::string origin = req.header("origin");
  return origin.empty() || cors_origin_allowed(origin, opts);
}

HttpResponse preflight(const HttpRequest& req, const ServerOptions& opts) {
  if (!cors_origin_allowed(req.header("origin"), opts))
    throw ApiError(403, "permission_error", "CORS origin not allowed");
  HttpResponse r;
  r.status = 204;
  r.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
  r.headers.emplace_back("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key");
  r.headers.emplace_back("Access-Control-Max-Age", "600");
  return r;
}

// Policy checks, routing and the handler call. Throws ApiError for every refusal.
HttpResponse route(ServerContext& ctx, const HttpRequest& req) {
  const ServerOptions& opts = ctx.options();
  if (!host_allowed(req.header("host"), opts))
    throw ApiError(403, "permission_error", "Host header not allowed (DNS rebinding protection)");
  if (req.method == "OPTIONS") return preflight(req, opts);
  std::string allow;
  const Route* r = nullptr;
  try {
    r = &find_route(req, allow);
  } catch (const ApiError& e) {
    if (e.status() != 405) throw;
    HttpResponse res = error_response(e, req.path);
    res.headers.emplace_back("Allow", allow);
    return res;
  }
  if (!r->is_public && !api_key_ok(req, opts.api_key)) throw unauthorized();
  if (!content_type_ok(*r, req, opts))
    throw ApiError(415, "invalid_request_error", "Content-Type must be application/json");
  return r->handler(ctx, req);
}

// Never throws: every failure becomes an OpenAI error response.
HttpResponse handle_safely(ServerContext& ctx, const HttpRequest& req) {
  try {
    return route(ctx, req);
  } catch (...) {
    ApiError e = to_api_error(std::current_exception());
    req.log->error = e.what();
    return error_response(e, req.path);
  }
}

// The metrics label of a path: its route, or "other" (bounded cardinality).
const char* route_label(const std::string& path) {
  for (const Route& r : kRoutes)
    if (path_matches(r, path)) return r.path;
  return "other";
}

// One line per request once its response is complete (a stream: when it ends), and its metrics.
void log_request(Metrics& metrics, const HttpRequest& req, int status, std::chrono::steady_clock::time_point t0) {
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  metrics.request_duration.observe(ms / 1000.0);
  metrics.routes.add(route_label(req.path), status);
  const RequestLog& l = *req.log;
  std::string line = fmt::format("{} {} {} {} {:.1f} ms", req.id, req.method, log_escape(req.path), status, ms);
  if (l.prompt_tokens >= 0) {
    line += fmt::format(" prompt={} cached={} completion={}", l.prompt_tokens, l.cached_tokens, l.completion_tokens);
    if (l.ttft_ms >= 0) line += fmt::format(" ttft={:.1f}ms", l.ttft_ms);
    line += fmt::format(" tok/s={:.1f} finish={}", l.decode_tok_s, l.finish.empty() ? "none" : l.finish);
  }
  if (!l.error.empty()) line += " error=\"" + log_escape(l.error) + "\"";
  const bool probe = req.path == "/health" || req.path == "/v1/health" || req.path == "/metrics";
  const auto level = status >= 500 ? spdlog::level::err : probe ? spdlog::level::debug : spdlog::level::info;
  spdlog::log(level, "{}", line);
}

// x-request-id and CORS headers on every response the handlers make.
void add_common_headers(HttpResponse& hr, const HttpRequest& req, const ServerOptions& opts) {
  hr.headers.emplace_back("x-request-id", req.id);
  const std::string origin = req.header("origin");
  if (cors_origin_allowed(origin, opts)) {
    hr.headers.emplace_back("Access-Control-Allow-Origin", origin);
    hr.headers.emplace_back("Vary", "Origin");
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The checks that need no body, made as soon as the head has arrived: Host (DNS rebinding), the API
// key of a non-public route and the body's media type. A refused upload is never read.
std::optional<HttpResponse> check_head(const HttpRequest& req, const ServerOptions& opts) {
  try {
    if (!host_allowed(req.header("host"), opts))
      throw ApiError(403, "permission_error", "Host header not allowed (DNS rebinding protection)");
    if (req.method == "OPTIONS") return std::nullopt;
    std::string allow;
    const Route* r = nullptr;
    try {
      r = &find_route(req, allow);
    } catch (const ApiError&) {
      return std::nullopt;  // 404 / 405 are answered by route() (the body is bounded anyway)
    }
    if (!r->is_public && !api_key_ok(req, opts.api_key)) throw unauthorized();
    if (req.method == "POST") {
      const std::string ct = lower(req.header("content-type"));
      if (ct.rfind("multipart/form-data", 0) == 0)
        throw ApiError(415, "invalid_request_error", "multipart/form-data is not supported: send application/json");
      if (!content_type_ok(*r, req, opts))
        throw ApiError(415, "invalid_request_error", "Content-Type must be application/json");
    }
    return std::nullopt;
  } catch (const ApiError& e) {
    req.log->error = e.what();
    HttpResponse res = error_response(e, req.path);
    add_common_headers(res, req, opts);
    return res;
  }
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(ServerContext& c) : ctx(c) {}
  ListenerOptions listener_options() const;
  ListenerCallbacks callbacks();

  ServerContext& ctx;
  std::unique_ptr<HttpListener> listener;
  int port = -1;
  bool stopped = false;
};

ListenerOptions HttpServer::Impl::listener_options() const {
  const ServerOptions& o = ctx.options();
  ListenerOptions l;
  l.wire.max_body_bytes = o.max_body_bytes;
  l.wire.max_header_bytes = o.max_header_bytes;
  l.wire.max_headers = o.max_headers;
  l.workers = o.http_threads;
  l.max_connections = o.max_connections;
  l.header_timeout_ms = o.header_timeout_s * 1000;
  l.read_timeout_ms = o.read_timeout_s * 1000;
  l.write_timeout_ms = o.write_timeout_s * 1000;
  l.keep_alive_ms = o.keep_alive_timeout_s * 1000;
  return l;
}

ListenerCallbacks HttpServer::Impl::callbacks() {
  ListenerCallbacks cb;
  ServerContext& c = ctx;
  cb.check_head = [&c](HttpRequest& req) {
    req.id = make_response_id("req-");
    return check_head(req, c.options());
  };
  cb.handle = [&c](HttpRequest& req) {
    HttpResponse res = handle_safely(c, req);
    add_common_headers(res, req, c.options());
    return res;
  };
  cb.refuse = [](int status, const std::string& message) {
    const char* type = status == 503 ? "unavailable_error" : status >= 500 ? "server_error" : "invalid_request_error";
    return error_response(ApiError(status, type, message));
  };
  cb.done = [&c](HttpRequest& req, int status, std::chrono::steady_clock::time_point t0) {
    if (req.id.empty()) req.id = make_response_id("req-");
    log_request(c.metrics(), req, status, t0);
    c.metrics().requests_total++;
    if (status >= 400) c.metrics().requests_errors_total++;
  };
  return cb;
}

HttpServer::HttpServer(ServerContext& ctx) : impl_(std::make_unique<Impl>(ctx)) {
  impl_->listener = std::make_unique<HttpListener>(impl_->listener_options(), impl_->callbacks());
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  const ServerOptions& o = impl_->ctx.options();
  impl_->port = impl_->listener->bind(o.host, o.port);
  return impl_->port;
}

void HttpServer::start() { impl_->listener->start(); }

void HttpServer::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  impl_->listener->stop();
}

int HttpServer::port() const { return impl_->port; }

}  // namespace anelm::server
