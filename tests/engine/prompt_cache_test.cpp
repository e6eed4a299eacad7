// Prompt cache across requests: the PromptCache store itself (rows, LRU, budget) against a KV
// pattern computed independently, and Engine::generate with the cache on stories260K against
// fresh engines without one (alternating clients, cancelled and failed requests).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "engine/engine.h"
#include "engine/error.h"
#include "engine/prompt_cache.h"
#include "tests/engine/failing_constraint.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

// ---- PromptCache alone: a tiny f32 layout whose every K/V element names its position -----------

ModelConfig tiny_config() {
  ModelConfig c;
  c.n_layers = 2;
  c.n_kv_heads = 2;
  c.head_dim = 4;
  return c;
}

// The value a test writes at (layer, head, pos, i) of K (V: negated), tagged by sequence `seq`.
float pattern(int seq, int layer, int head, int pos, int i) {
  return static_cast<float>(seq * 100000 + layer * 10000 + head * 1000 + pos * 10 + i);
}

void fill(KvCache& kv, const ModelConfig& c, int seq, int n) {
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_kv_heads; ++h)
      for (int p = 0; p < n; ++p)
        for (int i = 0; i < c.head_dim; ++i) {
          static_cast<float*>(kv.k(l, h))[p * c.head_dim + i] = pattern(seq, l, h, p, i);
          static_cast<float*>(kv.v(l, h))[p * c.head_dim + i] = -pattern(seq, l, h, p, i);
        }
}

// Positions [from, to) of `kv` hold sequence `seq`'s pattern.
bool holds(const KvCache& kv, const ModelConfig& c, int seq, int from, int to) {
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_kv_heads; ++h)
      for (int p = from; p < to; ++p)
        for (int i = 0; i < c.head_dim; ++i) {
          if (static_cast<const float*>(kv.k(l, h))[p * c.head_dim + i] != pattern(seq, l, h, p, i)) return false;
          if (static_cast<const float*>(kv.v(l, h))[p * c.head_dim + i] != -pattern(seq, l, h, p, i)) return false;
        }
  return true;
}

std::vector<int> ids(int first, int n) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(PromptCacheStore, EntryBytesAreTheRowsOfEveryLayerAndHeadPlusTheIds) {
  const ModelConfig c = tiny_config();
  KvCache kv(c, 64, DType::kF32);
  PromptCache pc(kv, c.n_layers, c.n_kv_heads, 1 << 20);
  // 2 layers x 2 heads x 10 rows x 16 bytes, for K and V, + 10 ids of 4 bytes.
  EXPECT_EQ(pc.entry_bytes(10), 2 * 2 * 2 * 10 * 16 + 40);
}

TEST(PromptCacheStore, RestoresTheStoredRowsForTheLongestPrefix) {
  const ModelConfig c = tiny_config();
  KvCache kv(c, 64, DType::kF32);
  PromptCache pc(kv, c.n_layers, c.n_kv_heads, 1 << 20);
  const std::vector<int> a = ids(0, 20);
  std::vector<int> b = ids(0, 12);  // shares 12 ids with a, then differs
  b.insert(b.end(), {900, 901, 902, 903});
  fill(kv, c, 1, 20);
  ASSERT_TRUE(pc.store(a, kv));
  fill(kv, c, 2, 16);
  ASSERT_TRUE(pc.store(b, kv));
  EXPECT_EQ(pc.stats().entries, 2);

  std::vector<int> prompt = ids(0, 18);
  prompt.push_back(7);
  const PromptCache::Hit hit = pc.lookup(prompt);
  EXPECT_EQ(hit.tokens, 18);  // a, not b
  KvCache dst(c, 64, DType::kF32);
  fill(dst, c, 3, 40);
  pc.restore(hit, 5, 18, dst);
  EXPECT_TRUE(holds(dst, c, 3, 0, 5));    // below `from`: untouched
  EXPECT_TRUE(holds(dst, c, 1, 5, 18));   // copied from a's snapshot
  EXPECT_TRUE(holds(dst, c, 3, 18, 40));  // past `to`: untouched
  EXPECT_EQ(pc.stats().hits, 1);
  EXPECT_EQ(pc.lookup(std::vector<int>{5, 6}).tokens, 0);  // shares no first token
}

TEST(PromptCacheStore, EvictsLeastRecentlyUsedAndNeverExceedsTheBudget) {
  const ModelConfig c = tiny_config();
  KvCache kv(c, 64, DType::kF32);
  const int64_t one = PromptCache(kv, c.n_layers, c.n_kv_heads, 1).entry_bytes(16);
  PromptCache pc(kv, c.n_layers, c.n_kv_heads, 3 * one + one / 2);  // room for 3 entries of 16
  std::vector<std::vector<int>> seqs;
  for (int s = 0; s < 5; ++s) seqs.push_back(ids(1000 * (s + 1), 16));  // no shared prefixes
  for (int s = 0; s < 3; ++s) {
    fill(kv, c, s, 16);
    ASSERT_TRUE(pc.store(seqs[static_cast<size_t>(s)], kv));
  }
  EXPECT_EQ(pc.stats().entries, 3);
  EXPECT_EQ(pc.stats().bytes, 3 * one);
  // Use seq 0: seq 1 is now the least recently used and goes first.
  ASSERT_EQ(pc.lookup(seqs[0]).tokens, 16);
  fill(kv, c, 3, 16);
  ASSERT_TRUE(pc.store(seqs[3], kv));
  EXPECT_EQ(pc.stats().entries, 3);
  EXPECT_EQ(pc.stats().evictions, 1);
  EXPECT_LE(pc.stats().bytes, pc.stats().budget_bytes);
  EXPECT_EQ(pc.lookup(seqs[1]).tokens, 0);
  for (int s : {0, 2, 3}) EXPECT_EQ(pc.lookup(seqs[static_cast<size_t>(s)]).tokens, 16) << s;
  // A longer entry (2 x 16) evicts the two least recently used: after the lookups above, 0 and 2.
  std::vector<int> big = ids(50000, 32);
  fill(kv, c, 4, 32);
  ASSERT_TRUE(pc.store(big, kv));
  EXPECT_EQ(pc.stats().entries, 2);
  EXPECT_EQ(pc.stats().bytes, one + pc.entry_bytes(32));
  EXPECT_LE(pc.stats().bytes, pc.stats().budget_bytes);
  EXPECT_EQ(pc.lookup(seqs[3]).tokens, 16);
  const PromptCache::Hit hit = pc.lookup(big);
  EXPECT_EQ(hit.tokens, 32);
  KvCache dst(c, 64, DType::kF32);
  pc.restore(hit, 0, 32, dst);
  EXPECT_TRUE(holds(dst, c, 4, 0, 32));
  // An entry larger than the whole budget is not stored and evicts nothing.
  const PromptCache::Stats before = pc.stats();
  fill(kv, c, 5, 64);
  EXPECT_FALSE(pc.store(ids(70000, 64), kv));
  EXPECT_EQ(pc.stats().entries, before.entries);
  EXPECT_EQ(pc.stats().bytes, before.bytes);
  EXPECT_EQ(pc.stats().evictions, before.evictions);
}

TEST(PromptCacheStore, PrefixEntriesAreSupersededAndDuplicatesNotStored) {
  const ModelConfig c = tiny_config();
  KvCache kv(c, 64, DType::kF32);
  PromptCache pc(kv, c.n_layers, c.n_kv_heads, 1 << 20);
  fill(kv, c, 1, 30);
  ASSERT_TRUE(pc.store(ids(0, 20), kv));
  ASSERT_TRUE(pc.store(ids(0, 30), kv));  // extends the first: replaces it
  EXPECT_EQ(pc.stats().entries, 1);
  EXPECT_EQ(pc.stats().bytes, pc.entry_bytes(30));
  EXPECT_FALSE(pc.store(ids(0, 25), kv));  // already held inside the longer entry
  EXPECT_EQ(pc.stats().entries, 1);
}

TEST(PromptCacheStore, ZeroBudgetDisables) {
  const ModelConfig c = tiny_config();
  KvCache kv(c, 64, DType::kF32);
  PromptCache pc(kv, c.n_layers, c.n_kv_heads, 0);
  EXPECT_FALSE(pc.enabled());
  EXPECT_FALSE(pc.store(ids(0, 20), kv));
  EXPECT_EQ(pc.stats().entries, 0);
}

// ---- Engine::generate with the prompt cache on stories260K ------------------------------------

std::unique_ptr<Engine> load(int64_t cache_bytes) {
  auto path = anelm::testing::shared_model("stories260K.gguf");
  if (!path) return nullptr;
  EngineOptions o;
  o.model_path = path->string();
  o.threads = 2;
  o.ctx = 512;
  o.prompt_cache_bytes = cache_bytes;
  return Engine::load(o);
}

GenerateRequest greedy(std::vector<int> prompt, int max_tokens) {
  GenerateRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  return r;
}

// The reference: a fresh engine without a prompt cache, one request.
std::vector<int> fresh_ids(const std::vector<int>& prompt, int max_tokens) {
  return load(0)->generate(greedy(prompt, max_tokens), {}).ids;
}

// A shared "system prompt" of 40 ids and two different user turns.
std::vector<int> with_prefix(std::vector<int> tail) {
  std::vector<int> p = {1};
  for (int i = 0; i < 39; ++i) p.push_back(260 + (i * 7) % 200);
  p.insert(p.end(), tail.begin(), tail.end());
  return p;
}
constexpr int kPrefix = 40;

TEST(PromptCacheEngine, AlternatingClientsEachHitTheCache) {
  if (!anelm::testing::shared_model("stories260K.gguf")) GTEST_SKIP() << "shared test data not found";
  const std::vector<int> a = with_prefix({403, 407, 261, 378, 300, 301});
  const std::vector<int> b = with_prefix({290, 291, 292, 293});
  const std::vector<int> ref_a = fresh_ids(a, 20), ref_b = fresh_ids(b, 20);

  auto eng = load(8 << 20);
  std::vector<GenerateResult> r;
  for (const auto* p : {&a, &b, &a, &b}) r.push_back(eng->generate(greedy(*p, 20), {}));
  EXPECT_EQ(r[0].cached_tokens, 0);
  EXPECT_EQ(r[1].cached_tokens, kPrefix);  // the shared prefix, from the active sequence
  // The 3rd and 4th take their whole prompt but the last token from the prompt cache.
  EXPECT_EQ(r[2].cached_tokens, static_cast<int>(a.size()) - 1);
  EXPECT_EQ(r[3].cached_tokens, static_cast<int>(b.size()) - 1);
  for (int i : {0, 2}) EXPECT_EQ(r[static_cast<size_t>(i)].ids, ref_a) << "request " << i;
  for (int i : {1, 3}) EXPECT_EQ(r[static_cast<size_t>(i)].ids, ref_b) << "request " << i;
  const BackendStats s = eng->stats();
  EXPECT_EQ(s.prompt_cache_hits, 2);
  EXPECT_EQ(s.prompt_cache_entries, 2);
  EXPECT_GT(s.prompt_cache_bytes, 0);
  EXPECT_LE(s.prompt_cache_bytes, s.prompt_cache_budget_bytes);

  // A follow-up turn of client A (its prompt + answer + more) reuses all of it.
  std::vector<int> a2 = a;
  a2.insert(a2.end(), ref_a.begin(), ref_a.end());
  a2.insert(a2.end(), {310, 311, 312});
  eng->generate(greedy(b, 5), {});  // B is active again
  const GenerateResult turn2 = eng->generate(greedy(a2, 10), {});
  EXPECT_EQ(turn2.cached_tokens, static_cast<int>(a.size() + ref_a.size()) - 1);
  EXPECT_EQ(turn2.ids, fresh_ids(a2, 10));

  // Without the cache the same sequence reuses only the prefix shared with the active sequence.
  auto off = load(0);
  std::vector<GenerateResult> o;
  for (const auto* p : {&a, &b, &a, &b}) o.push_back(off->generate(greedy(*p, 20), {}));
  EXPECT_EQ(o[2].cached_tokens, kPrefix);
  EXPECT_EQ(o[3].cached_tokens, kPrefix);
  EXPECT_EQ(off->stats().prompt_cache_entries, 0);
}

// max_tokens 0 computes the prompt and samples nothing: the next request with that prefix (a
// completion after llama.vim's warm-up) starts from it, from the slot or from the prompt cache.
TEST(PromptCacheEngine, ZeroTokenRequestWarmsTheCache) {
  if (!anelm::testing::shared_model("stories260K.gguf")) GTEST_SKIP() << "shared test data not found";
  const std::vector<int> a = with_prefix({403, 407, 261, 378, 300, 301});
  const std::vector<int> b = with_prefix({290, 291, 292, 293});
  std::vector<int> a_more = a;
  a_more.insert(a_more.end(), {310, 311, 312});
  auto eng = load(8 << 20);
  int calls = 0;
  const GenerateResult warm = eng->generate(greedy(a, 0), [&](const TokenStep&) { return ++calls > 0; });
  EXPECT_EQ(calls, 0) << "nothing sampled";
  EXPECT_TRUE(warm.ids.empty());
  EXPECT_EQ(warm.finish, FinishReason::kLength);
  EXPECT_EQ(warm.prompt_tokens, static_cast<int>(a.size()));
  const GenerateResult next = eng->generate(greedy(a_more, 8), {});
  EXPECT_EQ(next.cached_tokens, static_cast<int>(a.size())) << "the whole warmed prompt reused";
  EXPECT_EQ(next.ids, fresh_ids(a_more, 8));

  eng->generate(greedy(b, 0), {});  // B's warm-up takes the slot; A's rows go to the prompt cache
  const GenerateResult again = eng->generate(greedy(a, 8), {});
  EXPECT_EQ(again.cached_tokens, static_cast<int>(a.size()) - 1);
  EXPECT_EQ(again.ids, fresh_ids(a, 8));
  EXPECT_GE(eng->stats().prompt_cache_hits, 1);
}

TEST(PromptCacheEngine, CancelledRequestStoresOnlyCompletedRows) {
  if (!anelm::testing::shared_model("stories260K.gguf")) GTEST_SKIP() << "shared test data not found";
  const std::vector<int> a = with_prefix({403, 407, 261, 378});
  const std::vector<int> b = with_prefix({290, 291, 292, 293});
  auto eng = load(8 << 20);
  // Cancelled before prefill: nothing of a is computed.
  std::atomic<bool> cancel{true};
  GenerateRequest r = greedy(a, 20);
  r.cancel = &cancel;
  EXPECT_EQ(eng->generate(r, {}).finish, FinishReason::kCancelled);
  eng->generate(greedy(b, 5), {});
  GenerateResult again = eng->generate(greedy(a, 20), {});
  EXPECT_EQ(again.cached_tokens, kPrefix);  // only what b computed; no entry for a
  EXPECT_EQ(again.ids, fresh_ids(a, 20));
  // Cancelled after 5 generated tokens: the entry holds the prompt and the 4 tokens forwarded.
  cancel = false;
  int n = 0;
  const GenerateResult mid = eng->generate(r, [&](const TokenStep&) {
    if (++n == 5) cancel = true;
    return true;
  });
  ASSERT_EQ(mid.finish, FinishReason::kCancelled);
  ASSERT_EQ(mid.ids.size(), 5u);
  eng->generate(greedy(b, 5), {});
  std::vector<int> cont = a;
  cont.insert(cont.end(), mid.ids.begin(), mid.ids.end());
  const GenerateResult c = eng->generate(greedy(cont, 10), {});
  EXPECT_EQ(c.cached_tokens, static_cast<int>(a.size()) + 4);
  EXPECT_EQ(c.ids, fresh_ids(cont, 10));
}

using anelm::testing::FailingConstraint;

TEST(PromptCacheEngine, FailedRequestNeverStoresACorruptEntry) {
  if (!anelm::testing::shared_model("stories260K.gguf")) GTEST_SKIP() << "shared test data not found";
  const std::vector<int> a = with_prefix({403, 407, 261, 378});
  const std::vector<int> b = with_prefix({290, 291, 292, 293});
  auto eng = load(8 << 20);
  GenerateRequest r = greedy(a, 20);
  auto fail = std::make_shared<FailingConstraint>();
  fail->ok = 6;
  r.constraint = fail;
  std::vector<int> got;
  EXPECT_THROW(eng->generate(r, [&](const TokenStep& s) {
    got.push_back(s.id);
    return true;
  }), Error);
  ASSERT_EQ(got.size(), 6u);
  eng->generate(greedy(b, 5), {});  // snapshots the failed sequence's completed rows
  std::vector<int> cont = a;
  cont.insert(cont.end(), got.begin(), got.end());
  const GenerateResult c = eng->generate(greedy(cont, 10), {});
  EXPECT_EQ(c.cached_tokens, static_cast<int>(cont.size()) - 1);
  EXPECT_EQ(c.ids, fresh_ids(cont, 10));
}

TEST(PromptCacheEngine, NegativeBudgetIsRejected) {
  auto path = anelm::testing::shared_model("stories260K.gguf");
  if (!path) GTEST_SKIP() << "shared test data not found";
  EngineOptions o;
  o.model_path = path->string();
  o.prompt_cache_bytes = -1;
  EXPECT_THROW(Engine::load(o), Error);
}

}  // namespace
}  // namespace anelm::engine
