// Server lifecycle state and the model runtime shared by all handlers.
#include "server/server_context.h"

#include "server/fim_prompt.h"

#include <spdlog/spdlog.h>

namespace anelm::server {

const char* server_state_name(ServerState s) {
  switch (s) {
    case ServerState::kLoading: return "loading";
    case ServerState::kReady: return "ready";
    case ServerState::kDraining: return "draining";
    case ServerState::kFailed: return "error";
  }
  return "unknown";
}

ServerContext::ServerContext(ServerOptions opts) : opts_(std::move(opts)) {}

ServerContext::~ServerContext() {
  if (worker_) worker_->shutdown(std::chrono::milliseconds(0));
}

double ServerContext::uptime_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ServerContext::set_ready(ModelRuntime rt) {
  rt_ = std::move(rt);
  if (!rt_.chat) rt_.chat = ChatPrompt::for_model(rt_.tokenizer->vocab(), opts_.chat_template);
  spdlog::info("chat template source={} tool_syntax={} reasoning={}", rt_.chat->origin(),
               chat::to_string(rt_.chat->format().tools), chat::to_string(rt_.chat->format().reasoning));
  rt_.preserved_tokens = preserved_token_ids(*rt_.tokenizer, rt_.chat->format());
  for (int id : rt_.preserved_tokens)
    spdlog::info("control token {} '{}' is a chat marker: kept as text in outputs", id, rt_.tokenizer->token_bytes(id));
  if (!rt_.constraint_vocab) rt_.constraint_vocab = ConstraintVocab::build(*rt_.tokenizer, rt_.preserved_tokens);
  if (!rt_.infill_vocab) rt_.infill_vocab = build_infill_vocab(*rt_.tokenizer);
  n_ctx_ = rt_.engine->ctx();
  stats_ = rt_.engine->stats();
  worker_ = std::make_unique<EngineWorker>(*rt_.engine, opts_.max_queue, &metrics_);
  set_progress("ready", 1.0);
  state_.store(ServerState::kReady, std::memory_order_release);
}

void ServerContext::set_failed(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = message;
  }
  state_.store(ServerState::kFailed, std::memory_order_release);
}

void ServerContext::drain(std::chrono::milliseconds grace) {
  ServerState expected = ServerState::kReady;
  state_.compare_exchange_strong(expected, ServerState::kDraining, std::memory_order_acq_rel);
  if (worker_) worker_->shutdown(grace);
}

void ServerContext::set_progress(const std::string& stage, double fraction) {
  std::lock_guard<std::mutex> lock(mu_);
  stage_ = stage;
  fraction_ = fraction;
}

std::string ServerContext::progress_stage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stage_;
}

double ServerContext::progress_fraction() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fraction_;
}

std::string ServerContext::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

}  // namespace anelm::server
