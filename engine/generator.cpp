// Continuous batching: slots, prefix reuse, step planning (decodes + prefill chunks), sampling,
// stop rules, cancellation and timings per sequence.
#include "engine/generator.h"

#include <algorithm>
#include <optional>
#include <string>

#include "engine/error.h"

namespace anelm::engine {

namespace {

double ms_between(std::chrono::steady_clock::time_point t0, std::chrono::steady_clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorKind::kInvalidArgument, msg); }

int common_prefix(std::span<const int> a, std::span<const int> b) {
  return static_cast<int>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

}  // namespace

// One slot: its cache and buffers (allocated once) and the request it runs, if any.
struct Generator::Sequence {
  Sequence(const ModelConfig& cfg, int ctx, DType kv_type, int max_batch) : kv(cfg, ctx, kv_type, max_batch) {
    cached.reserve(static_cast<size_t>(ctx));
    history.reserve(static_cast<size_t>(ctx));
    step.top.reserve(64);
    scratch.logits.reserve(static_cast<size_t>(cfg.vocab_size));
    scratch.cand.reserve(static_cast<size_t>(cfg.vocab_size));
    scratch.window.reserve(static_cast<size_t>(ctx));
    masked.reserve(static_cast<size_t>(cfg.vocab_size));
  }

  bool cancelled() const { return req.cancel && req.cancel->load(std::memory_order_relaxed); }
  bool prefilling() const { return prefilled < static_cast<int>(req.prompt.size()); }

  KvCache kv;
  std::vector<int> cached;   // ids whose K/V rows are complete, positions [0, size)
  std::vector<int> history;  // prompt + generated ids (penalty window)
  SampleScratch scratch;
  std::vector<float> masked;  // logits under a constraint's mask
  TokenStep step;
  uint64_t last_used = 0;

  // The running request (active), from start() to finish().
  bool active = false;
  GenerateRequest req;
  TokenCallback on_token;
  DoneCallback on_done;
  GenerateResult res;
  Rng rng;
  uint64_t started = 0;   // arrival order: prefill chunks go oldest first
  int prefilled = 0;      // prompt tokens whose K/V are complete
  int next = 0;           // decoding: the sampled id the next step forwards
  Clock::time_point t_start, t_decode;
};

// The slots, each with its KV cache (a pass writes at most max_batch tokens of one sequence, which
// sizes the windowed layers' rings).
std::vector<std::unique_ptr<Generator::Sequence>> Generator::make_slots(const ModelConfig& cfg, int ctx, int max_batch,
                                                                        DType kv_type, int n_seqs) {
  if (n_seqs < 1 || n_seqs > max_batch) {
    invalid("parallel sequences must be in [1, " + std::to_string(max_batch) + "] (the batch size), got " +
            std::to_string(n_seqs));
  }
  check_kv_fits(cfg, ctx, kv_type, n_seqs, max_batch);  // all slots, before the first is allocated
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < n_seqs; ++i) seqs.push_back(std::make_unique<Sequence>(cfg, ctx, kv_type, max_batch));
  return seqs;
}

Generator::Generator(Transformer& tf, int ctx, int max_batch, DType kv_type, int n_threads,
                     int64_t prompt_cache_bytes, int n_seqs)
    : tf_(tf), cfg_(tf.config()), ctx_(ctx), seqs_(make_slots(cfg_, ctx, max_batch, kv_type, n_seqs)),
      pcache_(seqs_.front()->kv, cfg_.n_layers, cfg_.n_kv_heads, prompt_cache_bytes),
      acts_(tf.config(), max_batch, ctx, n_threads) {
  const auto slots = static_cast<size_t>(n_seqs);
  tokens_.reserve(static_cast<size_t>(max_batch));
  rows_.reserve(slots);
  row_seq_.reserve(slots);
  logit_rows_.reserve(slots);
  logit_seq_.reserve(slots);
  logits_.assign(slots * static_cast<size_t>(cfg_.vocab_size), 0.0f);
  abort_ = [this] { return batch_cancelled(); };
}

Generator::~Generator() = default;

int Generator::active() const {
  return static_cast<int>(std::count_if(seqs_.begin(), seqs_.end(), [](const auto& s) { return s->active; }));
}

int64_t Generator::kv_bytes() const { return seqs_.front()->kv.bytes() * static_cast<int64_t>(seqs_.size()); }

int64_t Generator::recurrent_state_bytes() const {
  return seqs_.front()->kv.recurrent_bytes() * static_cast<int64_t>(seqs_.size());
}

std::span<const int> Generator::cached_tokens() const { return seqs_.front()->cached; }

bool Generator::is_stop(int id, const GenerateRequest& req) const {
  if (!req.ignore_eos && std::find(cfg_.eos_ids.begin(), cfg_.eos_ids.end(), id) != cfg_.eos_ids.end()) return true;
  return std::find(req.extra_stop_ids.begin(), req.extra_stop_ids.end(), id) != req.extra_stop_ids.end();
}

// The free slot holding the longest prefix of `prompt` (its rows are reused for free); among equals
// the least recently used, so a slot that holds another client's prefix is kept longest.
Generator::Sequence* Generator::choose_slot(std::span<const int> prompt) {
  Sequence* best = nullptr;
  int best_common = -1;
  for (const auto& s : seqs_) {
    if (s->active) continue;
    const int common = common_prefix(s->cached, prompt);
    if (common > best_common || (common == best_common && s->last_used < best->last_used)) {
      best = s.get();
      best_common = common;
    }
  }
  return best;
}

// Makes slot s hold the longest known prefix of `prompt` and returns its length; the last prompt
// token is always recomputed (its logits are needed to sample). Sources: the slot's own rows (free),
// or a prompt-cache entry, whose rows past the slot's common prefix are copied in. Before the slot's
// rows are overwritten, the sequence they hold is snapshotted into the prompt cache: `cached` lists
// exactly the positions a forward pass completed, so a cancelled or failed request leaves a shorter
// but never a wrong entry.
int Generator::reuse_prefix(Sequence& s, std::span<const int> prompt) {
  const int n_prompt = static_cast<int>(prompt.size());
  const int common = common_prefix(s.cached, prompt);
  if (cfg_.recurrent()) return reuse_checkpoint(s, prompt, common);
  int reuse = std::min(common, n_prompt - 1);
  // A windowed layer's ring may have moved past the window before `reuse`: then start over.
  if (!s.kv.can_resume(reuse, static_cast<int>(s.cached.size()))) reuse = 0;
  if (pcache_.enabled()) {
    if (common < static_cast<int>(s.cached.size()) && static_cast<int>(s.cached.size()) >= kMinCachedPrefix) {
      pcache_.store(s.cached, s.kv);
    }
    const PromptCache::Hit hit = pcache_.lookup(prompt);
    const int from_cache = std::min(hit.tokens, n_prompt - 1);
    if (from_cache > reuse && from_cache >= std::min(kMinCachedPrefix, n_prompt - 1) && pcache_.serves(hit, from_cache)) {
      pcache_.restore(hit, reuse, from_cache, s.kv);  // rows [0, reuse) are already the same prefix
      reuse = from_cache;
    }
  }
  s.cached.assign(prompt.begin(), prompt.begin() + reuse);  // reserved to ctx: no allocation
  return reuse;
}

// reuse_prefix for recurrent models: a state cannot be cut back, so the slot continues only from its
// very end, or resumes from the longest prompt-cache checkpoint the prompt starts with.
int Generator::reuse_checkpoint(Sequence& s, std::span<const int> prompt, int common) {
  const int n_prompt = static_cast<int>(prompt.size()), held = static_cast<int>(s.cached.size());
  const bool at_end = s.kv.recurrent_pos() == held;
  int reuse = common >= held && held <= n_prompt - 1 && at_end ? held : 0;
  if (pcache_.enabled()) {
    if (common < held && held >= kMinCachedPrefix && at_end) pcache_.store(s.cached, s.kv);
    const PromptCache::Hit hit = pcache_.lookup(prompt.first(static_cast<size_t>(n_prompt - 1)));
    if (hit.tokens > reuse) {
      pcache_.restore(hit, std::min(common, hit.tokens), hit.tokens, s.kv);
      reuse = hit.tokens;
    }
  }
  s.cached.assign(prompt.begin(), prompt.begin() + reuse);
  return reuse;
}

bool Generator::start(GenerateRequest req, TokenCallback on_token, DoneCallback on_done) {
  validate_request(req, cfg_, ctx_);
  // max_tokens 0 still computes the prompt (no logits, nothing sampled): a client warms the cache
  // with it (llama.vim sends its context chunks so), and the next request with that prefix reuses it.
  Sequence* s = choose_slot(req.prompt);
  if (!s) return false;
  s->active = true;
  s->last_used = s->started = ++clock_;
  s->t_start = Clock::now();
  s->req = std::move(req);
  s->on_token = std::move(on_token);
  s->on_done = std::move(on_done);
  s->res = GenerateResult{};
  s->res.prompt_tokens = static_cast<int>(s->req.prompt.size());
  s->res.ids.reserve(static_cast<size_t>(s->req.max_tokens.value_or(ctx_)));
  s->rng = Rng(s->req.sampling.seed);
  s->prefilled = s->res.cached_tokens = reuse_prefix(*s, s->req.prompt);
  return true;
}

void Generator::finish(Sequence& s, FinishReason why) {
  const Clock::time_point now = Clock::now();
  GenerateResult& r = s.res;
  r.finish = why;
  if (s.prefilling()) {
    r.prefill_ms = ms_between(s.t_start, now);
  } else {
    r.decode_ms = ms_between(s.t_decode, now);
    r.decode_tok_s = r.decode_ms > 0 ? static_cast<double>(r.ids.size()) / (r.decode_ms / 1e3) : 0.0;
  }
  s.active = false;
  const DoneCallback done = std::move(s.on_done);
  s.req = GenerateRequest{};  // drops the prompt, the constraint and the callbacks' captures
  s.on_token = nullptr;
  if (done) done(r, nullptr);
}

void Generator::fail(Sequence& s, const std::exception& e) {
  const auto* err = dynamic_cast<const Error*>(&e);
  const Error internal(ErrorKind::kInternal, e.what());
  s.active = false;
  const DoneCallback done = std::move(s.on_done);
  s.req = GenerateRequest{};
  s.on_token = nullptr;
  if (done) done(s.res, err ? err : &internal);
}

bool Generator::batch_cancelled() const {
  return std::all_of(row_seq_.begin(), row_seq_.end(), [](const Sequence* s) { return s->cancelled(); });
}

// Rows of the next pass: one per decoding sequence, then prompt chunks of the prefilling ones,
// oldest first, in the rows left of max_batch (a new request's first token waits for at most its
// own prompt's chunks, never for the other sequences to finish).
void Generator::plan_step() {
  tokens_.clear();
  rows_.clear();
  row_seq_.clear();
  logit_rows_.clear();
  logit_seq_.clear();
  auto add = [&](Sequence& s, std::span<const int> ids, bool samples) {
    const int row = static_cast<int>(tokens_.size());
    rows_.push_back(SeqRows{row, static_cast<int>(ids.size()), static_cast<int>(s.cached.size()), &s.kv});
    row_seq_.push_back(&s);
    tokens_.insert(tokens_.end(), ids.begin(), ids.end());
    if (samples) {
      logit_rows_.push_back(static_cast<int>(tokens_.size()) - 1);
      logit_seq_.push_back(&s);
    }
  };
  for (const auto& s : seqs_) {
    if (s->active && !s->prefilling()) add(*s, {&s->next, 1}, true);
  }
  for (;;) {
    Sequence* oldest = nullptr;
    for (const auto& s : seqs_) {
      const bool planned = std::find(row_seq_.begin(), row_seq_.end(), s.get()) != row_seq_.end();
      if (s->active && s->prefilling() && !planned && (!oldest || s->started < oldest->started)) oldest = s.get();
    }
    const int room = acts_.max_batch - static_cast<int>(tokens_.size());
    if (!oldest || room == 0) break;
    const std::span<const int> prompt(oldest->req.prompt);
    int take = std::min(room, static_cast<int>(prompt.size()) - oldest->prefilled);
    if (cfg_.recurrent() && pcache_.enabled()) {  // end the chunk at the next checkpoint
      take = std::min(take, kCheckpointEvery - oldest->prefilled % kCheckpointEvery);
    }
    const bool last = oldest->prefilled + take == static_cast<int>(prompt.size());
    add(*oldest, prompt.subspan(static_cast<size_t>(oldest->prefilled), static_cast<size_t>(take)),
        last && oldest->req.max_tokens != 0);
  }
}

bool Generator::step() {
  for (const auto& s : seqs_) {
    if (s->active && s->cancelled()) finish(*s, FinishReason::kCancelled);
  }
  plan_step();
  if (tokens_.empty()) return active() > 0;
  bool complete = false;
  try {
    complete = tf_.step(BatchStep{tokens_, rows_, logit_rows_, logits_.data()}, acts_, abort_);
  } catch (const std::exception& e) {  // the pass failed: the sequences in it end, the others go on
    for (Sequence* s : row_seq_) fail(*s, e);
    return active() > 0;
  }
  if (!complete) {  // every sequence of the pass was cancelled
    for (Sequence* s : row_seq_) finish(*s, FinishReason::kCancelled);
    return active() > 0;
  }
  const Clock::time_point now = Clock::now();
  for (size_t i = 0; i < rows_.size(); ++i) {
    Sequence& s = *row_seq_[i];
    const auto* ids = tokens_.data() + rows_[i].row;
    s.cached.insert(s.cached.end(), ids, ids + rows_[i].n);
    if (cfg_.recurrent() && s.cached.size() % kCheckpointEvery == 0) pcache_.store(s.cached, s.kv);
    if (!s.prefilling()) continue;
    s.prefilled += rows_[i].n;
    if (s.prefilling()) continue;
    GenerateResult& r = s.res;  // prefill done: its time includes the prompt cache's copies
    r.prefill_ms = ms_between(s.t_start, now);
    const int todo = r.prompt_tokens - r.cached_tokens;
    r.prefill_tok_s = r.prefill_ms > 0 ? static_cast<double>(todo) / (r.prefill_ms / 1e3) : 0.0;
    s.history.assign(s.req.prompt.begin(), s.req.prompt.end());
    s.t_decode = now;
    if (s.req.max_tokens == 0) finish(s, FinishReason::kLength);  // the prompt only: cached, nothing sampled
  }
  const auto vocab = static_cast<size_t>(cfg_.vocab_size);
  for (size_t i = 0; i < logit_seq_.size(); ++i) {
    Sequence& s = *logit_seq_[i];
    try {
      sample_next(s, std::span<const float>(logits_.data() + i * vocab, vocab));
    } catch (const std::exception& e) {  // a constraint or callback failure ends only its sequence
      fail(s, e);
    }
  }
  return active() > 0;
}

// Samples from the logits of s's last row: stop checks, callback, then either finishes s or leaves
// the id for the next pass to forward.
void Generator::sample_next(Sequence& s, std::span<const float> logits) {
  const GenerateRequest& req = s.req;
  if (s.cancelled()) return finish(s, FinishReason::kCancelled);
  int id = sample(logits, req.sampling, s.history, s.rng, s.scratch);
  if (req.constraint && !req.constraint->allows(id)) {
    // Refused: draw again with every refused token masked (reserved to the vocabulary: no allocation).
    s.masked.assign(logits.begin(), logits.end());
    if (req.constraint->mask(s.masked) == 0) {
      throw Error(ErrorKind::kInternal, "the output constraint allows no token (an unsatisfiable grammar?)");
    }
    id = sample(s.masked, req.sampling, s.history, s.rng, s.scratch);
  }
  if (is_stop(id, req)) return finish(s, FinishReason::kStop);
  s.step.id = id;
  const float lse = tf_.kernels().log_sum_exp(logits.data(), static_cast<int>(logits.size()));
  s.step.logprob = logits[static_cast<size_t>(id)] - lse;
  top_logprobs(logits, req.top_logprobs, lse, s.step.top);
  s.res.ids.push_back(id);
  s.history.push_back(id);
  if (req.constraint) req.constraint->accept(id);
  if (s.on_token && !s.on_token(s.step)) return finish(s, FinishReason::kAborted);
  if (req.max_tokens && static_cast<int>(s.res.ids.size()) == *req.max_tokens) return finish(s, FinishReason::kLength);
  if (static_cast<int>(s.cached.size()) >= ctx_) return finish(s, FinishReason::kContext);
  s.next = id;
}

GenerateResult Generator::generate(const GenerateRequest& req, const TokenCallback& on_token) {
  GenerateResult out;
  std::optional<Error> err;
  bool done = false;
  const bool started = start(req, on_token, [&](const GenerateResult& r, const Error* e) {
    out = r;
    if (e) err = *e;
    done = true;
  });
  if (!started) throw Error(ErrorKind::kResourceExhausted, "every sequence slot is busy");
  while (!done) step();
  if (err) throw *err;
  return out;
}

std::span<const float> Generator::forward(std::span<const int> tokens, int start_pos, bool all_logits) {
  Sequence& s = *seqs_.front();
  if (s.active) invalid("forward: slot 0 is running a request");
  if (tokens.empty()) invalid("forward: no tokens");
  if (start_pos < 0 || start_pos > static_cast<int>(s.cached.size())) {
    invalid("forward: start_pos " + std::to_string(start_pos) + " must be in [0, " +
            std::to_string(s.cached.size()) + "] (the cache holds " + std::to_string(s.cached.size()) + " tokens)");
  }
  if (start_pos + static_cast<int64_t>(tokens.size()) > ctx_) {
    invalid("forward: start_pos " + std::to_string(start_pos) + " + " + std::to_string(tokens.size()) +
            " tokens exceeds the context of " + std::to_string(ctx_));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= cfg_.vocab_size) {
      invalid("forward: token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
              " is out of range [0, " + std::to_string(cfg_.vocab_size) + ")");
    }
  }
  if (cfg_.recurrent() && start_pos != 0 && start_pos != s.kv.recurrent_pos()) {
    invalid("forward: start_pos " + std::to_string(start_pos) + " would cut back the recurrent state of " +
            std::to_string(s.kv.recurrent_pos()) + " tokens (" + arch_name(cfg_.arch) + "): use 0 or " +
            std::to_string(s.kv.recurrent_pos()));
  }
  if (!s.kv.can_resume(start_pos, static_cast<int>(s.cached.size()))) {
    invalid("forward: start_pos " + std::to_string(start_pos) + " is before the window that the sliding-window "
            "layers still hold after " + std::to_string(s.cached.size()) + " tokens: use 0 or a later position");
  }
  s.cached.resize(static_cast<size_t>(start_pos));
  float* out = nullptr;
  if (all_logits) {
    all_logits_.resize(tokens.size() * static_cast<size_t>(cfg_.vocab_size));
    out = all_logits_.data();
  }
  tf_.forward(tokens, start_pos, s.kv, acts_, out);
  s.cached.insert(s.cached.end(), tokens.begin(), tokens.end());
  if (all_logits) return all_logits_;
  return acts_.logits;
}

}  // namespace anelm::engine
