// Request policy checks before routing: Host allow-list (DNS rebinding), API key, CORS, paths.
#pragma once

#include <string>

#include "server/http_types.h"
#include "server/server_options.h"

namespace anelm::server {

// "/v1//models/" -> "/v1/models".
std::string normalize_path(const std::string& path);

// Host header (with or without port) allowed: loopback names, the bound host, allowed_hosts.
// A wildcard bind (0.0.0.0, ::) accepts any Host; an absent header is accepted (HTTP/1.0).
bool host_allowed(const std::string& host_header, const ServerOptions& opts);

// True when no key is configured, or the request carries it (Bearer or X-Api-Key).
bool api_key_ok(const HttpRequest& req, const std::string& api_key);

// True when `origin` is in the configured CORS allow-list.
bool cors_origin_allowed(const std::string& origin, const ServerOptions& opts);

// Escapes control characters so request data cannot forge log lines (CWE-117).
std::string log_escape(const std::string& s, size_t max_len = 200);

}  // namespace anelm::server
