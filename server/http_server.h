// The HTTP front end: owns the HttpListener (our HTTP/1.1 server) behind a pimpl, the route table,
// the head-time policy checks and the error boundary.
#pragma once

#include <memory>

#include "server/server_context.h"

namespace anelm::server {

class HttpServer {
 public:
  explicit HttpServer(ServerContext& ctx);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds ctx.options().host:port (port 0: any free port); returns the bound port.
  // Throws anelm::Error(kIo) when the address cannot be bound.
  int bind();
  // Serves on a background thread (after bind()).
  void start();
  // Stops accepting and joins the HTTP threads: in-flight responses get about a second, then their
  // sockets are shut. Idempotent.
  void stop();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace anelm::server
