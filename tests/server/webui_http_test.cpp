// The chat page at / over real HTTP (fake engine): the page and every file it loads, with their media
// types, the Content-Security-Policy and cache validators; --no-webui; and the API key and Host checks,
// which still apply around it. The page in a real browser: tests/server/webui/run_webui.sh.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "server/webui_routes.h"
#include "tests/support/shared_data.h"
#include "test_server.h"

namespace anelm::testing {
namespace {

using server::ServerOptions;

std::string header(const httplib::Result& r, const char* name) {
  return r && r->has_header(name) ? r->get_header_value(name) : std::string();
}

// The /webui/... files a text refers to: src="/webui/x" and href="/webui/x" in HTML, `from './x.js'`
// (ES module imports) in JS.
std::set<std::string> references(const std::string& text) {
  std::set<std::string> out;
  static const std::regex html_ref(R"re((?:src|href)="(/webui/[^"]+)")re");
  static const std::regex js_import(R"re(from '\./([^']+)')re");
  for (std::sregex_iterator it(text.begin(), text.end(), html_ref), end; it != end; ++it) out.insert((*it)[1]);
  for (std::sregex_iterator it(text.begin(), text.end(), js_import), end; it != end; ++it)
    out.insert("/webui/" + (*it)[1].str());
  return out;
}

TEST(WebuiHttp, RootServesThePageWithItsHeaders) {
  TestServer s;
  auto r = s.client().Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(header(r, "Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(r->body.find("<title>anelm</title>"), std::string::npos);
  const std::string csp = header(r, "Content-Security-Policy");
  // Nothing but this server: no remote script, style, connection, frame or form target.
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("http"), std::string::npos) << csp;
  EXPECT_EQ(header(r, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(header(r, "Cache-Control"), "no-cache");
  EXPECT_TRUE(std::regex_match(header(r, "ETag"), std::regex(R"("[0-9a-f]{20}")"))) << header(r, "ETag");
}

TEST(WebuiHttp, EveryFileThePageLoadsIsServedWithItsType) {
  TestServer s;
  std::set<std::string> todo = references(s.client().Get("/")->body);
  ASSERT_TRUE(todo.count("/webui/app.js") && todo.count("/webui/style.css")) << todo.size();
  std::set<std::string> done;
  while (!todo.empty()) {
    const std::string path = *todo.begin();
    todo.erase(todo.begin());
    if (!done.insert(path).second) continue;
    auto r = s.client().Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_FALSE(r->body.empty()) << path;
    const std::string type = header(r, "Content-Type");
    EXPECT_EQ(type, server::webui_content_type(path)) << path;
    EXPECT_TRUE(type.starts_with("text/javascript") || type.starts_with("text/css")) << path << ": " << type;
    EXPECT_FALSE(header(r, "Content-Security-Policy").empty()) << path;
    for (const std::string& next : references(r->body)) todo.insert(next);
  }
  // app.js imports the stream reader, the message renderer and the storage.
  EXPECT_TRUE(done.count("/webui/stream.js") && done.count("/webui/render.js") && done.count("/webui/store.js"));
  // Every embedded file is reachable from the page (none is dead weight in the binary).
  for (const server::WebuiFile& f : server::webui_files()) {
    if (f.name != "index.html") {
      EXPECT_TRUE(done.count("/webui/" + std::string(f.name))) << f.name;
    }
  }
}

TEST(WebuiHttp, NoFileRefersToAnotherSite) {
  for (const server::WebuiFile& f : server::webui_files()) {
    EXPECT_EQ(f.body.find("://"), std::string_view::npos) << f.name << " names a remote URL";
    EXPECT_EQ(f.body.find("src=\"//"), std::string_view::npos) << f.name;
  }
}

TEST(WebuiHttp, RevalidationAnswers304AndHeadHasNoBody) {
  TestServer s;
  auto first = s.client().Get("/webui/app.js");
  const std::string etag = header(first, "ETag");
  ASSERT_FALSE(etag.empty());
  auto again = s.client().Get("/webui/app.js", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());
  EXPECT_EQ(header(again, "ETag"), etag);
  // A list of tags and a weak form of ours match too; another file's tag does not.
  EXPECT_EQ(s.client().Get("/webui/app.js", {{"If-None-Match", "\"x\", W/" + etag}})->status, 304);
  EXPECT_EQ(s.client().Get("/", {{"If-None-Match", etag}})->status, 200);
  auto head = s.client().Head("/");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
}

TEST(WebuiHttp, UnknownFilesAndWrongMethods) {
  TestServer s;
  auto missing = s.client().Get("/webui/missing.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("missing.js"), std::string::npos) << missing->body;
  EXPECT_EQ(s.client().Get("/webui/../server_options.cpp")->status, 404);
  EXPECT_EQ(s.client().Get("/index.html")->status, 404);
  auto post = s.client().Post("/", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(header(post, "Allow"), "GET");
}

TEST(WebuiHttp, NoWebuiAnswers404AsBefore) {
  ServerOptions o = test_options();
  o.webui = false;
  TestServer s({}, o);
  for (const char* path : {"/", "/webui/app.js", "/webui/style.css"}) {
    auto r = s.client().Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_EQ(header(r, "Content-Type"), "application/json") << path;
    EXPECT_NE(r->body.find("not_found_error"), std::string::npos) << r->body;
    EXPECT_TRUE(header(r, "Content-Security-Policy").empty()) << path;
  }
  EXPECT_EQ(s.client().Get("/health")->status, 200);  // the API is untouched
}

TEST(WebuiHttp, ThePageIsPublicButTheApiStillNeedsTheKey) {
  ServerOptions o = test_options();
  o.api_key = "sesame";
  TestServer s({"hi"}, o);
  // The page and its files hold no secret: a browser loads them without a key, then asks for it.
  EXPECT_EQ(s.client().Get("/")->status, 200);
  EXPECT_EQ(s.client().Get("/webui/app.js")->status, 200);
  const std::string body = R"({"messages": [{"role": "user", "content": "x"}], "stream": true})";
  auto no_key = s.client().Post("/v1/chat/completions", body, "application/json");
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  auto wrong = s.client().Post("/v1/chat/completions", {{"Authorization", "Bearer nope"}}, body, "application/json");
  EXPECT_EQ(wrong->status, 401);
  EXPECT_NE(wrong->body.find("invalid_api_key"), std::string::npos) << wrong->body;
  // What the page sends from its own address: same-origin (Origin is the server itself, not in
  // cors_origins), Bearer key. Same-origin requests need no CORS, so this passes.
  const std::string self = "http://127.0.0.1:" + std::to_string(s.port());
  auto ok = s.client().Post("/v1/chat/completions", {{"Authorization", "Bearer sesame"}, {"Origin", self}}, body,
                            "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_NE(ok->body.find("data: [DONE]"), std::string::npos);
}

TEST(WebuiHttp, HostCheckAppliesToThePage) {
  TestServer s;
  auto evil = s.client().Get("/", {{"Host", "evil.example:8080"}});
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 403);
  EXPECT_EQ(evil->body.find("<html"), std::string::npos);
  EXPECT_EQ(s.client().Get("/webui/app.js", {{"Host", "rebind.attacker.test"}})->status, 403);
  EXPECT_EQ(s.client().Get("/", {{"Host", "localhost:" + std::to_string(s.port())}})->status, 200);
  EXPECT_EQ(s.client().Get("/", {{"Host", "127.0.0.1:" + std::to_string(s.port())}})->status, 200);
}

TEST(WebuiOptions, FlagAndConfigKey) {
  auto parse = [](std::vector<std::string> args) {
    args.insert(args.begin(), "serve");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return server::parse_server_args(static_cast<int>(argv.size()), argv.data()).options;
  };
  const auto dir = make_temp_dir("webui_options");
  auto config = [&](const std::string& text) {
    const std::string path = (dir / "server.json").string();
    std::ofstream(path) << text;
    return path;
  };
  EXPECT_TRUE(parse({"--config", config("{}")}).webui);
  EXPECT_FALSE(parse({"--config", config("{}"), "--no-webui"}).webui);
  EXPECT_FALSE(parse({"--config", config(R"({"webui": false})")}).webui);
  try {
    parse({"--config", config(R"({"webui": "no"})")});
    FAIL() << "a string webui was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("'webui'"), std::string::npos) << e.what();
  }
}

TEST(WebuiContentType, ByExtension) {
  EXPECT_EQ(server::webui_content_type("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(server::webui_content_type("app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(server::webui_content_type("style.css"), "text/css; charset=utf-8");
  EXPECT_EQ(server::webui_content_type("icon.svg"), "image/svg+xml");
  EXPECT_EQ(server::webui_content_type("notes"), "application/octet-stream");
}

}  // namespace
}  // namespace anelm::testing
