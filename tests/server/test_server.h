// An in-process anelm server on an ephemeral loopback port, backed by the fake engine.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "fake_engine.h"
#include "server/http_server.h"
#include "server/server_context.h"

namespace anelm::testing {

server::ServerOptions test_options();

class TestServer {
 public:
  explicit TestServer(FakeScript script = {}, server::ServerOptions opts = test_options(),
                      bool ready = true);
  ~TestServer();

  void make_ready();  // loading -> ready
  httplib::Client client() const;
  int port() const { return port_; }
  FakeEngine& engine() { return engine_; }
  server::ServerContext& context() { return ctx_; }

  // POST a JSON body; returns the response (status 0 when the request failed).
  httplib::Result post(const std::string& path, const nlohmann::json& body) const;

 private:
  FakeEngine engine_;
  FakeTokenizer tokenizer_;
  server::ServerContext ctx_;
  server::HttpServer http_;
  int port_ = 0;
};

// Parses an SSE body into its data payloads ("[DONE]" included as a string).
std::vector<std::string> sse_payloads(const std::string& body);

// Named SSE events ("event: NAME\ndata: JSON\n\n", the Responses and Anthropic streams); comment
// frames (": ping") are skipped as SSE clients do.
struct SseEvent {
  std::string name;
  nlohmann::ordered_json data;
};
std::vector<SseEvent> sse_events(const std::string& body);

}  // namespace anelm::testing
