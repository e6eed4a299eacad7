// Pure request-policy checks: path normalisation, Host allow-list, API key, CORS, log escaping.
#include <gtest/gtest.h>

#include "server/http_policy.h"

namespace anelm::server {
namespace {

TEST(HttpPolicy, NormalizePath) {
  EXPECT_EQ(normalize_path("/v1//models/"), "/v1/models");
  EXPECT_EQ(normalize_path("//v1///chat//completions"), "/v1/chat/completions");
  EXPECT_EQ(normalize_path("/"), "/");
  EXPECT_EQ(normalize_path(""), "/");
}

TEST(HttpPolicy, HostAllowList) {
  ServerOptions o;
  o.host = "127.0.0.1";
  EXPECT_TRUE(host_allowed("127.0.0.1:8080", o));
  EXPECT_TRUE(host_allowed("localhost", o));
  EXPECT_TRUE(host_allowed("LOCALHOST:1", o));
  EXPECT_TRUE(host_allowed("[::1]:8080", o));
  EXPECT_TRUE(host_allowed("", o));
  EXPECT_FALSE(host_allowed("evil.example", o));
  EXPECT_FALSE(host_allowed("127.0.0.1.evil.example:80", o));
  o.allowed_hosts = {"my.box"};
  EXPECT_TRUE(host_allowed("my.box:8080", o));
  o.host = "0.0.0.0";
  EXPECT_TRUE(host_allowed("anything.example", o));
  o.host = "192.168.1.5";
  EXPECT_TRUE(host_allowed("192.168.1.5:8080", o));
}

TEST(HttpPolicy, ApiKey) {
  HttpRequest r;
  EXPECT_TRUE(api_key_ok(r, ""));
  r.headers["authorization"] = "Bearer anything";
  EXPECT_TRUE(api_key_ok(r, ""));  // no key configured: any Authorization is fine (Open WebUI)
  EXPECT_FALSE(api_key_ok(r, "k1"));
  r.headers["authorization"] = "Bearer k1";
  EXPECT_TRUE(api_key_ok(r, "k1"));
  r.headers["authorization"] = "Bearer k10";
  EXPECT_FALSE(api_key_ok(r, "k1"));
  r.headers["authorization"] = "Basic k1";
  EXPECT_FALSE(api_key_ok(r, "k1"));
  r.headers["x-api-key"] = "k1";
  EXPECT_TRUE(api_key_ok(r, "k1"));
}

TEST(HttpPolicy, Cors) {
  ServerOptions o;
  EXPECT_FALSE(cors_origin_allowed("http://a", o));
  o.cors_origins = {"http://a"};
  EXPECT_TRUE(cors_origin_allowed("http://a", o));
  EXPECT_FALSE(cors_origin_allowed("http://b", o));
  EXPECT_FALSE(cors_origin_allowed("", o));
}

TEST(HttpPolicy, LogEscape) {
  EXPECT_EQ(log_escape("/v1\r\nINFO fake"), "/v1\\x0d\\x0aINFO fake");
  EXPECT_EQ(log_escape(std::string(500, 'a')).size(), 200u);
  EXPECT_EQ(log_escape("a\xc2\x9b" "31mred\xc2\xa0" "b"), "a\\u009b31mred\xc2\xa0" "b");  // C1 CSI escaped, NBSP kept
}

}  // namespace
}  // namespace anelm::server
