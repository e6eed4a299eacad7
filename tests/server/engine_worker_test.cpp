// EngineWorker with the fake engine: ordering, bounded queue, cancellation, shutdown, failures.
#include <gtest/gtest.h>

#include <thread>

#include "fake_engine.h"
#include "server/engine_worker.h"

namespace anelm::server {
namespace {

using testing::FakeEngine;
using testing::FakeScript;

Job make_job(std::vector<int> prompt, int max_tokens = 8) {
  Job j;
  j.request.prompt = std::move(prompt);
  j.request.max_tokens = max_tokens;
  j.channel = std::make_shared<EventChannel>();
  return j;
}

// Collects events until kDone/kError (or a 5 s timeout, which fails the test).
std::vector<GenerationEvent> drain(EventChannel& ch) {
  std::vector<GenerationEvent> all;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<GenerationEvent> evs;
    ch.wait_pop(evs, std::chrono::milliseconds(50));
    for (auto& e : evs) {
      all.push_back(e);
      if (e.kind != GenerationEvent::Kind::kToken) return all;
    }
  }
  ADD_FAILURE() << "no final event within 5 s";
  return all;
}

TEST(EngineWorker, RunsJobAndStreamsTokens) {
  FakeEngine eng;
  Metrics m;
  EngineWorker w(eng, 4, &m);
  Job j = make_job({'a', 'b', 'c'});
  auto ch = j.channel;
  ASSERT_EQ(w.try_submit(std::move(j)), EngineWorker::Admit::kAccepted);
  auto evs = drain(*ch);
  ASSERT_EQ(evs.size(), 4u);
  EXPECT_EQ(evs[0].step.id, 'a');
  EXPECT_EQ(evs[2].step.id, 'c');
  EXPECT_EQ(evs[3].kind, GenerationEvent::Kind::kDone);
  EXPECT_EQ(evs[3].result.finish, engine::FinishReason::kStop);
  EXPECT_EQ(m.completion_tokens_total.load(), 3);
  EXPECT_EQ(m.prompt_tokens_total.load(), 3);
}

TEST(EngineWorker, QueueFullIsRefusedImmediately) {
  FakeScript s;
  s.endless = true;
  s.token_ms = 5;
  FakeEngine eng(s);
  EngineWorker w(eng, 1, nullptr);
  Job a = make_job({'a'}, 200), b = make_job({'b'}, 200), c = make_job({'c'}, 200);
  auto ca = a.channel, cb = b.channel;
  ASSERT_EQ(w.try_submit(std::move(a)), EngineWorker::Admit::kAccepted);
  ASSERT_EQ(w.try_submit(std::move(b)), EngineWorker::Admit::kAccepted);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(w.try_submit(std::move(c)), EngineWorker::Admit::kQueueFull);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  ca->cancel();
  cb->cancel();
  EXPECT_EQ(drain(*ca).back().result.finish, engine::FinishReason::kCancelled);
  EXPECT_EQ(drain(*cb).back().result.finish, engine::FinishReason::kCancelled);
}

TEST(EngineWorker, CancelDuringPrefill) {
  FakeScript s;
  s.prefill_ms = 5000;
  FakeEngine eng(s);
  EngineWorker w(eng, 4, nullptr);
  Job j = make_job({'a'});
  auto ch = j.channel;
  w.try_submit(std::move(j));
  while (eng.started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto t0 = std::chrono::steady_clock::now();
  ch->cancel();
  auto evs = drain(*ch);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  EXPECT_EQ(evs.back().result.finish, engine::FinishReason::kCancelled);
  EXPECT_EQ(eng.cancelled.load(), 1);
}

TEST(EngineWorker, CancelledWhileQueuedNeverRuns) {
  FakeScript s;
  s.prefill_ms = 200;
  FakeEngine eng(s);
  EngineWorker w(eng, 4, nullptr);
  Job a = make_job({'a'}), b = make_job({'b'});
  auto ca = a.channel, cb = b.channel;
  w.try_submit(std::move(a));
  w.try_submit(std::move(b));
  cb->cancel();
  drain(*ca);
  EXPECT_EQ(drain(*cb).back().result.finish, engine::FinishReason::kCancelled);
  EXPECT_EQ(eng.started.load(), 1);
}

TEST(EngineWorker, EngineErrorBecomesErrorEventAndWorkerSurvives) {
  FakeScript s;
  s.throw_on_generate = true;
  FakeEngine eng(s);
  EngineWorker w(eng, 4, nullptr);
  Job a = make_job({'a'});
  auto ca = a.channel;
  w.try_submit(std::move(a));
  auto evs = drain(*ca);
  EXPECT_EQ(evs.back().kind, GenerationEvent::Kind::kError);
  EXPECT_EQ(evs.back().error_kind, ErrorKind::kInternal);
  eng.script().throw_on_generate = false;
  Job b = make_job({'b'});
  auto cb = b.channel;
  w.try_submit(std::move(b));
  EXPECT_EQ(drain(*cb).back().kind, GenerationEvent::Kind::kDone);
}

TEST(EngineWorker, OneJobAtATime) {
  FakeScript s;
  s.token_ms = 1;
  FakeEngine eng(s);
  EngineWorker w(eng, 64, nullptr);
  std::vector<std::shared_ptr<EventChannel>> chans;
  for (int i = 0; i < 20; ++i) {
    Job j = make_job({'a' + i % 26, 'b'});
    chans.push_back(j.channel);
    ASSERT_EQ(w.try_submit(std::move(j)), EngineWorker::Admit::kAccepted);
  }
  for (auto& c : chans) EXPECT_EQ(drain(*c).back().kind, GenerationEvent::Kind::kDone);
  EXPECT_EQ(eng.max_running.load(), 1);
}

TEST(EngineWorker, ShutdownFinishesWithinGraceThenCancels) {
  FakeScript s;
  s.endless = true;
  s.token_ms = 2;
  FakeEngine eng(s);
  auto w = std::make_unique<EngineWorker>(eng, 4, nullptr);
  Job a = make_job({'a'}, 200), b = make_job({'b'}, 200);
  auto ca = a.channel, cb = b.channel;
  w->try_submit(std::move(a));
  w->try_submit(std::move(b));
  auto t0 = std::chrono::steady_clock::now();
  w->shutdown(std::chrono::milliseconds(100));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(drain(*ca).back().result.finish, engine::FinishReason::kCancelled);
  EXPECT_EQ(drain(*cb).back().result.finish, engine::FinishReason::kCancelled);
  EXPECT_EQ(w->try_submit(make_job({'c'})), EngineWorker::Admit::kStopped);
}

}  // namespace
}  // namespace anelm::server
