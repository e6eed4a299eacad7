// cpp-httplib adapter (the only includer of httplib.h): routing, policy checks, error boundary, SSE.
#include "server/http_server.h"
#include "server/peer_socket.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "engine/error.h"
#include "server/api_error.h"
#include "server/api_response.h"
#include "server/handlers.h"
#include "server/http_policy.h"

namespace anelm::server {

namespace {

using Handler = HttpResponse (*)(ServerContext&, const HttpRequest&);

constexpr int kListenBacklog = 512;

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
    {"POST", "/apply-template", false, false, handle_apply_template},
    {"POST", "/tokenize", false, false, handle_tokenize},
    {"POST", "/detokenize", false, false, handle_detokenize},
    {"GET", "/metrics", false, false, handle_metrics},
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

HttpRequest to_request(const httplib::Request& in) {
  HttpRequest r;
  r.method = in.method;
  r.path = normalize_path(in.path);
  for (const auto& [k, v] : in.headers) {
    std::string key = k;
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers.emplace(std::move(key), v);
  }
  r.body = in.body;
  r.id = make_response_id("req-");
  auto watch = std::make_shared<PeerSocketWatch>(in.remote_addr, in.remote_port, in.local_port);
  r.client_gone = [watch] { return watch->closed(); };
  return r;
}

HttpResponse error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.status();
  r.body = error_body(e);
  if (e.retry_after_s() > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s()));
  return r;
}

bool is_json_content(const HttpRequest& req) {
  std::string ct = req.header("content-type");
  for (char& c : ct) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ct.rfind("application/json", 0) == 0;
}

HttpResponse preflight(const HttpRequest& req, const ServerOptions& opts) {
  if (!cors_origin_allowed(req.header("origin"), opts))
    throw ApiError(403, "permission_error", "CORS origin not allowed");
  HttpResponse r;
  r.status = 204;
  r.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
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
    HttpResponse res = error_response(e);
    res.headers.emplace_back("Allow", allow);
    return res;
  }
  if (!r->is_public && !api_key_ok(req, opts.api_key)) throw unauthorized();
  if (req.method == "POST" && !is_json_content(req))
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
    return error_response(e);
  }
}

class HttplibSink : public StreamSink {
 public:
  explicit HttplibSink(httplib::DataSink& s) : s_(s) {}
  bool write(std::string_view data) override { return s_.write(data.data(), data.size()); }
  bool is_writable() override { return s_.is_writable(); }

 private:
  httplib::DataSink& s_;
};

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

void write_response(HttpResponse hr, const HttpRequest& req, ServerContext& ctx, httplib::Response& res,
                    std::chrono::steady_clock::time_point t0) {
  const ServerOptions& opts = ctx.options();
  res.status = hr.status;
  for (const auto& [k, v] : hr.headers) res.set_header(k, v);
  res.set_header("x-request-id", req.id);
  const std::string origin = req.header("origin");
  if (cors_origin_allowed(origin, opts)) {
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
  }
  if (!hr.stream) {
    if (hr.status != 204) res.set_content(hr.body, hr.content_type);
    log_request(ctx.metrics(), req, hr.status, t0);
    return;
  }
  res.set_chunked_content_provider(hr.content_type,
                                   [fn = std::move(hr.stream), req, status = hr.status, t0, &ctx](size_t, httplib::DataSink& sink) {
                                     HttplibSink s(sink);
                                     fn(s);
                                     sink.done();
                                     log_request(ctx.metrics(), req, status, t0);
                                     return true;
                                   });
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(ServerContext& c) : ctx(c) {}
  void serve(const httplib::Request& in, httplib::Response& out);
  void on_error(const httplib::Request& in, httplib::Response& out);

  ServerContext& ctx;
  httplib::Server svr;
  std::thread thread;
  int listen_fd = -1;  // captured at socket creation, to widen the listen backlog after bind
  int port = -1;
  bool stopped = false;
};

void HttpServer::Impl::serve(const httplib::Request& in, httplib::Response& out) {
  auto t0 = std::chrono::steady_clock::now();
  HttpRequest req = to_request(in);
  HttpResponse res = handle_safely(ctx, req);
  const int status = res.status;
  write_response(std::move(res), req, ctx, out, t0);
  ctx.metrics().requests_total++;
  if (status >= 400) ctx.metrics().requests_errors_total++;
}

// Responses httplib makes itself (413 body too large, 400 bad request line): give them JSON bodies.
void HttpServer::Impl::on_error(const httplib::Request&, httplib::Response& out) {
  if (!out.body.empty()) return;
  ApiError e = out.status == 413 ? ApiError(413, "invalid_request_error", "request body too large")
             : out.status == 404 ? not_found("route")
             : ApiError(out.status, out.status >= 500 ? "server_error" : "invalid_request_error",
                        "HTTP error " + std::to_string(out.status));
  out.set_content(error_body(e), "application/json");
  ctx.metrics().requests_total++;
  ctx.metrics().requests_errors_total++;
}

HttpServer::HttpServer(ServerContext& ctx) : impl_(std::make_unique<Impl>(ctx)) {
  const ServerOptions& o = ctx.options();
  httplib::Server& s = impl_->svr;
  const int n_threads = o.http_threads;
  s.new_task_queue = [n_threads] { return new httplib::ThreadPool(static_cast<size_t>(n_threads)); };
  s.set_payload_max_length(o.max_body_bytes);
  s.set_read_timeout(o.read_timeout_s, 0);
  s.set_write_timeout(o.write_timeout_s, 0);
  s.set_keep_alive_timeout(5);
  s.set_tcp_nodelay(true);
  Impl* impl = impl_.get();
  // Replaces httplib's default (which sets SO_REUSEPORT: two servers could share the port).
  s.set_socket_options([impl](int fd) {
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    impl->listen_fd = fd;
  });
  auto h = [impl](const httplib::Request& in, httplib::Response& out) { impl->serve(in, out); };
  const char* any = R"(/.*)";
  s.Get(any, h);
  s.Post(any, h);
  s.Put(any, h);
  s.Delete(any, h);
  s.Patch(any, h);
  s.Options(any, h);
  s.set_error_handler([impl](const httplib::Request& in, httplib::Response& out) { impl->on_error(in, out); });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& out, std::exception_ptr ep) {
    out.status = 500;
    out.set_content(error_body(to_api_error(ep)), "application/json");
  });
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  const ServerOptions& o = impl_->ctx.options();
  std::string host = o.host == "[::1]" ? "::1" : o.host;
  if (o.port == 0) {
    impl_->port = impl_->svr.bind_to_any_port(host);
  } else {
    impl_->port = impl_->svr.bind_to_port(host, o.port) ? o.port : -1;
  }
  if (impl_->port < 0)
    throw Error(ErrorKind::kIo, "cannot bind " + o.host + ":" + std::to_string(o.port) +
                                    " (in use or not a local address?)");
  // httplib 0.11.4 listens with a backlog of 5, so a burst of clients overflows the accept queue
  // and some connections stall or fail; listen() again on the bound socket widens it.
  if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, kListenBacklog);
  return impl_->port;
}

void HttpServer::start() {
  impl_->thread = std::thread([this] { impl_->svr.listen_after_bind(); });
}

void HttpServer::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  impl_->svr.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int HttpServer::port() const { return impl_->port; }

}  // namespace anelm::server
