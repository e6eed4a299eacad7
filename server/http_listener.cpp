// The HTTP/1.1 connection machinery: poll() reactor for reading, worker pool for answering.
#include "server/http_listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "engine/error.h"
#include "server/http_policy.h"

namespace anelm::server {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kListenBacklog = 512;
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxReadPerWake = 1 << 20;  // fairness: one connection cannot hog the reactor
constexpr milliseconds kLinger{2000};         // after a refusal: discard the rest of the upload this long
constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "/v1/models/a%2Fb?x=1" -> "/v1/models/a/b" (normalised); false on a bad escape or a NUL.
bool decode_path(const std::string& target, std::string* out) {
  const std::string raw = target.substr(0, target.find('?'));
  std::string path;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '%') {
      path += raw[i];
      continue;
    }
    if (i + 2 >= raw.size() || hex_digit(raw[i + 1]) < 0 || hex_digit(raw[i + 2]) < 0) return false;
    const char c = static_cast<char>(hex_digit(raw[i + 1]) * 16 + hex_digit(raw[i + 2]));
    if (c == '\0') return false;
    path += c;
    i += 2;
  }
  *out = normalize_path(path);
  return true;
}

}  // namespace

// One client connection. The reactor owns it while reading (phases kIdle..kBody, kFlush, kLinger),
// a worker while it answers (kBusy); the hand-over goes through the job and return queues.
struct Conn {
  enum class Phase { kIdle, kHead, kBody, kBusy, kFlush, kLinger };
  int fd = -1;
  Phase phase = Phase::kIdle;
  std::string in;  // received bytes not yet consumed (may hold a pipelined next request)
  RequestHead head;
  HttpRequest req;
  BodyDecoder body;
  Clock::time_point since;     // accepted or last answered: eviction order
  Clock::time_point deadline;  // of the current phase
  Clock::time_point t0;        // first byte of the current request
  std::string out;             // a refusal being flushed by the reactor
  size_t out_off = 0;
  int served = 0;
  // Worker side, per request.
  bool head_sent = false;    // a streamed response's head is out
  bool probed = false;       // a liveness probe was sent after the peer's FIN
  bool write_failed = false;
  std::function<bool()> probe;  // a started event stream: writes an SSE comment ("false": failed)
};

struct HttpListener::Impl {
  Impl(ListenerOptions o, ListenerCallbacks c) : opts(std::move(o)), cb(std::move(c)) {}

  // A worker thread's hand-over slot: dispatch gives a request straight to an idle worker.
  struct Worker {
    std::condition_variable cv;
    std::shared_ptr<Conn> job;
  };

  // reactor
  void reactor_loop();
  void accept_all();
  void make_room();
  void on_readable(const std::shared_ptr<Conn>& c);
  void on_writable(Conn& c);
  void process(const std::shared_ptr<Conn>& c);
  void start_request(Conn& c);
  void refuse(Conn& c, int status, const std::string& message);
  void flush(Conn& c);
  void dispatch(const std::shared_ptr<Conn>& c);
  void on_deadline(Conn& c);
  void close_reactor_conn(Conn& c);
  void wake();
  // workers
  void worker_loop(Worker& w);
  void serve(const std::shared_ptr<Conn>& c);
  bool write_all(Conn& c, std::string_view data);
  // before_last_write runs just before the final bytes (the whole buffered response, or the end of a stream).
  bool write_response(Conn& c, HttpResponse& r, const std::function<void()>& before_last_write);
  bool client_gone(Conn& c);
  void close_busy(Conn& c);

  ListenerOptions opts;
  ListenerCallbacks cb;
  int listen_fd = -1;
  int wake_fd = -1;
  int port = -1;
  std::thread reactor;
  std::vector<std::thread> workers;
  std::vector<std::shared_ptr<Conn>> conns;  // reactor-owned (reactor thread only)
  std::atomic<int> open{0};
  std::atomic<bool> stopping{false};
  std::atomic<bool> hard_stop{false};
  bool stopped = false;

  std::vector<std::unique_ptr<Worker>> worker_slots;  // one per worker thread

  std::mutex mu;  // guards everything below
  std::condition_variable idle_cv;
  std::deque<std::shared_ptr<Conn>> jobs;      // complete requests waiting for a worker (none idle)
  // Idle workers, the most recently idle last: a request goes to the top, so light traffic keeps
  // reusing the same few threads. Handed round all 64 workers (a shared wait queue), every thread's
  // allocator heap grew to its own peak: RSS crept up 5-9 MB a minute under bench/soak.py's mix
  // for as long as it ran, and stays flat with the work on the few threads it needs.
  std::vector<Worker*> idle_workers;
  std::deque<std::shared_ptr<Conn>> returned;  // kept-alive connections going back to the reactor
  std::set<Conn*> busy;                        // owned by workers (queued or running)
  bool workers_exit = false;
};

// ---- reactor ----------------------------------------------------------------------------------

void HttpListener::Impl::wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
}

void HttpListener::Impl::close_reactor_conn(Conn& c) {
  if (c.fd < 0) return;
  ::close(c.fd);
  c.fd = -1;
  open--;
}

// At the connection limit: close the reactor-owned connection that has waited longest, idle ones
// (keep-alive, lingering) before half-read ones. Connections being answered are never closed.
void HttpListener::Impl::make_room() {
  auto rank = [](const Conn& c) { return c.phase == Conn::Phase::kIdle || c.phase == Conn::Phase::kLinger ? 0 : 1; };
  Conn* victim = nullptr;
  for (auto& c : conns) {
    if (c->phase == Conn::Phase::kBusy || c->fd < 0) continue;
    if (!victim || rank(*c) < rank(*victim) || (rank(*c) == rank(*victim) && c->since < victim->since))
      victim = c.get();
  }
  if (!victim) return;
  spdlog::debug("http: connection limit {} reached, closing the oldest idle or slow connection", opts.max_connections);
  close_reactor_conn(*victim);
}

void HttpListener::Impl::accept_all() {
  for (int i = 0; i < 64; ++i) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (open.load() >= opts.max_connections) make_room();
    if (open.load() >= opts.max_connections) {
      // Every connection is being answered: refuse this one (best effort, it is non-blocking).
      HttpResponse r = cb.refuse(503, "too many connections");
      std::string msg = response_head(503, {{"Content-Type", r.content_type},
                                            {"Content-Length", std::to_string(r.body.size())},
                                            {"Retry-After", "1"}, {"Connection", "close"}}) + r.body;
      [[maybe_unused]] ssize_t n = ::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    auto c = std::make_shared<Conn>();
    c->fd = fd;
    c->since = Clock::now();
    c->deadline = c->since + milliseconds(opts.header_timeout_ms);
    open++;
    conns.push_back(std::move(c));
  }
}

void HttpListener::Impl::start_request(Conn& c) {
  c.phase = Conn::Phase::kHead;
  c.t0 = Clock::now();
  c.deadline = c.t0 + milliseconds(std::min(opts.header_timeout_ms, opts.read_timeout_ms));
  c.req = HttpRequest{};
  c.head = RequestHead{};
  c.head_sent = c.probed = c.write_failed = false;
}

// A refusal made before the request reaches a worker: send it, then close (lingering, so that the
// client reads the response rather than a reset while it is still uploading).
void HttpListener::Impl::refuse(Conn& c, int status, const std::string& message) {
  HttpResponse r = cb.refuse(status, message);
  if (c.req.method.empty()) c.req.method = c.head.method.empty() ? "-" : c.head.method;
  if (c.req.path.empty()) c.req.path.assign(1, '-');  // (not = "-": GCC 12 false -Wrestrict)
  c.req.log->error = message;
  std::vector<std::pair<std::string, std::string>> h = r.headers;
  h.emplace_back("Content-Type", r.content_type);
  h.emplace_back("Content-Length", std::to_string(r.body.size()));
  h.emplace_back("Connection", "close");
  c.out = response_head(r.status, h) + r.body;
  c.out_off = 0;
  c.phase = Conn::Phase::kFlush;
  c.deadline = Clock::now() + kLinger;
  cb.done(c.req, r.status, c.t0 == Clock::time_point{} ? Clock::now() : c.t0);
  flush(c);
}

void HttpListener::Impl::flush(Conn& c) {
  while (c.out_off < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out_off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // wait for POLLOUT
    close_reactor_conn(c);
    return;
  }
  ::shutdown(c.fd, SHUT_WR);
  c.phase = Conn::Phase::kLinger;
  c.in.clear();
  c.deadline = Clock::now() + kLinger;
}

void HttpListener::Impl::dispatch(const std::shared_ptr<Conn>& c) {
  c->phase = Conn::Phase::kBusy;
  {
    std::lock_guard<std::mutex> lk(mu);
    busy.insert(c.get());
    if (idle_workers.empty()) {
      jobs.push_back(c);
      return;
    }
    Worker* w = idle_workers.back();
    idle_workers.pop_back();
    w->job = c;
    w->cv.notify_one();
  }
}

// Parses what has arrived: head (limits, then the policy check), then the body as it comes.
void HttpListener::Impl::process(const std::shared_ptr<Conn>& cp) {
  Conn& c = *cp;
  if (c.phase == Conn::Phase::kIdle) {
    if (c.in.empty()) return;
    start_request(c);
  }
  if (c.phase == Conn::Phase::kHead) {
    HeadScan scan = scan_head(c.in, opts.wire);
    if (scan.error) return refuse(c, scan.error.status, scan.error.message);
    if (scan.head_bytes == 0) return;
    if (WireError e = parse_head(std::string_view(c.in).substr(0, scan.head_bytes), opts.wire, &c.head))
      return refuse(c, e.status, e.message);
    c.in.erase(0, scan.head_bytes);
    c.req.method = c.head.method;
    if (!decode_path(c.head.target, &c.req.path)) return refuse(c, 400, "malformed request target");
    c.req.headers = c.head.headers;
    if (auto refusal = cb.check_head(c.req)) {
      HttpResponse r = std::move(*refusal);
      // Send the handler-made refusal as is (it carries the JSON error body).
      std::vector<std::pair<std::string, std::string>> h = r.headers;
      h.emplace_back("Content-Type", r.content_type);
      h.emplace_back("Content-Length", std::to_string(r.body.size()));
      h.emplace_back("Connection", "close");
      c.out = response_head(r.status, h) + r.body;
      c.out_off = 0;
      c.phase = Conn::Phase::kFlush;
      c.deadline = Clock::now() + kLinger;
      cb.done(c.req, r.status, c.t0);
      return flush(c);
    }
    c.body = BodyDecoder(c.head, opts.wire.max_body_bytes);
    c.phase = Conn::Phase::kBody;
    c.deadline = c.t0 + milliseconds(opts.read_timeout_ms);
    if (c.head.expect_continue && !c.body.done())
      [[maybe_unused]] ssize_t n = ::send(c.fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  if (c.phase == Conn::Phase::kBody) {
    const size_t used = c.body.feed(c.in, &c.req.body);
    c.in.erase(0, used);
    if (c.body.error()) return refuse(c, c.body.error().status, c.body.error().message);
    if (c.body.done()) dispatch(cp);
  }
}

void HttpListener::Impl::on_readable(const std::shared_ptr<Conn>& cp) {
  Conn& c = *cp;
  char buf[kReadChunk];
  size_t total = 0;
  while (c.fd >= 0 && total < kMaxReadPerWake) {
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      total += static_cast<size_t>(n);
      if (c.phase == Conn::Phase::kLinger) continue;  // discarding an upload we refused
      c.in.append(buf, static_cast<size_t>(n));
      process(cp);
      if (c.phase != Conn::Phase::kIdle && c.phase != Conn::Phase::kHead && c.phase != Conn::Phase::kBody) return;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    // EOF or error before a complete request: nobody is left to answer.
    close_reactor_conn(c);
    return;
  }
}

void HttpListener::Impl::on_deadline(Conn& c) {
  switch (c.phase) {
    case Conn::Phase::kHead:
    case Conn::Phase::kBody:
      refuse(c, 408, c.phase == Conn::Phase::kHead ? "request head not received in time" : "request body not received in time");
      break;
    default:
      close_reactor_conn(c);
  }
}

void HttpListener::Impl::reactor_loop() {
  std::vector<pollfd> fds;
  std::vector<std::shared_ptr<Conn>> polled;
  auto is_gone = [](const std::shared_ptr<Conn>& c) { return c->phase == Conn::Phase::kBusy || c->fd < 0; };
  while (!stopping.load()) {
    // Connections dispatched last round belong to workers now; drop them before taking back the
    // ones the workers returned (a connection may be both).
    conns.erase(std::remove_if(conns.begin(), conns.end(), is_gone), conns.end());
    std::deque<std::shared_ptr<Conn>> back;
    {
      std::lock_guard<std::mutex> lk(mu);
      back.swap(returned);
    }
    for (auto& c : back) {
      c->phase = Conn::Phase::kIdle;
      c->since = Clock::now();
      c->deadline = c->since + milliseconds(opts.keep_alive_ms);
      conns.push_back(c);
      process(c);  // a pipelined request may already be buffered
    }
    auto now = Clock::now();
    for (auto& c : conns)
      if (c->phase != Conn::Phase::kBusy && c->fd >= 0 && now >= c->deadline) on_deadline(*c);
    conns.erase(std::remove_if(conns.begin(), conns.end(), is_gone), conns.end());

    fds.assign({pollfd{listen_fd, POLLIN, 0}, pollfd{wake_fd, POLLIN, 0}});
    polled.clear();
    auto next = now + milliseconds(1000);
    for (auto& c : conns) {
      fds.push_back(pollfd{c->fd, static_cast<short>(c->phase == Conn::Phase::kFlush ? POLLOUT : POLLIN), 0});
      polled.push_back(c);
      next = std::min(next, c->deadline);
    }
    const auto wait = std::chrono::duration_cast<milliseconds>(next - now).count() + 1;
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait))) < 0 && errno != EINTR) break;
    if (fds[1].revents) {
      uint64_t v;
      [[maybe_unused]] ssize_t n = ::read(wake_fd, &v, sizeof v);
    }
    for (size_t i = 0; i < polled.size(); ++i) {
      Conn& c = *polled[i];
      const short ev = fds[i + 2].revents;
      if (!ev || c.phase == Conn::Phase::kBusy || c.fd < 0) continue;
      if (c.phase == Conn::Phase::kFlush) {
        if (ev & (POLLERR | POLLHUP)) close_reactor_conn(c);
        else flush(c);
      } else {
        on_readable(polled[i]);
      }
    }
    if (fds[0].revents & POLLIN) accept_all();
  }
  for (auto& c : conns)
    if (c->phase != Conn::Phase::kBusy) close_reactor_conn(*c);
  conns.clear();
}

// ---- workers ----------------------------------------------------------------------------------

bool HttpListener::Impl::write_all(Conn& c, std::string_view data) {
  auto deadline = Clock::now() + milliseconds(opts.write_timeout_ms);
  while (!data.empty()) {
    if (c.write_failed || hard_stop.load()) return c.write_failed = true, false;
    ssize_t n = ::send(c.fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      deadline = Clock::now() + milliseconds(opts.write_timeout_ms);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && Clock::now() < deadline) {
      pollfd p{c.fd, POLLOUT, 0};
      ::poll(&p, 1, 100);  // short slices: stop() must not wait for a stalled reader
      continue;
    }
    c.write_failed = true;
    return false;
  }
  return true;
}

// True once the client is gone. A FIN alone may be a half-close (the client still reads), so it
// is answered with a probe: an interim "100 Continue" before the response head (clients must accept
// 1xx, RFC 9110 §15.2), or an SSE comment in a started event stream. A peer that really closed
// answers the probe with a reset, which the next call sees.
bool HttpListener::Impl::client_gone(Conn& c) {
  if (c.write_failed) return true;
  if (hard_stop.load()) return true;
  pollfd p{c.fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return true;
  char ch;
  const ssize_t n = ::recv(c.fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  if (n > 0 || c.probed) return false;  // pipelined bytes, or waiting for the probe's answer
  c.probed = true;
  if (!c.head_sent) {
    if (c.head.minor_version == 0) return true;  // HTTP/1.0 has no interim responses
    return !write_all(c, kContinue);
  }
  return c.probe && !c.probe();  // a started event stream: a comment line; others: their next write
}

namespace {

class ChunkedSink : public StreamSink {
 public:
  ChunkedSink(std::function<bool(std::string_view)> raw, std::function<bool()> gone, std::string head, bool chunked)
      : raw_(std::move(raw)), gone_(std::move(gone)), head_(std::move(head)), chunked_(chunked) {}

  bool send_head() {
    if (head_sent_) return true;
    head_sent_ = true;
    return raw_(head_);
  }
  bool write(std::string_view data) override {
    if (!send_head()) return false;
    if (data.empty()) return true;  // an empty chunk would end the body
    if (!chunked_) return raw_(data);
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string frame = size;
    frame.append(data.data(), data.size());
    frame += "\r\n";
    return raw_(frame);
  }
  bool is_writable() override { return !gone_(); }
  bool finish() {
    if (!send_head()) return false;
    return !chunked_ || raw_("0\r\n\r\n");
  }
  bool head_sent() const { return head_sent_; }

 private:
  std::function<bool(std::string_view)> raw_;
  std::function<bool()> gone_;
  std::string head_;
  bool chunked_;
  bool head_sent_ = false;
};

}  // namespace

bool HttpListener::Impl::write_response(Conn& c, HttpResponse& r, const std::function<void()>& before_last_write) {
  const bool keep = c.head.keep_alive && !stopping.load() && c.served + 1 < opts.max_requests_per_connection;
  std::vector<std::pair<std::string, std::string>> h = r.headers;
  const bool no_body = r.status == 204 || r.status == 304 || r.status < 200;
  if (!no_body) h.emplace_back("Content-Type", r.content_type);
  if (!r.stream) {
    if (!no_body) h.emplace_back("Content-Length", std::to_string(r.body.size()));
    h.emplace_back("Connection", keep ? "keep-alive" : "close");
    std::string msg = response_head(r.status, h);
    if (!no_body && c.head.method != "HEAD") msg += r.body;
    c.head_sent = true;
    before_last_write();
    return write_all(c, msg) && keep;
  }
  const bool chunked = c.head.minor_version == 1;
  if (chunked) h.emplace_back("Transfer-Encoding", "chunked");
  h.emplace_back("Connection", chunked && keep ? "keep-alive" : "close");
  // The head goes out with the first event, so that a FIN during prefill can still be probed
  // with an interim response; after it, the stream's own writes and pings are the probe.
  ChunkedSink sink(
      [this, &c](std::string_view d) {
        c.head_sent = true;
        return write_all(c, d);
      },
      [this, &c] { return client_gone(c); }, response_head(r.status, h), chunked);
  if (r.content_type.rfind("text/event-stream", 0) == 0) c.probe = [&sink] { return sink.write(": \n\n"); };
  if (c.head.method != "HEAD") r.stream(sink);
  c.probe = nullptr;
  before_last_write();
  return sink.finish() && chunked && keep && !c.write_failed;
}

void HttpListener::Impl::close_busy(Conn& c) {
  std::lock_guard<std::mutex> lk(mu);
  busy.erase(&c);
  if (c.fd >= 0) {
    ::close(c.fd);
    c.fd = -1;
    open--;
  }
  idle_cv.notify_all();
}

void HttpListener::Impl::serve(const std::shared_ptr<Conn>& cp) {
  Conn& c = *cp;
  std::weak_ptr<Conn> weak = cp;
  c.req.client_gone = [this, weak] {
    auto c = weak.lock();
    return !c || client_gone(*c);
  };
  HttpResponse r = cb.handle(c.req);
  // Logged and counted before the last bytes leave, so a client that reads /metrics right after
  // its response always finds that response counted.
  const bool keep = write_response(c, r, [&] { cb.done(c.req, r.status, c.t0); });
  c.req.client_gone = nullptr;
  if (!keep || stopping.load()) return close_busy(c);
  c.served++;
  {
    std::lock_guard<std::mutex> lk(mu);
    busy.erase(&c);
    returned.push_back(cp);
    idle_cv.notify_all();
  }
  wake();
}

void HttpListener::Impl::worker_loop(Worker& w) {
  for (;;) {
    std::shared_ptr<Conn> c;
    {
      std::unique_lock<std::mutex> lk(mu);
      if (!jobs.empty()) {
        c = std::move(jobs.front());
        jobs.pop_front();
      } else {
        if (workers_exit) return;
        idle_workers.push_back(&w);
        w.cv.wait(lk, [&] { return w.job || workers_exit; });
        if (!w.job) {  // stopping, and nothing was handed over
          idle_workers.erase(std::find(idle_workers.begin(), idle_workers.end(), &w));
          return;
        }
        c = std::move(w.job);  // dispatch took this worker off idle_workers
      }
    }
    if (hard_stop.load()) {
      close_busy(*c);
      continue;
    }
    serve(c);
  }
}

// ---- lifecycle --------------------------------------------------------------------------------

HttpListener::HttpListener(ListenerOptions opts, ListenerCallbacks cb)
    : impl_(std::make_unique<Impl>(std::move(opts), std::move(cb))) {}

HttpListener::~HttpListener() { stop(); }

int HttpListener::bind(const std::string& host_in, int port) {
  std::string host = host_in;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const std::string where = host_in + ":" + service;
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw Error(ErrorKind::kIo, "cannot resolve " + where + ": " + gai_strerror(rc));
  int fd = -1;
  std::string why;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, kListenBacklog) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) throw Error(ErrorKind::kIo, "cannot bind " + where + " (" + why + "; in use or not a local address?)");
  sockaddr_storage ss{};
  socklen_t n = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &n);
  impl_->port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  impl_->listen_fd = fd;
  impl_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return impl_->port;
}

void HttpListener::start() {
  Impl& m = *impl_;
  for (int i = 0; i < std::max(1, m.opts.workers); ++i) m.worker_slots.push_back(std::make_unique<Impl::Worker>());
  for (auto& w : m.worker_slots) m.workers.emplace_back([&m, w = w.get()] { m.worker_loop(*w); });
  m.reactor = std::thread([&m] { m.reactor_loop(); });
}

void HttpListener::stop() {
  Impl& m = *impl_;
  if (m.stopped) return;
  m.stopped = true;
  m.stopping = true;
  if (m.wake_fd >= 0) m.wake();
  if (m.reactor.joinable()) m.reactor.join();
  if (m.listen_fd >= 0) ::close(m.listen_fd);
  m.listen_fd = -1;
  {
    // In-flight responses get the grace period; then their sockets are shut so no client can hold
    // a worker (a stalled reader, a handler polling client_gone) past it.
    std::unique_lock<std::mutex> lk(m.mu);
    m.idle_cv.wait_for(lk, milliseconds(m.opts.stop_grace_ms), [&] { return m.busy.empty(); });
    m.hard_stop = true;
    for (Conn* c : m.busy)
      if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);
    m.workers_exit = true;
    for (auto& w : m.worker_slots) w->cv.notify_all();
  }
  for (auto& t : m.workers)
    if (t.joinable()) t.join();
  for (auto& c : m.returned)
    if (c->fd >= 0) ::close(c->fd);
  m.returned.clear();
  if (m.wake_fd >= 0) ::close(m.wake_fd);
  m.wake_fd = -1;
}

int HttpListener::port() const { return impl_->port; }

int HttpListener::open_connections() const { return impl_->open.load(); }

}  // namespace anelm::server
