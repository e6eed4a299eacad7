// Host, API-key and CORS checks, path normalisation and log escaping for the HTTP layer.
#include "server/http_policy.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace anelm::server {

std::string normalize_path(const std::string& path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out += c;
  }
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out.empty() ? "/" : out;
}

namespace {

// "example.com:8080" -> "example.com"; "[::1]:8080" -> "::1".
std::string strip_port(const std::string& host) {
  if (!host.empty() && host[0] == '[') {
    size_t end = host.find(']');
    return end == std::string::npos ? host : host.substr(1, end - 1);
  }
  size_t colon = host.find(':');
  if (colon != std::string::npos && host.find(':', colon + 1) != std::string::npos) return host;  // bare IPv6
  return colon == std::string::npos ? host : host.substr(0, colon);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Constant-time comparison (the key's length may leak, its content does not).
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ (i < b.size() ? b[i] : 0);
  return diff == 0;
}

}  // namespace

bool host_allowed(const std::string& host_header, const ServerOptions& opts) {
  if (host_header.empty()) return true;
  if (opts.host == "0.0.0.0" || opts.host == "::" || opts.host == "[::]") return true;
  std::string h = lower(strip_port(host_header));
  if (h == "localhost" || h == "127.0.0.1" || h == "::1") return true;
  if (h == lower(strip_port(opts.host))) return true;
  for (const std::string& allowed : opts.allowed_hosts)
    if (h == lower(allowed)) return true;
  return false;
}

bool api_key_ok(const HttpRequest& req, const std::string& api_key) {
  if (api_key.empty()) return true;
  const std::string auth = req.header("authorization");
  const std::string bearer = "Bearer ";
  if (auth.size() > bearer.size() && auth.compare(0, bearer.size(), bearer) == 0 &&
      same_secret(auth.substr(bearer.size()), api_key))
    return true;
  const std::string x_key = req.header("x-api-key");
  return !x_key.empty() && same_secret(x_key, api_key);
}

bool cors_origin_allowed(const std::string& origin, const ServerOptions& opts) {
  if (origin.empty()) return false;
  return std::find(opts.cors_origins.begin(), opts.cors_origins.end(), origin) != opts.cors_origins.end();
}

std::string log_escape(const std::string& s, size_t max_len) {
  std::string out;
  for (size_t i = 0; i < s.size() && out.size() < max_len; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    // C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F) act on terminals too.
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(s[++i]));
      out += buf;
      continue;
    }
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace anelm::server
