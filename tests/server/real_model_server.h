// An in-process anelm server on an ephemeral loopback port backed by a real engine (a shared test
// model), for tests that need real generations over HTTP.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/http_server.h"
#include "server/model_bundle.h"
#include "server/server_context.h"

namespace anelm::testing {

// `anelm make-model ARGS --tokenizer-from <Qwen2.5's tokenizer> --out DIR/NAME` with this build's
// binary: the path, or "" (and a test failure) when it fails or ../shared lacks the tokenizer.
std::string make_model_with_qwen25_tokenizer(const std::filesystem::path& dir, const std::string& name,
                                             const std::string& args);

class RealModelServer {
 public:
  // Loads `e` (model_path set by the caller), serves it as model id `model_id` with `o` (test_options
  // with max_queue as given) and marks the server ready.
  // `tweak` (optional) adjusts the server options before the model loads (e.g. embeddings, reranking).
  RealModelServer(const engine::EngineOptions& e, const std::string& model_id, int max_queue = 16,
                  const std::function<void(server::ServerOptions&)>& tweak = {});
  ~RealModelServer();

  int port() const { return port_; }
  nlohmann::json health() const;

 private:
  server::ServerOptions opts_;  // before bundle_: its reranking flag decides how the model loads
  server::ModelBundle bundle_;
  std::unique_ptr<server::ServerContext> ctx_;
  std::unique_ptr<server::HttpServer> http_;
  int port_ = 0;
};

}  // namespace anelm::testing
