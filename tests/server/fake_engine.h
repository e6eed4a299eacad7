// Test doubles for the server: a scripted engine and a byte-level tokenizer; no weights needed.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace anelm::testing {

// Byte tokenizer: ids 0..255 are bytes; then <s> (BOS), </s> (EOS), <|im_start|>, <|im_end|> (EOG).
class FakeTokenizer : public tok::Tokenizer {
 public:
  static constexpr int kBos = 256, kEos = 257, kImStart = 258, kImEnd = 259, kVocab = 260;
  explicit FakeTokenizer(bool chatml = true);

  std::vector<int> encode(std::string_view text, bool parse_special) const override;
  std::string decode(const std::vector<int>& ids, bool skip_special = false) const override;
  std::string token_bytes(int id) const override;
  const tok::VocabData& vocab() const override { return vocab_; }
  int vocab_size() const override { return kVocab; }
  bool is_eog(int id) const override { return id == kEos || id == kImEnd; }
  bool is_special(int id) const override { return id >= 256; }

 private:
  tok::VocabData vocab_;
};

// How the fake engine answers.
struct FakeScript {
  // The reply: `reply` when non-empty, else the prompt's byte tokens in order (an echo); then EOS.
  std::string reply;
  bool endless = false;          // never send EOS: repeat the reply until max_tokens or cancel
  int prefill_ms = 0;            // simulated prefill time (the cancel flag is checked every ms)
  int token_ms = 0;              // simulated time per generated token
  int ctx = 256;                 // context size
  bool throw_on_generate = false;  // generate() throws anelm::Error(kInternal)
  // A grammar-following "model": after `reply` (a forced prefix, fed to the constraint too), tokens
  // are drawn at random (seeded by the request's seed) among those req.constraint allows, favouring
  // the end and JSON's closing bytes so that replies finish; EOS ends the reply when allowed.
  bool sample_under_constraint = false;
};

class FakeEngine : public engine::Engine {
 public:
  explicit FakeEngine(FakeScript script = {});

  const engine::ModelConfig& config() const override { return config_; }
  int ctx() const override { return script_.ctx; }
  engine::BackendStats stats() const override;
  engine::GenerateResult generate(const engine::GenerateRequest& req,
                                  const engine::TokenCallback& on_token) override;
  std::span<const float> forward(std::span<const int>, int, bool) override { return {}; }
  // One sequence at a time: start() holds the request, step() runs generate() to its end.
  int parallel() const override { return 1; }
  bool start(engine::GenerateRequest req, engine::TokenCallback on_token, engine::DoneCallback on_done) override;
  bool step() override;

  FakeScript& script() { return script_; }
  std::atomic<int> started{0};     // generate() calls
  std::atomic<int> cancelled{0};   // calls that ended with kCancelled
  std::atomic<int> running{0};     // generate() calls in progress (must never exceed 1)
  std::atomic<int> max_running{0};
  // The prompt of the last generate() call (tests read it once the response is in).
  std::vector<int> last_prompt() const {
    std::lock_guard<std::mutex> lk(prompt_mu_);
    return last_prompt_;
  }

 private:
  mutable std::mutex prompt_mu_;
  std::vector<int> last_prompt_;
  FakeScript script_;
  engine::ModelConfig config_;
  struct Pending {
    engine::GenerateRequest req;
    engine::TokenCallback on_token;
    engine::DoneCallback on_done;
  };
  std::optional<Pending> pending_;
};

}  // namespace anelm::testing
