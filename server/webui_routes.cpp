// Serves the embedded chat page. The files are fixed at compile time, so a name is looked up in the
// table (never on the file system) and each file's ETag is its content hash.
#include "server/webui_routes.h"

#include <string>

#include "server/api_error.h"

namespace anelm::server {

namespace {

// The page loads only its own files and talks only to this server: nothing remote, no inline
// script or style, no framing (clickjacking), no form posts elsewhere. data: images are the favicon.
constexpr const char* kCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const WebuiFile* find_file(std::string_view name) {
  for (const WebuiFile& f : webui_files())
    if (f.name == name) return &f;
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// If-None-Match: "*" or a comma-separated list of (possibly weak, W/"...") entity tags (RFC 9110 13.1.2).
bool etag_matches(std::string_view header, std::string_view etag) {
  while (!header.empty()) {
    const size_t comma = header.find(',');
    std::string_view tag = trim(header.substr(0, comma));
    if (tag.rfind("W/", 0) == 0) tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::string_view webui_content_type(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

HttpResponse handle_webui(ServerContext& ctx, const HttpRequest& req) {
  // --no-webui: the routes answer exactly as unknown routes do.
  if (!ctx.options().webui) throw not_found("route " + req.method + " " + req.path);
  const std::string_view prefix = "/webui/";
  std::string_view name = "index.html";
  if (req.path != "/") {
    name = std::string_view(req.path);
    if (name.rfind(prefix, 0) != 0) throw not_found("route " + req.method + " " + req.path);
    name.remove_prefix(prefix.size());
  }
  const WebuiFile* f = find_file(name);
  if (!f) throw not_found("web UI file " + std::string(name));

  HttpResponse r;
  r.headers.emplace_back("ETag", std::string(f->etag));
  // Kept by the browser but revalidated on every load (a 304 costs nothing), so a new binary's
  // page is never stale.
  r.headers.emplace_back("Cache-Control", "no-cache");
  if (etag_matches(req.header("if-none-match"), f->etag)) {
    r.status = 304;
    return r;
  }
  r.content_type = std::string(webui_content_type(name));
  r.body = std::string(f->body);
  r.headers.emplace_back("Content-Security-Policy", kCsp);
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  return r;
}

}  // namespace anelm::server
