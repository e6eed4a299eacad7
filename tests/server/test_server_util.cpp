// In-process loopback server for the HTTP tests, and an SSE body splitter.
#include "test_server.h"

namespace anelm::testing {

server::ServerOptions test_options() {
  server::ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.model = "/models/fake-model.gguf";
  o.max_queue = 32;
  o.http_threads = 48;
  o.shutdown_grace_ms = 0;
  o.sse_ping_s = 1;
  return o;
}

TestServer::TestServer(FakeScript script, server::ServerOptions opts, bool ready)
    : engine_(std::move(script)), ctx_(std::move(opts)), http_(ctx_) {
  port_ = http_.bind();
  http_.start();
  if (ready) make_ready();
}

TestServer::~TestServer() {
  ctx_.drain(std::chrono::milliseconds(0));
  http_.stop();
}

void TestServer::make_ready() {
  server::ModelRuntime rt;
  rt.engine = &engine_;
  rt.tokenizer = &tokenizer_;
  rt.model_id = "fake-model";
  ctx_.set_ready(std::move(rt));
}

httplib::Client TestServer::client() const {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(20, 0);
  c.set_connection_timeout(5, 0);
  return c;
}

httplib::Result TestServer::post(const std::string& path, const nlohmann::json& body) const {
  return client().Post(path.c_str(), body.dump(), "application/json");
}

std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    std::string event = body.substr(pos, end - pos);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    pos = end + 2;
  }
  return out;
}

std::vector<SseEvent> sse_events(const std::string& body) {
  std::vector<SseEvent> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string frame = body.substr(pos, end - pos);
    pos = end + 2;
    SseEvent ev;
    for (size_t start = 0; start < frame.size();) {
      size_t nl = frame.find('\n', start);
      if (nl == std::string::npos) nl = frame.size();
      const std::string line = frame.substr(start, nl - start);
      if (line.rfind("event: ", 0) == 0) ev.name = line.substr(7);
      if (line.rfind("data: ", 0) == 0) ev.data = nlohmann::ordered_json::parse(line.substr(6));
      start = nl + 1;
    }
    if (!ev.data.is_null()) out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace anelm::testing
