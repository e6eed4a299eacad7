// The HTTP layer against hostile and unusual clients, over raw sockets: compressed and chunked
// bodies, header floods, slow clients, connection floods, duplicate Host, half-close, shutdown.
#include <gtest/gtest.h>
#include <zlib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <thread>

#include "engine/error.h"
#include "server/http_wire.h"
#include "server/server_options.h"
#include "test_server.h"

namespace anelm::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Resident memory of this process (the in-process server included), in MiB.
double rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      double kb = 0;
      in >> kb;
      return kb / 1024.0;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

// A raw TCP client: writes exactly what it is told, reads with a deadline.
class RawConn {
 public:
  explicit RawConn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawConn() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  bool send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  void set_receive_buffer(int bytes) { ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes); }
  // Reads until `done(received)` holds, the peer closes, or `timeout_s` passes.
  std::string read(double timeout_s, const std::function<bool(const std::string&)>& done = nullptr) {
    std::string got;
    const auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
    while (Clock::now() < end && !(done && done(got))) {
      pollfd p{fd_, POLLIN, 0};
      const int ms = static_cast<int>(std::chrono::duration<double, std::milli>(end - Clock::now()).count());
      if (::poll(&p, 1, std::max(ms, 1)) <= 0) continue;
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
  bool peer_closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
};

// True once `r` holds a complete response head.
bool has_head(const std::string& r) { return r.find("\r\n\r\n") != std::string::npos; }

// The final status of a response text (interim 1xx responses skipped); 0 when none.
int status_of(const std::string& r) {
  size_t pos = 0;
  while (r.compare(pos, 9, "HTTP/1.1 ") == 0 && pos + 12 <= r.size()) {
    int s = std::stoi(r.substr(pos + 9, 3));
    if (s >= 200) return s;
    size_t end = r.find("\r\n\r\n", pos);
    if (end == std::string::npos) return 0;
    pos = end + 4;
  }
  return 0;
}

bool has_final_head(const std::string& r) { return status_of(r) != 0 && has_head(r); }

std::string post_head(const std::string& path, const std::string& extra) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra + "\r\n";
}

// A real gzip bomb: a fixed-Huffman deflate stream of `n` zero bytes (one literal, then
// length-258/distance-1 copies: 13 bits per 258 bytes, so 64 MiB inflate from ~0.4 MB).
std::string gzip_of_zeros(size_t n) {
  std::string out = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, 3};
  uint32_t acc = 0;
  int nbits = 0;
  auto bits = [&](uint32_t v, int len) {  // LSB first
    acc |= v << nbits;
    nbits += len;
    while (nbits >= 8) {
      out += static_cast<char>(acc & 0xff);
      acc >>= 8;
      nbits -= 8;
    }
  };
  auto huff = [&](uint32_t code, int len) {  // Huffman codes go MSB first
    for (int i = len - 1; i >= 0; --i) bits((code >> i) & 1, 1);
  };
  bits(1, 1);          // BFINAL
  bits(1, 2);          // fixed Huffman
  huff(0x30, 8);       // literal 0
  for (size_t done = 1; done + 258 <= n; done += 258) {
    huff(0xC5, 8);     // length code 285: 258 bytes
    huff(0, 5);        // distance code 0: distance 1
  }
  huff(0, 7);          // end of block
  if (nbits) bits(0, 8 - nbits);
  for (int i = 0; i < 8; ++i) out += '\0';  // CRC and size: never checked, the body is refused first
  return out;
}

server::ServerOptions hardened_options() {
  auto o = test_options();
  o.max_body_bytes = 1 << 20;
  return o;
}

// ---- defect 1: body limits on the decoded stream, header limits, auth before the body ----------

TEST(HttpHardening, GzipBombStopsAtTheLimitWhileInflating) {
  TestServer s({}, hardened_options());
  const std::string bomb = gzip_of_zeros(64u << 20);
  ASSERT_LT(bomb.size(), 600u * 1024);
  for (const char* encoding : {"gzip", "deflate", "br"}) {
    const double rss0 = rss_mib();
    RawConn c(s.port());
    const auto t0 = Clock::now();
    c.send(post_head("/v1/completions", "Content-Encoding: " + std::string(encoding) +
                                            "\r\nContent-Length: " + std::to_string(bomb.size()) + "\r\n"));
    std::thread w([&] { c.send(bomb); });
    const std::string r = c.read(5, has_final_head);
    const double took = seconds_since(t0);
    w.join();
    // gzip and deflate are inflated under max_body_bytes (413 once it is passed); others are 415.
    EXPECT_EQ(status_of(r), std::string(encoding) == "br" ? 415 : 413) << encoding << ": " << r.substr(0, 200);
    EXPECT_LT(took, 1.0) << encoding;
    EXPECT_LT(rss_mib() - rss0, 32.0) << encoding << ": the server inflated past the limit";
  }
  EXPECT_EQ(s.post("/v1/completions", {{"prompt", "ok"}})->status, 200);
}

TEST(HttpHardening, GzipBodiesWithinTheLimitAreInflated) {
  TestServer s({}, hardened_options());
  const std::string json_body = R"({"prompt": "zipped", "max_tokens": 8})";
  std::string gz(compressBound(static_cast<uLong>(json_body.size())) + 32, '\0');
  z_stream zs{};
  ASSERT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);  // gzip wrapper
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(json_body.data()));
  zs.avail_in = static_cast<uInt>(json_body.size());
  zs.next_out = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_out = static_cast<uInt>(gz.size());
  ASSERT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  for (bool truncate : {false, true}) {
    const std::string body = truncate ? gz.substr(0, gz.size() / 2) : gz;
    RawConn c(s.port());
    c.send(post_head("/v1/completions", "Content-Encoding: gzip\r\nContent-Length: " + std::to_string(body.size()) + "\r\n") + body);
    const std::string r = c.read(5, has_final_head);
    EXPECT_EQ(status_of(r), truncate ? 400 : 200) << r.substr(0, 300);
  }
}

TEST(HttpHardening, ChunkedBodyOverLimitIs413WhileArriving) {
  TestServer s({}, hardened_options());
  const double rss0 = rss_mib();
  RawConn c(s.port());
  const auto t0 = Clock::now();
  c.send(post_head("/v1/completions", "Transfer-Encoding: chunked\r\n"));
  std::atomic<size_t> sent{0};
  std::thread w([&] {
    const std::string chunk = "10000\r\n" + std::string(0x10000, 'a') + "\r\n";
    for (int i = 0; i < 1024 && c.send(chunk); ++i) sent += 0x10000;  // 64 MiB
  });
  const std::string r = c.read(10, has_final_head);
  const double took = seconds_since(t0);
  ::shutdown(c.fd(), SHUT_RDWR);
  w.join();
  EXPECT_EQ(status_of(r), 413) << r.substr(0, 200);
  EXPECT_LT(took, 3.0);
  EXPECT_LT(sent.load(), 64u << 20) << "the server read the whole 64 MiB";
  EXPECT_LT(rss_mib() - rss0, 32.0);
  EXPECT_NE(r.find("invalid_request_error"), std::string::npos);
}

TEST(HttpHardening, ChunkedBodyWithinLimitIsDecoded) {
  TestServer s;
  const std::string body = json{{"prompt", "chunky"}, {"max_tokens", 8}}.dump();
  std::string req = post_head("/v1/completions", "Transfer-Encoding: chunked\r\n");
  for (size_t i = 0; i < body.size(); i += 5) {
    const std::string part = body.substr(i, 5);
    char size[16];
    std::snprintf(size, sizeof size, "%zx", part.size());
    req += std::string(size) + ";ext=1\r\n" + part + "\r\n";
  }
  req += "0\r\nX-Trailer: t\r\n\r\n";
  RawConn c(s.port());
  c.send(req);
  const std::string r = c.read(5, [](const std::string& g) { return g.find("\"usage\"") != std::string::npos; });
  EXPECT_EQ(status_of(r), 200) << r;
  EXPECT_NE(r.find("chunky"), std::string::npos);
}

TEST(HttpHardening, ClaimedHugeContentLengthIs413Immediately) {
  TestServer s({}, hardened_options());
  for (const char* length : {"1000000000000", "99999999999999999999999999"}) {
    RawConn c(s.port());
    const auto t0 = Clock::now();
    c.send(post_head("/v1/completions", std::string("Content-Length: ") + length + "\r\n"));
    const std::string r = c.read(5, has_final_head);
    EXPECT_EQ(status_of(r), 413) << length;
    EXPECT_LT(seconds_since(t0), 1.0);
  }
}

TEST(HttpHardening, HeaderFloodIs431) {
  TestServer s;
  {  // 200 small headers: over the count limit
    std::string extra;
    for (int i = 0; i < 200; ++i) extra += "X-H" + std::to_string(i) + ": v\r\n";
    RawConn c(s.port());
    c.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + "\r\n");
    EXPECT_EQ(status_of(c.read(5, has_final_head)), 431);
  }
  {  // 200,000 headers streamed: refused long before they are all sent
    RawConn c(s.port());
    std::atomic<int> lines{0};
    std::thread w([&] {
      if (!c.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")) return;
      for (int i = 0; i < 200000 && c.send("X-A: b\r\n"); ++i) lines++;
    });
    const std::string r = c.read(5, has_final_head);
    ::shutdown(c.fd(), SHUT_RDWR);
    w.join();
    EXPECT_EQ(status_of(r), 431);
    EXPECT_LT(lines.load(), 200000);
  }
  {  // one huge header line
    RawConn c(s.port());
    c.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(64 * 1024, 'x') + "\r\n\r\n");
    EXPECT_EQ(status_of(c.read(5, has_final_head)), 431);
  }
  EXPECT_EQ(s.client().Get("/health")->status, 200);
}

TEST(HttpHardening, AuthenticationIsDecidedBeforeTheBody) {
  auto o = test_options();
  o.api_key = "sekret";
  TestServer s({}, o);
  RawConn c(s.port());
  const auto t0 = Clock::now();
  c.send(post_head("/v1/completions", "Content-Length: 500000\r\n"));  // the body never comes
  const std::string r = c.read(3, has_final_head);
  EXPECT_EQ(status_of(r), 401) << r;
  EXPECT_LT(seconds_since(t0), 1.0);
  RawConn host(s.port());  // and the Host check
  host.send("POST /v1/completions HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n"
            "Authorization: Bearer sekret\r\nContent-Length: 500000\r\n\r\n");
  EXPECT_EQ(status_of(host.read(3, has_final_head)), 403);
}

// ---- defect 2: slow clients, connection floods, shutdown ---------------------------------------

// Opens `n` connections that stall: half of them mid-head, half after a Content-Length and a byte.
std::vector<std::unique_ptr<RawConn>> stalled_clients(int port, int n) {
  std::vector<std::unique_ptr<RawConn>> v;
  for (int i = 0; i < n; ++i) {
    auto c = std::make_unique<RawConn>(port);
    if (i % 2 == 0) c->send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    else c->send(post_head("/v1/completions", "Content-Length: 100\r\n") + "{");
    v.push_back(std::move(c));
  }
  return v;
}

TEST(HttpHardening, HealthAnswersUnderSeventyStalledConnections) {
  TestServer s;  // 48 HTTP worker threads in the test options
  auto stalled = stalled_clients(s.port(), 70);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = Clock::now();
  auto c = s.client();
  c.set_read_timeout(3, 0);
  auto r = c.Get("/health");
  const double took = seconds_since(t0);
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(took, 2.0);
  EXPECT_EQ(s.post("/v1/completions", {{"prompt", "still here"}})->status, 200);
  std::printf("[ measure ] /health under 70 stalled connections: %.1f ms\n", took * 1000);
}

TEST(HttpHardening, ConnectionLimitClosesTheOldestStalledConnection) {
  auto o = test_options();
  o.max_connections = 16;
  TestServer s({}, o);
  auto stalled = stalled_clients(s.port(), 40);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto c = s.client();
  c.set_read_timeout(3, 0);
  auto r = c.Get("/health");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  // The first stalled clients were closed to make room.
  EXPECT_TRUE(stalled.front()->read(1).empty());
  EXPECT_TRUE(stalled.front()->peer_closed());
}

TEST(HttpHardening, AllConnectionsBusyGets503) {
  FakeScript sc;
  sc.endless = true;
  sc.token_ms = 5;
  sc.ctx = 1 << 20;
  auto o = test_options();
  o.max_connections = 4;
  TestServer s(sc, o);
  const std::string body = R"({"prompt":"zz","max_tokens":1000000})";
  std::vector<std::unique_ptr<RawConn>> busy;
  for (int i = 0; i < 4; ++i) {
    busy.push_back(std::make_unique<RawConn>(s.port()));
    busy.back()->send(post_head("/v1/completions", "Content-Length: " + std::to_string(body.size()) + "\r\n") + body);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  RawConn extra(s.port());
  extra.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const std::string r = extra.read(2, has_final_head);
  EXPECT_EQ(status_of(r), 503) << r;
  EXPECT_NE(r.find("Retry-After"), std::string::npos);
  s.context().drain(std::chrono::milliseconds(0));
}

TEST(HttpHardening, LimitsAreConfigKeys) {
  server::ServerOptions o;
  server::apply_config_json(o, R"({"max_header_bytes": 8192, "max_headers": 50, "max_connections": 64,
                                   "header_timeout_s": 3, "keep_alive_timeout_s": 2})", "test");
  EXPECT_EQ(o.max_header_bytes, 8192u);
  EXPECT_EQ(o.max_headers, 50);
  EXPECT_EQ(o.max_connections, 64);
  EXPECT_EQ(o.header_timeout_s, 3);
  EXPECT_EQ(o.keep_alive_timeout_s, 2);
  EXPECT_NO_THROW(server::validate_options(o));
  o.max_connections = 1;
  EXPECT_THROW(server::validate_options(o), Error);
}

TEST(HttpHardening, SlowHeadAndBodyTimeOutWith408) {
  auto o = test_options();
  o.header_timeout_s = 1;
  o.read_timeout_s = 2;
  TestServer s({}, o);
  RawConn head(s.port());
  head.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  RawConn body(s.port());
  body.send(post_head("/v1/completions", "Content-Length: 10\r\n") + "{");
  const auto t0 = Clock::now();
  EXPECT_EQ(status_of(head.read(4, has_final_head)), 408);
  EXPECT_LT(seconds_since(t0), 2.5);
  EXPECT_EQ(status_of(body.read(4, has_final_head)), 408);
  EXPECT_LT(seconds_since(t0), 3.5);
}

TEST(HttpHardening, StopFinishesPromptlyWhateverClientsDo) {
  FakeScript sc;
  sc.endless = true;
  sc.ctx = 1 << 20;
  auto s = std::make_unique<TestServer>(sc);
  auto stalled = stalled_clients(s->port(), 70);
  // A stream reader that never reads: the server's writes block on a full socket.
  RawConn reader(s->port());
  reader.set_receive_buffer(4096);
  const std::string stream_body = R"({"prompt":"zz","max_tokens":1000000,"stream":true})";
  reader.send(post_head("/v1/completions", "Content-Length: " + std::to_string(stream_body.size()) + "\r\n") +
              stream_body);
  RawConn nonstream(s->port());  // a non-streamed request still generating
  const std::string body = R"({"prompt":"zz","max_tokens":1000000})";
  nonstream.send(post_head("/v1/completions", "Content-Length: " + std::to_string(body.size()) + "\r\n") + body);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(status_of(reader.read(1, has_head)), 200);  // streaming, then stalled on a full socket
  const auto t0 = Clock::now();
  s.reset();  // drain(0) + stop, as SIGTERM does after the grace period
  const double took = seconds_since(t0);
  EXPECT_LT(took, 3.0);
  std::printf("[ measure ] stop with 70 stalled clients and a stalled stream: %.2f s\n", took);
}

// ---- defect 3: Host resolution and exactly one Host header --------------------------------------

TEST(HttpHardening, BindHostIsCheckedByEveryResolvedAddress) {
  using server::is_loopback_host;
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.1.2.3"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("[::1]"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("::"));
  EXPECT_FALSE(is_loopback_host("127.0.0.1.lan"));  // a name, not an address: it resolves elsewhere (or not at all)
  EXPECT_FALSE(is_loopback_host("127.evil.example"));
  EXPECT_FALSE(is_loopback_host(""));
  server::ServerOptions o;
  o.host = "127.0.0.1.lan";
  EXPECT_THROW(server::validate_options(o), Error);
  o.api_key = "k";
  EXPECT_NO_THROW(server::validate_options(o));
}

TEST(HttpHardening, ExactlyOneHostHeader) {
  TestServer s;
  RawConn two(s.port());
  two.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n");
  EXPECT_EQ(status_of(two.read(3, has_final_head)), 400);
  RawConn none(s.port());
  none.send("GET /health HTTP/1.1\r\n\r\n");
  EXPECT_EQ(status_of(none.read(3, has_final_head)), 400);
  RawConn old(s.port());  // HTTP/1.0 may omit it
  old.send("GET /health HTTP/1.0\r\n\r\n");
  EXPECT_EQ(status_of(old.read(3, has_final_head)), 200);
  RawConn evil(s.port());  // one Host, then the rebinding check
  evil.send("GET /health HTTP/1.1\r\nHost: evil.example\r\n\r\n");
  EXPECT_EQ(status_of(evil.read(3, has_final_head)), 403);
}

// RFC 9112 §3.2.2: a server must accept an absolute-form target; its authority (not the Host header)
// then passes the Host policy.
TEST(HttpHardening, AbsoluteFormTargetIsAcceptedUnderTheHostPolicy) {
  TestServer s;
  const std::string self = "127.0.0.1:" + std::to_string(s.port());
  const std::string body = R"({"prompt": "abs", "max_tokens": 2})";
  RawConn post(s.port());
  post.send("POST http://" + self + "/v1/completions HTTP/1.1\r\nHost: " + self +
            "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  const std::string r = post.read(3, [](const std::string& g) { return g.find("\"usage\"") != std::string::npos; });
  EXPECT_EQ(status_of(r), 200) << r;
  auto status = [&](const std::string& target, const std::string& host) {
    RawConn c(s.port());
    c.send("GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    return status_of(c.read(3, has_final_head));
  };
  EXPECT_EQ(status("HTTP://localhost/health", "127.0.0.1"), 200);
  EXPECT_EQ(status("http://127.0.0.1?x=1", "127.0.0.1"), status("/?x=1", "127.0.0.1")) << "no path: '/'";
  EXPECT_EQ(status("http://127.0.0.1/health?x=1", "127.0.0.1"), 200);
  EXPECT_EQ(status("http://evil.example/health", "127.0.0.1"), 403) << "the authority is what the policy judges";
  EXPECT_EQ(status("http://127.0.0.1/health", "evil.example"), 200) << "the Host header is ignored";
  for (const std::string bad : {"http://user@127.0.0.1/health", "ftp://127.0.0.1/health", "http:///health",
                                "http://:80/health", "127.0.0.1/health", "http//127.0.0.1/health"})
    EXPECT_EQ(status(bad, "127.0.0.1"), 400) << bad;

  server::RequestHead h;
  ASSERT_FALSE(server::parse_head("GET https://Example.com:8443/a/b?c=d HTTP/1.1\r\nHost: x\r\n\r\n", {}, &h));
  EXPECT_EQ(h.target, "/a/b?c=d");
  EXPECT_EQ(h.headers["host"], "Example.com:8443");
}

// ---- defect 4: smaller ones ---------------------------------------------------------------------

TEST(HttpHardening, MultipartIs415) {
  TestServer s;
  RawConn c(s.port());
  c.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=x\r\n"
         "Content-Length: 300000\r\n\r\n");
  const std::string r = c.read(3, has_final_head);
  EXPECT_EQ(status_of(r), 415);
  EXPECT_NE(r.find("multipart"), std::string::npos);
}

TEST(HttpHardening, HalfClosedClientStillGetsItsResponse) {
  FakeScript sc;
  sc.token_ms = 20;  // generation outlasts the half-close
  TestServer s(sc);
  for (bool stream : {false, true}) {
    RawConn c(s.port());
    const std::string body = json{{"prompt", "half open"}, {"max_tokens", 9}, {"stream", stream}}.dump();
    c.send(post_head("/v1/completions", "Content-Length: " + std::to_string(body.size()) + "\r\n") + body);
    c.shutdown_write();
    const std::string r = c.read(5);  // until the server closes
    EXPECT_EQ(status_of(r), 200) << r;
    EXPECT_NE(r.find(stream ? "[DONE]" : "\"finish_reason\""), std::string::npos) << r;
  }
  EXPECT_EQ(s.engine().cancelled.load(), 0);
}

// A chat stream sends its first chunk before prefill ends; a client that then really closes is
// still noticed during prefill (the half-close probe is an SSE comment there).
TEST(HttpHardening, ChatStreamClosedDuringPrefillIsCancelled) {
  FakeScript sc;
  sc.prefill_ms = 10000;
  TestServer s(sc);
  {
    RawConn c(s.port());
    const std::string body = json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"stream", true}}.dump();
    c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    EXPECT_EQ(status_of(c.read(2, has_head)), 200);
  }  // closed
  const auto t0 = Clock::now();
  while (s.engine().cancelled.load() == 0 && seconds_since(t0) < 3)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(s.engine().cancelled.load(), 1);
  EXPECT_LT(seconds_since(t0), 1.0);
}

TEST(HttpHardening, KeepAlivePipeliningAndExpectContinue) {
  TestServer s;
  RawConn c(s.port());
  c.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const std::string r = c.read(3, [](const std::string& g) { return g.find("fake-model\"") != std::string::npos &&
                                                                        g.find("\"data\"") != std::string::npos; });
  EXPECT_EQ(status_of(r), 200);
  EXPECT_NE(r.find("\"data\""), std::string::npos) << "the pipelined second request was not answered";
  RawConn e(s.port());
  const std::string body = R"({"prompt":"continue","max_tokens":4})";
  e.send(post_head("/v1/completions", "Expect: 100-continue\r\nContent-Length: " + std::to_string(body.size()) + "\r\n"));
  const std::string interim = e.read(3, has_head);
  EXPECT_EQ(interim.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << interim;
  e.send(body);
  EXPECT_EQ(status_of(interim + e.read(3, [](const std::string& g) { return g.find("usage") != std::string::npos; })), 200);
}

// ---- the parser, without sockets ----------------------------------------------------------------

TEST(HttpWire, RefusesAmbiguousHeads) {
  using server::parse_head;
  server::WireLimits lim;
  server::RequestHead h;
  auto status = [&](const std::string& head) { return parse_head(head, lim, &h).status; };
  EXPECT_EQ(status("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nHost : a\r\n\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/2.0\r\nHost: a\r\n\r\n"), 505);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nHost: a\r\nContent-Encoding: identity\r\n\r\n"), 0);
}

TEST(HttpWire, ChunkedDecoderEnforcesTheLimitOnDecodedBytes) {
  server::RequestHead h;
  h.chunked = true;
  server::BodyDecoder d(h, 10);
  std::string body;
  d.feed("5\r\nhello\r\n", &body);
  EXPECT_FALSE(d.error());
  d.feed("6\r\n", &body);  // 11 bytes announced: refused before they arrive
  EXPECT_EQ(d.error().status, 413);
  server::BodyDecoder ok(h, 10);
  body.clear();
  const std::string all = "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  for (char ch : all) ok.feed(std::string_view(&ch, 1), &body);  // one byte at a time
  EXPECT_TRUE(ok.done());
  EXPECT_EQ(body, "abcde");
}

}  // namespace
}  // namespace anelm::testing
