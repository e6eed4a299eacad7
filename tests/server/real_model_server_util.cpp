// RealModelServer: load, bind, start, ready; drain and stop on destruction.
#include "real_model_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>

#include "test_server.h"
#include "tests/support/shared_data.h"

namespace anelm::testing {

std::string make_model_with_qwen25_tokenizer(const std::filesystem::path& dir, const std::string& name,
                                             const std::string& args) {
  const auto tok = shared_model("qwen2.5-0.5b-instruct");
  if (!tok) return {};
  const std::filesystem::path out = dir / name;
  const std::string cmd = anelm_binary().string() + " make-model " + args + " --tokenizer-from " + tok->string() +
                          " --out " + out.string() + " >/dev/null";
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << "failed: " << cmd;
    return {};
  }
  return out.string();
}

namespace {

server::ServerOptions options_for(const engine::EngineOptions& e, int max_queue,
                                  const std::function<void(server::ServerOptions&)>& tweak) {
  server::ServerOptions o = test_options();
  o.model = e.model_path;
  o.max_queue = max_queue;
  if (tweak) tweak(o);
  return o;
}

}  // namespace

RealModelServer::RealModelServer(const engine::EngineOptions& e, const std::string& model_id, int max_queue,
                                 const std::function<void(server::ServerOptions&)>& tweak)
    : opts_(options_for(e, max_queue, tweak)), bundle_(server::load_model_bundle(e, {}, opts_.reranking)) {
  ctx_ = std::make_unique<server::ServerContext>(opts_);
  http_ = std::make_unique<server::HttpServer>(*ctx_);
  port_ = http_->bind();
  http_->start();
  server::ModelRuntime rt;
  rt.engine = bundle_.engine.get();
  rt.tokenizer = bundle_.tokenizer.get();
  rt.model_id = model_id;
  ctx_->set_ready(std::move(rt));
}

RealModelServer::~RealModelServer() {
  ctx_->drain(std::chrono::milliseconds(0));
  http_->stop();
}

nlohmann::json RealModelServer::health() const {
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Get("/health");
  return r ? nlohmann::json::parse(r->body) : nlohmann::json();
}

}  // namespace anelm::testing
