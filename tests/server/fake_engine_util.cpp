// Scripted fake engine and byte tokenizer used by the server tests.
#include "fake_engine.h"

#include <cmath>
#include <random>
#include <thread>

#include "engine/error.h"

namespace anelm::testing {

namespace {
const char* const kSpecials[] = {"<s>", "</s>", "<|im_start|>", "<|im_end|>"};
}

FakeTokenizer::FakeTokenizer(bool chatml) {
  for (int i = 0; i < 256; ++i) vocab_.tokens.push_back(std::string(1, static_cast<char>(i)));
  for (int i = 0; i < 4; ++i) {
    vocab_.tokens.push_back(kSpecials[i]);
    vocab_.added.push_back({256 + i, kSpecials[i], true});
  }
  vocab_.bos_id = kBos;
  vocab_.eos_id = kEos;
  vocab_.eog_ids = {kEos, kImEnd};
  vocab_.add_bos = false;
  if (chatml)
    vocab_.chat_template =
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
}

std::vector<int> FakeTokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<int> ids;
  for (size_t i = 0; i < text.size();) {
    bool matched = false;
    if (parse_special) {
      for (int s = 0; s < 4 && !matched; ++s) {
        std::string_view sp = kSpecials[s];
        if (text.substr(i, sp.size()) == sp) {
          ids.push_back(256 + s);
          i += sp.size();
          matched = true;
        }
      }
    }
    if (!matched) ids.push_back(static_cast<unsigned char>(text[i++]));
  }
  return ids;
}

std::string FakeTokenizer::decode(const std::vector<int>& ids, bool skip_special) const {
  std::string out;
  for (int id : ids)
    if (!(skip_special && is_special(id))) out += token_bytes(id);
  return out;
}

std::string FakeTokenizer::token_bytes(int id) const {
  if (id < 0 || id >= kVocab) return {};
  return vocab_.tokens[id];
}

FakeEngine::FakeEngine(FakeScript script) : script_(std::move(script)) {
  config_.name = "fake";
  config_.vocab_size = FakeTokenizer::kVocab;
  config_.max_ctx = script_.ctx;
  config_.eos_ids = {FakeTokenizer::kEos};
}

engine::BackendStats FakeEngine::stats() const {
  engine::BackendStats s;
  s.backend = "fake";
  s.isa = "scalar";
  return s;
}

namespace {

// One token among those the constraint allows (all when there is none), weighted towards ending.
int sample_constrained(const engine::GenerateRequest& req, std::mt19937_64& rng) {
  std::vector<float> logits(FakeTokenizer::kVocab, -INFINITY);
  for (int c = 0x20; c < 0x7f; ++c) logits[c] = 0.0f;
  for (int c : {'"', '}', ']'}) logits[c] = 2.5f;
  for (int c = '0'; c <= '9'; ++c) logits[c] = 0.7f;
  logits[','] = 0.7f;
  logits['\n'] = -2.0f;
  logits[' '] = -1.0f;
  for (int c = 0x80; c < 0x100; ++c) logits[c] = -3.0f;  // UTF-8 bytes, rarely
  logits[FakeTokenizer::kEos] = 4.0f;
  if (req.constraint) req.constraint->mask(logits);
  std::vector<double> w(logits.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::isfinite(logits[i]) ? std::exp(logits[i]) : 0.0;
  double total = 0;
  for (double x : w) total += x;
  if (total <= 0) return FakeTokenizer::kEos;
  return static_cast<int>(std::discrete_distribution<int>(w.begin(), w.end())(rng));
}

}  // namespace

engine::GenerateResult FakeEngine::generate(const engine::GenerateRequest& req,
                                            const engine::TokenCallback& on_token) {
  int now = ++running;
  for (int m = max_running.load(); now > m && !max_running.compare_exchange_weak(m, now);) {}
  started++;
  {
    std::lock_guard<std::mutex> lk(prompt_mu_);
    last_prompt_ = req.prompt;
  }
  struct Guard { std::atomic<int>& r; ~Guard() { r--; } } guard{running};
  if (script_.throw_on_generate) throw Error(ErrorKind::kInternal, "fake engine failure");
  engine::validate_request(req, config_, script_.ctx);
  const int max_tokens = req.max_tokens.value_or(script_.ctx - static_cast<int>(req.prompt.size()));

  engine::GenerateResult res;
  res.prompt_tokens = static_cast<int>(req.prompt.size());
  auto is_cancelled = [&] { return req.cancel && req.cancel->load(); };
  for (int ms = 0; ms < script_.prefill_ms; ++ms) {
    if (is_cancelled()) { res.finish = engine::FinishReason::kCancelled; cancelled++; return res; }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<int> reply;
  for (unsigned char c : script_.reply) reply.push_back(c);
  if (reply.empty())
    for (int id : req.prompt) if (id < 256) reply.push_back(id);
  if (reply.empty()) reply.push_back('x');
  res.finish = engine::FinishReason::kLength;
  std::mt19937_64 rng(req.sampling.seed);
  for (size_t i = 0; static_cast<int>(res.ids.size()) < max_tokens; ++i) {
    if (is_cancelled()) { res.finish = engine::FinishReason::kCancelled; cancelled++; return res; }
    if (i == reply.size() && !script_.endless && !script_.sample_under_constraint) {
      res.finish = engine::FinishReason::kStop;
      break;
    }
    if (script_.token_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(script_.token_ms));
    engine::TokenStep step;
    step.id = reply[i % reply.size()];
    if (script_.sample_under_constraint) {
      step.id = i < script_.reply.size() ? step.id : sample_constrained(req, rng);
      if (step.id == FakeTokenizer::kEos) { res.finish = engine::FinishReason::kStop; break; }
      if (req.constraint) req.constraint->accept(step.id);
    }
    step.logprob = -0.5f;
    for (int k = 0; k < req.top_logprobs; ++k) step.top.emplace_back((step.id + k) % 256, -0.5f - k);
    res.ids.push_back(step.id);
    if (!on_token(step)) { res.finish = engine::FinishReason::kAborted; cancelled++; return res; }
  }
  res.decode_ms = 1.0;
  res.prefill_ms = 1.0;
  return res;
}

bool FakeEngine::start(engine::GenerateRequest req, engine::TokenCallback on_token, engine::DoneCallback on_done) {
  if (pending_) return false;
  pending_ = Pending{std::move(req), std::move(on_token), std::move(on_done)};
  return true;
}

bool FakeEngine::step() {
  if (!pending_) return false;
  Pending p = std::move(*pending_);
  pending_.reset();
  try {
    const engine::GenerateResult r = generate(p.req, p.on_token);
    p.on_done(r, nullptr);
  } catch (const Error& e) {
    p.on_done({}, &e);
  }
  return false;
}

}  // namespace anelm::testing
