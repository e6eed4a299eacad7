// Embedder: packs queued inputs into batched forward passes (no LM head) and pools their final
// hidden states; request validation and L2 normalisation.
#include "engine/embedding.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "engine/error.h"
#include "engine/transformer.h"

namespace anelm::engine {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorKind::kInvalidArgument, msg); }

}  // namespace

void validate_embed_request(const EmbedRequest& req, const ModelConfig& cfg, int ctx) {
  if (req.pooling == Pooling::kNone) invalid("embeddings need a pooling type (mean, cls or last), got none");
  if (req.pooling == Pooling::kRank && cfg.pooling != Pooling::kRank) {
    invalid("rank pooling needs a reranker's classifier head (pooling_type rank in the model file)");
  }
  if (req.inputs.empty()) invalid("input: no inputs");
  if (req.inputs.size() > static_cast<size_t>(EmbedLimits::kMaxInputs)) {
    invalid("input: " + std::to_string(req.inputs.size()) + " inputs exceed the limit of " +
            std::to_string(EmbedLimits::kMaxInputs));
  }
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    const std::vector<int>& in = req.inputs[i];
    const std::string name = "input[" + std::to_string(i) + "]";
    if (in.empty()) invalid(name + " is empty");
    if (static_cast<int64_t>(in.size()) > ctx) {
      throw Error(ErrorKind::kContextLength, name + " has " + std::to_string(in.size()) +
                                                 " tokens, more than the context of " + std::to_string(ctx));
    }
    for (size_t t = 0; t < in.size(); ++t) {
      if (in[t] < 0 || in[t] >= cfg.vocab_size) {
        invalid(name + "[" + std::to_string(t) + "]: token id " + std::to_string(in[t]) + " is out of range [0, " +
                std::to_string(cfg.vocab_size) + ")");
      }
    }
  }
}

void l2_normalize(std::span<float> v) {
  double sum = 0;
  for (float x : v) sum += static_cast<double>(x) * x;
  if (sum <= 0) return;
  const auto inv = static_cast<float>(1.0 / std::sqrt(sum));
  for (float& x : v) x *= inv;
}

struct Embedder::Job {
  EmbedRequest req;
  EmbedDoneCallback on_done;
  EmbedResult res;
  size_t started = 0;   // inputs handed to lanes, in order
  size_t finished = 0;  // inputs pooled
  Clock::time_point t0;

  bool cancelled() const { return req.cancel && req.cancel->load(std::memory_order_relaxed); }
  bool complete() const { return finished == req.inputs.size(); }
};

Embedder::Embedder(Transformer& tf, int ctx, int max_batch, DType kv_type, int n_threads, bool pack)
    : tf_(tf), cfg_(tf.config()), pack_(pack),
      kv_((check_kv_fits(tf.config(), ctx, kv_type, 1), KvCache(tf.config(), ctx, kv_type))),
      acts_(tf.config(), max_batch, ctx, n_threads) {
  // Every lane holds at least one cache position, so there are at most ctx of them.
  lanes_.reserve(static_cast<size_t>(ctx));
  tokens_.reserve(static_cast<size_t>(max_batch));
  rows_.reserve(static_cast<size_t>(max_batch));
  row_lane_.reserve(static_cast<size_t>(max_batch));
  abort_ = [this] {
    return std::all_of(row_lane_.begin(), row_lane_.end(),
                       [this](int li) { return lanes_[static_cast<size_t>(li)].job->cancelled(); });
  };
}

Embedder::~Embedder() = default;

void Embedder::start(EmbedRequest req, EmbedDoneCallback on_done) {
  validate_embed_request(req, cfg_, kv_.ctx());
  auto job = std::make_unique<Job>();
  job->t0 = Clock::now();
  job->res.dims = req.pooling == Pooling::kRank ? cfg_.n_cls_out : cfg_.d_model;
  job->res.vectors.assign(req.inputs.size() * static_cast<size_t>(job->res.dims), 0.0f);
  for (const auto& in : req.inputs) job->res.prompt_tokens += static_cast<int>(in.size());
  job->req = std::move(req);
  job->on_done = std::move(on_done);
  jobs_.push_back(std::move(job));
}

// Rows of the next pass: the lanes in progress continue (oldest first), then new inputs of the
// queued requests in order, while rows are left and the scratch cache has room for the whole input
// (it waits otherwise: the lanes ahead end within a few passes and the cache starts over). An
// encoder's input (bidirectional attention) waits for a pass with room for all of it (the engine
// sizes a pass to the context).
void Embedder::plan() {
  tokens_.clear();
  rows_.clear();
  row_lane_.clear();
  if (lanes_.empty()) kv_top_ = 0;
  int room = acts_.max_batch;
  auto add = [&](size_t li) {
    const Lane& l = lanes_[li];
    const int take = std::min(room, l.len - l.done);
    const std::vector<int>& ids = l.job->req.inputs[static_cast<size_t>(l.input)];
    rows_.push_back(SeqRows{static_cast<int>(tokens_.size()), take, l.done, &kv_, l.base});
    row_lane_.push_back(static_cast<int>(li));
    tokens_.insert(tokens_.end(), ids.begin() + l.done, ids.begin() + l.done + take);
    room -= take;
  };
  for (size_t li = 0; li < lanes_.size() && room > 0; ++li) add(li);
  for (const auto& jp : jobs_) {
    Job& j = *jp;
    while (room > 0 && j.started < j.req.inputs.size()) {
      const int len = static_cast<int>(j.req.inputs[j.started].size());
      if (kv_top_ + len > kv_.ctx() || (!pack_ && !lanes_.empty())) return;
      if (!cfg_.causal && len > room) return;  // an encoder's input runs whole in one pass
      lanes_.push_back(Lane{&j, static_cast<int>(j.started), len, 0, kv_top_});
      kv_top_ += len;
      ++j.started;
      add(lanes_.size() - 1);
    }
    if (room == 0) return;
  }
}

// Pools one segment of a lane from the final residual rows (output norm first, as llama.cpp pools
// its t_embd): the mean accumulates every row and divides at the input's end.
void Embedder::pool(const Lane& lane, const SeqRows& rows) {
  const int d = cfg_.d_model;
  const float* x = acts_.x.data() + static_cast<int64_t>(rows.row) * d;
  float* out = lane.job->res.vectors.data() + static_cast<int64_t>(lane.input) * lane.job->res.dims;
  const bool last = lane.done + rows.n == lane.len;
  switch (lane.job->req.pooling) {
    case Pooling::kLast:
      if (last) tf_.output_norm(x + static_cast<int64_t>(rows.n - 1) * d, 1, out);
      break;
    case Pooling::kCls:
      if (lane.done == 0) tf_.output_norm(x, 1, out);
      break;
    case Pooling::kMean: {
      float* normed = acts_.xb.data();  // free once the layers ran
      tf_.output_norm(x, rows.n, normed);
      for (int t = 0; t < rows.n; ++t) {
        const float* r = normed + static_cast<int64_t>(t) * d;
        for (int i = 0; i < d; ++i) out[i] += r[i];
      }
      if (last) {
        const float inv = 1.0f / static_cast<float>(lane.len);
        for (int i = 0; i < d; ++i) out[i] *= inv;
      }
      break;
    }
    case Pooling::kRank:  // a reranker's label probabilities: [n_cls_out] per input
      if (last) tf_.classify(acts_, x + static_cast<int64_t>(rows.n - 1) * d, out);
      break;
    case Pooling::kNone: break;  // refused by validate_embed_request
  }
}

// Ends the complete requests, and the cancelled ones with their lanes.
void Embedder::finish_jobs() {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Job& j = **it;
    if (!j.complete() && !j.cancelled()) {
      ++it;
      continue;
    }
    std::erase_if(lanes_, [&](const Lane& l) { return l.job == &j; });
    std::unique_ptr<Job> done = std::move(*it);
    it = jobs_.erase(it);
    if (!done->on_done) continue;
    if (done->complete()) {
      done->res.ms = std::chrono::duration<double, std::milli>(Clock::now() - done->t0).count();
      done->on_done(std::move(done->res), nullptr);
    } else {
      const Error cancelled(ErrorKind::kCancelled, "the embedding request was cancelled");
      done->on_done(EmbedResult{}, &cancelled);
    }
  }
}

bool Embedder::step() {
  finish_jobs();  // cancelled while queued or between passes
  plan();
  if (tokens_.empty()) return pending();
  bool complete = false;
  try {
    complete = tf_.step(BatchStep{tokens_, rows_, {}, nullptr}, acts_, abort_);
  } catch (const std::exception& e) {  // the pass failed: the requests in it end, the others go on
    const auto* err = dynamic_cast<const Error*>(&e);
    const Error internal(ErrorKind::kInternal, e.what());
    std::vector<Job*> failed;
    for (int li : row_lane_) failed.push_back(lanes_[static_cast<size_t>(li)].job);
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (std::find(failed.begin(), failed.end(), it->get()) == failed.end()) {
        ++it;
        continue;
      }
      Job* j = it->get();
      std::erase_if(lanes_, [&](const Lane& l) { return l.job == j; });
      std::unique_ptr<Job> done = std::move(*it);
      it = jobs_.erase(it);
      if (done->on_done) done->on_done(EmbedResult{}, err ? err : &internal);
    }
    return pending();
  }
  if (!complete) return pending();  // every request of the pass was cancelled: finish_jobs ends them
  for (size_t i = 0; i < rows_.size(); ++i) {
    Lane& l = lanes_[static_cast<size_t>(row_lane_[i])];
    pool(l, rows_[i]);
    l.done += rows_[i].n;
    if (l.done == l.len) ++l.job->finished;
  }
  std::erase_if(lanes_, [](const Lane& l) { return l.done == l.len; });
  finish_jobs();
  return pending();
}

EmbedResult Embedder::embed(EmbedRequest req) {
  EmbedResult out;
  std::optional<Error> err;
  bool done = false;
  start(std::move(req), [&](EmbedResult&& r, const Error* e) {
    out = std::move(r);
    if (e) err = *e;
    done = true;
  });
  while (!done) step();
  if (err) throw *err;
  return out;
}

}  // namespace anelm::engine
