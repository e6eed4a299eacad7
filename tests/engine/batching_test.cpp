// Continuous batching on stories260K: every sequence of a batch (decodes sharing passes with other
// decodes and with chunked prefills of later arrivals) gives the ids it gives alone, in a fresh
// engine that runs one sequence; cancelled, aborted and failed sequences never disturb the others;
// a seeded stress of random arrivals, cancels and stop ids holds the same invariants.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "engine/engine.h"
#include "engine/error.h"
#include "tests/engine/failing_constraint.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

std::unique_ptr<Engine> load(int parallel, int max_batch, Backend backend = Backend::kCpu) {
  auto path = anelm::testing::shared_model("stories260K.gguf");
  if (!path) return nullptr;
  EngineOptions o;
  o.model_path = path->string();
  o.backend = backend;
  o.threads = 2;
  o.ctx = 256;
  o.parallel = parallel;
  o.max_batch = max_batch;
  return Engine::load(o);
}

// A prompt of n ids that differs per `seed` (BOS first).
std::vector<int> prompt(int seed, int n) {
  std::vector<int> p = {1};
  for (int i = 1; i < n; ++i) p.push_back(260 + (seed * 37 + i * 11) % 240);
  return p;
}

GenerateRequest request(std::vector<int> ids, int max_tokens, float temperature = 0.0f, uint64_t seed = 0) {
  GenerateRequest r;
  r.prompt = std::move(ids);
  r.max_tokens = max_tokens;
  r.sampling.temperature = temperature;
  r.sampling.top_k = 40;
  r.sampling.seed = seed;
  return r;
}

// The reference: one fresh single-sequence engine per request.
GenerateResult alone(const GenerateRequest& r) { return load(1, 512)->generate(r, {}); }

// What the batch reports for one sequence.
struct Outcome {
  std::vector<int> streamed;
  std::optional<GenerateResult> result;
  std::string error;
  int done_calls = 0;
};

// Starts `r` and records its tokens and its end into `out`; on_token returns `keep(n)` after n tokens.
bool start(Engine& e, GenerateRequest r, Outcome& out, std::function<bool(int)> keep = {}) {
  return e.start(
      std::move(r),
      [&out, keep](const TokenStep& s) {
        out.streamed.push_back(s.id);
        return !keep || keep(static_cast<int>(out.streamed.size()));
      },
      [&out](const GenerateResult& res, const Error* err) {
        out.result = res;
        if (err) out.error = err->what();
        ++out.done_calls;
      });
}

TEST(Batching, EverySequenceMatchesItsRunAlone) {
  if (!load(1, 512)) GTEST_SKIP() << "shared test data not found";
  // max_batch 24: the later prompts (30-45 ids) prefill in chunks between the running decodes.
  auto eng = load(4, 24);
  ASSERT_EQ(eng->parallel(), 4);
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 7; ++i) reqs.push_back(request(prompt(i, 8 + 6 * i), 12 + 3 * i));
  reqs[5].sampling.temperature = 0.8f;  // seeded sampling is per sequence too
  reqs[5].sampling.seed = 42;
  std::vector<Outcome> out(reqs.size());
  // Arrivals: four at once, then one every third step while a slot is free.
  size_t next = 0;
  for (; next < 4; ++next) ASSERT_TRUE(start(*eng, reqs[next], out[next]));
  for (int step = 1; eng->step() || next < reqs.size(); ++step) {
    if (next < reqs.size() && step % 3 == 0 && start(*eng, reqs[next], out[next])) ++next;
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    const GenerateResult ref = alone(reqs[i]);
    ASSERT_EQ(out[i].done_calls, 1) << "request " << i;
    ASSERT_TRUE(out[i].result) << "request " << i;
    EXPECT_EQ(out[i].result->ids, ref.ids) << "request " << i;
    EXPECT_EQ(out[i].streamed, ref.ids) << "request " << i;
    EXPECT_EQ(out[i].result->finish, ref.finish) << "request " << i;
    EXPECT_EQ(out[i].result->prompt_tokens, static_cast<int>(reqs[i].prompt.size()));
  }
  EXPECT_EQ(eng->stats().kv_bytes, 4 * load(1, 512)->stats().kv_bytes);  // one ctx of KV per slot
  EXPECT_FALSE(eng->step());  // nothing left running
}

TEST(Batching, SlotsAreBoundedAndFreedForTheNextRequest) {
  if (!load(1, 512)) GTEST_SKIP() << "shared test data not found";
  auto eng = load(2, 64);
  std::vector<Outcome> out(3);
  ASSERT_TRUE(start(*eng, request(prompt(1, 10), 5), out[0]));
  ASSERT_TRUE(start(*eng, request(prompt(2, 10), 5), out[1]));
  EXPECT_FALSE(start(*eng, request(prompt(3, 10), 5), out[2]));  // both slots run
  while (eng->step()) {
  }
  ASSERT_TRUE(start(*eng, request(prompt(3, 10), 5), out[2]));
  while (eng->step()) {
  }
  for (const Outcome& o : out) EXPECT_EQ(o.done_calls, 1);
  EXPECT_EQ(out[2].result->ids, alone(request(prompt(3, 10), 5)).ids);
  // A slot that held a prompt's prefix is chosen for it again: the prefix is reused for free.
  Outcome again;
  std::vector<int> longer = prompt(3, 10);
  longer.insert(longer.end(), out[2].result->ids.begin(), out[2].result->ids.end());
  ASSERT_TRUE(start(*eng, request(longer, 4), again));
  while (eng->step()) {
  }
  EXPECT_EQ(again.result->cached_tokens, static_cast<int>(longer.size()) - 1);
  EXPECT_EQ(again.result->ids, alone(request(longer, 4)).ids);
}

using anelm::testing::FailingConstraint;

TEST(Batching, CancelledAbortedAndFailedSequencesNeverDisturbTheOthers) {
  if (!load(1, 512)) GTEST_SKIP() << "shared test data not found";
  auto eng = load(4, 32);
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back(request(prompt(10 + i, 12 + 4 * i), 20));
  std::atomic<bool> cancel{false};
  reqs[1].cancel = &cancel;
  auto failing = std::make_shared<FailingConstraint>();
  failing->ok = 4;
  reqs[2].constraint = failing;
  std::vector<Outcome> out(4);
  ASSERT_TRUE(start(*eng, reqs[0], out[0]));
  ASSERT_TRUE(start(*eng, reqs[1], out[1], [&](int n) {
    if (n == 3) cancel = true;  // raised by "another thread" after 3 tokens
    return true;
  }));
  ASSERT_TRUE(start(*eng, reqs[2], out[2]));
  ASSERT_TRUE(start(*eng, reqs[3], out[3], [](int n) { return n < 6; }));  // a stop string after 6
  while (eng->step()) {
  }
  const GenerateResult ref0 = alone(reqs[0]);
  EXPECT_EQ(out[0].result->ids, ref0.ids);
  EXPECT_EQ(out[0].result->finish, FinishReason::kLength);

  EXPECT_EQ(out[1].result->finish, FinishReason::kCancelled);
  EXPECT_EQ(out[1].result->ids.size(), 3u);
  GenerateRequest plain1 = reqs[1];
  plain1.cancel = nullptr;
  const GenerateResult ref1 = alone(plain1);
  EXPECT_EQ(out[1].result->ids, std::vector<int>(ref1.ids.begin(), ref1.ids.begin() + 3));

  EXPECT_FALSE(out[2].error.empty());
  EXPECT_NE(out[2].error.find("constraint"), std::string::npos) << out[2].error;
  EXPECT_EQ(out[2].streamed.size(), 4u);

  EXPECT_EQ(out[3].result->finish, FinishReason::kAborted);
  const GenerateResult ref3 = alone(reqs[3]);
  EXPECT_EQ(out[3].result->ids, std::vector<int>(ref3.ids.begin(), ref3.ids.begin() + 6));
  for (const Outcome& o : out) EXPECT_EQ(o.done_calls, 1);

  // The engine is whole afterwards: the next batch still matches.
  Outcome after;
  ASSERT_TRUE(start(*eng, reqs[0], after));
  while (eng->step()) {
  }
  EXPECT_EQ(after.result->ids, ref0.ids);
}

TEST(Batching, CancelDuringPrefillEndsOnlyThatSequence) {
  if (!load(1, 512)) GTEST_SKIP() << "shared test data not found";
  auto eng = load(2, 8);  // a 60-id prompt takes several passes
  std::atomic<bool> cancel{false};
  GenerateRequest longp = request(prompt(20, 60), 10);
  longp.cancel = &cancel;
  const GenerateRequest other = request(prompt(21, 9), 10);
  std::vector<Outcome> out(2);
  ASSERT_TRUE(start(*eng, other, out[0]));
  ASSERT_TRUE(start(*eng, longp, out[1]));
  eng->step();
  eng->step();
  cancel = true;
  while (eng->step()) {
  }
  EXPECT_EQ(out[1].result->finish, FinishReason::kCancelled);
  EXPECT_TRUE(out[1].result->ids.empty());
  EXPECT_EQ(out[0].result->ids, alone(other).ids);
}

// Seeded random arrivals, cancels (before and after the first token), stop ids, sampled and greedy
// requests: every sequence ends exactly once, and whatever it generated is its run alone (a prefix
// of it where it was cut short).
TEST(Batching, RandomArrivalsCancelsAndStopsStress) {
  if (!load(1, 512)) GTEST_SKIP() << "shared test data not found";
  auto eng = load(4, 16);
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  constexpr int kRequests = 16;
  std::vector<GenerateRequest> reqs;
  std::vector<int> cancel_after(kRequests);
  std::vector<std::unique_ptr<std::atomic<bool>>> flags;
  for (int i = 0; i < kRequests; ++i) {
    GenerateRequest r = request(prompt(100 + i, pick(2, 40)), pick(1, 24), pick(0, 2) == 0 ? 0.9f : 0.0f,
                                static_cast<uint64_t>(i));
    if (pick(0, 3) == 0) r.extra_stop_ids = {pick(260, 500)};
    flags.push_back(std::make_unique<std::atomic<bool>>(false));
    cancel_after[static_cast<size_t>(i)] = pick(0, 5) == 0 ? pick(0, 6) : -1;
    reqs.push_back(r);
  }
  std::vector<Outcome> out(kRequests);
  int next = 0;
  for (int guard = 0; guard < 10000; ++guard) {
    if (next < kRequests && pick(0, 2) == 0) {
      GenerateRequest r = reqs[static_cast<size_t>(next)];
      r.cancel = flags[static_cast<size_t>(next)].get();
      const int after = cancel_after[static_cast<size_t>(next)];
      std::atomic<bool>* flag = flags[static_cast<size_t>(next)].get();
      if (after == 0) *flag = true;  // cancelled before it ever runs
      if (start(*eng, r, out[static_cast<size_t>(next)], [flag, after](int n) {
            if (n == after) *flag = true;
            return true;
          }))
        ++next;
    }
    const bool running = eng->step();
    if (!running && next == kRequests) break;
  }
  ASSERT_EQ(next, kRequests);
  for (int i = 0; i < kRequests; ++i) {
    const Outcome& o = out[static_cast<size_t>(i)];
    ASSERT_EQ(o.done_calls, 1) << "request " << i;
    ASSERT_TRUE(o.result) << "request " << i;
    const GenerateResult ref = alone(reqs[static_cast<size_t>(i)]);
    const auto& ids = o.result->ids;
    EXPECT_EQ(ids, o.streamed) << "request " << i;
    ASSERT_LE(ids.size(), ref.ids.size()) << "request " << i;
    EXPECT_EQ(ids, std::vector<int>(ref.ids.begin(), ref.ids.begin() + static_cast<long>(ids.size())))
        << "request " << i;
    if (o.result->finish != FinishReason::kCancelled) {
      EXPECT_EQ(o.result->finish, ref.finish) << "request " << i;
      EXPECT_EQ(ids.size(), ref.ids.size()) << "request " << i;
    }
  }
}

// The ANE executor takes batches of several sequences too (its programs are per token; attention
// runs per sequence on the CPU): each sequence equals its run alone on the same backend.
TEST(Batching, AneBackendBatchesMatchTheirRunAlone) {
  if (!load(1, 512)) GTEST_SKIP() << "shared test data not found";
  auto eng = load(3, 16, Backend::kAne);
  ASSERT_NE(eng->stats().backend.find("ane"), std::string::npos) << eng->stats().backend;
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 3; ++i) reqs.push_back(request(prompt(40 + i, 6 + 9 * i), 10));
  std::vector<Outcome> out(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) ASSERT_TRUE(start(*eng, reqs[i], out[i]));
  while (eng->step()) {
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(out[i].result->ids, load(1, 16, Backend::kAne)->generate(reqs[i], {}).ids) << "request " << i;
  }
}

TEST(Batching, ParallelMustFitTheBatch) {
  auto path = anelm::testing::shared_model("stories260K.gguf");
  if (!path) GTEST_SKIP() << "shared test data not found";
  EngineOptions o;
  o.model_path = path->string();
  o.ctx = 64;
  o.parallel = 0;
  EXPECT_THROW(Engine::load(o), Error);
  // Every slot's KV is allocated at start: slots that together exceed the machine's RAM are refused
  // before the first is allocated, naming --parallel and --ctx (each slot alone would fit).
  o.ctx = 1 << 24;  // 10.7 GB of KV per slot for stories260K; 256 slots: 2.7 TB
  o.parallel = 256;
  try {
    Engine::load(o);
    ADD_FAILURE() << "256 slots of 2^24 positions loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kResourceExhausted);
    EXPECT_NE(std::string(e.what()).find("for --parallel 256 x --ctx 16777216"), std::string::npos) << e.what();
  }
  o.ctx = 64;
  o.parallel = 9;
  o.max_batch = 8;
  try {
    Engine::load(o);
    ADD_FAILURE() << "parallel 9 with max_batch 8 loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parallel"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace anelm::engine
