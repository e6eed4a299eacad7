// anelm's own HTTP/1.1 server: one poll()-based reactor thread accepts connections and reads every
// request head and body (with limits and deadlines), and a fixed pool of worker threads runs only
// complete requests and writes their responses. Slow or hostile clients therefore cost a socket
// and a buffer, never a worker, and the server keeps answering.
//
// Thread-safety: bind()/start()/stop() from one thread; callbacks run on the reactor (check_head,
// refuse) and on the workers (handle, done).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http_types.h"
#include "server/http_wire.h"

namespace anelm::server {

struct ListenerOptions {
  WireLimits wire;                   // head size, header count, body size
  int workers = 64;                  // threads that run complete requests
  int max_connections = 256;         // open sockets; beyond it the oldest idle/slow one is closed
  int header_timeout_ms = 10000;     // a request head must arrive within this of its first byte
  int read_timeout_ms = 30000;       // the whole request (head and body) within this
  int write_timeout_ms = 60000;      // a response write that makes no progress this long fails
  int keep_alive_ms = 5000;          // idle time allowed between requests on one connection
  int max_requests_per_connection = 1000;
  int stop_grace_ms = 1000;          // stop(): in-flight responses get this long, then their sockets are shut
};

struct ListenerCallbacks {
  // From the head alone, before any body byte is read or buffered: nullopt to go on, or the
  // refusal to send (the connection is then closed). May fill req.id.
  std::function<std::optional<HttpResponse>(HttpRequest& req)> check_head;
  // Answers a complete request. Must not throw.
  std::function<HttpResponse(HttpRequest& req)> handle;
  // A response for a refusal made by the HTTP layer itself (400, 408, 413, 415, 431, 501, 503).
  std::function<HttpResponse(int status, const std::string& message)> refuse;
  // After a response was written or abandoned (status as sent); t0 is when the request began.
  std::function<void(HttpRequest& req, int status, std::chrono::steady_clock::time_point t0)> done;
};

class HttpListener {
 public:
  HttpListener(ListenerOptions opts, ListenerCallbacks cb);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Resolves `host` and binds its first address (port 0: any free port); returns the port.
  // Throws anelm::Error(kIo) when it cannot.
  int bind(const std::string& host, int port);
  void start();
  // Stops accepting, closes idle and half-read connections at once, gives in-flight responses
  // stop_grace_ms, then shuts their sockets and joins every thread. Idempotent.
  void stop();
  int port() const;
  int open_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace anelm::server
