// Sampler properties: greedy = argmax, determinism per seed, top-k/top-p/min-p filtering, penalties,
// and the empirical distribution against softmax; plus the logprob helpers and the Rng.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "engine/sampler.h"

namespace anelm::engine {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.5f, -1.0f, 3.0f, 0.5f, 2.9f, -4.0f};  // ids 1 and 4 tie

SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

std::vector<double> softmax(const std::vector<float>& l, float temp = 1.0f) {
  std::vector<double> p(l.size());
  double mx = *std::max_element(l.begin(), l.end()), sum = 0;
  for (size_t i = 0; i < l.size(); ++i) sum += p[i] = std::exp((l[i] - mx) / temp);
  for (auto& x : p) x /= sum;
  return p;
}

TEST(Rng, DeterministicAndUniform) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    if (i == 0) {
      EXPECT_NE(x, c.next());
    }
  }
  Rng r(7);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const float u = r.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
}

TEST(Sampler, GreedyIsArgmaxWithTiesToLowestId) {
  Rng rng(1);
  EXPECT_EQ(1, sample(kLogits, greedy(), {}, rng));
  EXPECT_EQ(1, argmax(kLogits));
  SamplingParams neg = greedy();
  neg.temperature = -1.0f;
  EXPECT_EQ(1, sample(kLogits, neg, {}, rng));
}

TEST(Sampler, SameSeedSameOutput) {
  SamplingParams p;
  p.temperature = 1.5f;
  std::vector<int> a, b;
  Rng r1(99), r2(99);
  for (int i = 0; i < 200; ++i) {
    a.push_back(sample(kLogits, p, {}, r1));
    b.push_back(sample(kLogits, p, {}, r2));
  }
  EXPECT_EQ(a, b);
  Rng r3(100);
  std::vector<int> c;
  for (int i = 0; i < 200; ++i) c.push_back(sample(kLogits, p, {}, r3));
  EXPECT_NE(a, c);
}

TEST(Sampler, TopK1AndTinyTopPAreGreedy) {
  SamplingParams k1;
  k1.temperature = 2.0f;
  k1.top_k = 1;
  SamplingParams p0;
  p0.temperature = 2.0f;
  p0.top_p = 1e-6f;
  Rng rng(5);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(1, sample(kLogits, k1, {}, rng));
    EXPECT_EQ(1, sample(kLogits, p0, {}, rng));
  }
}

TEST(Sampler, TopKKeepsOnlyTheKBest) {
  SamplingParams p;
  p.temperature = 5.0f;  // flat: every survivor shows up
  p.top_k = 3;
  Rng rng(3);
  std::map<int, int> seen;
  for (int i = 0; i < 3000; ++i) seen[sample(kLogits, p, {}, rng)]++;
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE(seen.count(1) && seen.count(4) && seen.count(6));  // 3.0, 3.0, 2.9
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  // probs at T=1 ~ {0.87, 0.117, 0.016, ...}: top_p 0.9 keeps two ids.
  const std::vector<float> l = {5.0f, 3.0f, 1.0f, 0.0f};
  SamplingParams p;
  p.top_p = 0.9f;
  Rng rng(11);
  std::map<int, int> seen;
  for (int i = 0; i < 5000; ++i) seen[sample(l, p, {}, rng)]++;
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen.count(0) && seen.count(1));
}

TEST(Sampler, MinPFiltersRelativeToTheBest) {
  const std::vector<float> l = {0.0f, std::log(0.5f), std::log(0.09f), std::log(0.2f)};  // p relative to best
  SamplingParams p;
  p.min_p = 0.1f;
  Rng rng(13);
  std::map<int, int> seen;
  for (int i = 0; i < 5000; ++i) seen[sample(l, p, {}, rng)]++;
  EXPECT_EQ(seen.count(2), 0u);  // 0.09 < 0.1
  EXPECT_EQ(seen.size(), 3u);
}

TEST(Sampler, PenaltiesChangeTheRightLogits) {
  // Repetition penalty (llama.cpp): positive logits divided, negative multiplied, only for seen ids.
  const std::vector<float> l = {2.0f, 1.9f, -1.0f, -1.2f};
  SamplingParams p = greedy();
  p.repetition_penalty = 2.0f;
  Rng rng(1);
  EXPECT_EQ(1, sample(l, p, std::vector<int>{0}, rng));  // 2.0 -> 1.0 < 1.9
  const std::vector<float> neg = {-1.0f, -1.5f};
  EXPECT_EQ(1, sample(neg, p, std::vector<int>{0}, rng));  // -1.0 -> -2.0 < -1.5
  // Presence: once per seen id; frequency: per occurrence.
  SamplingParams pres = greedy();
  pres.presence_penalty = 0.2f;
  EXPECT_EQ(1, sample(l, pres, std::vector<int>{0}, rng));      // 2.0 - 0.2 = 1.8 < 1.9
  EXPECT_EQ(0, sample(l, pres, std::vector<int>{3, 3, 3}, rng));  // unrelated id
  SamplingParams freq = greedy();
  freq.frequency_penalty = 0.04f;
  EXPECT_EQ(0, sample(l, freq, std::vector<int>{0, 0}, rng));     // 2.0 - 0.08 = 1.92 > 1.9
  EXPECT_EQ(1, sample(l, freq, std::vector<int>{0, 0, 0}, rng));  // 2.0 - 0.12 = 1.88 < 1.9
  // Window: only the last penalty_last_n ids count; 0 disables.
  freq.penalty_last_n = 2;
  EXPECT_EQ(0, sample(l, freq, std::vector<int>{0, 0, 0, 2, 2}, rng));
  pres.penalty_last_n = 0;
  EXPECT_EQ(0, sample(l, pres, std::vector<int>{0}, rng));
  // Out-of-range history ids are ignored, not a crash.
  EXPECT_EQ(0, sample(l, pres, std::vector<int>{-5, 1000}, rng));
}

TEST(Sampler, DistributionMatchesSoftmax) {
  for (float temp : {1.0f, 0.7f}) {
    SamplingParams p;
    p.temperature = temp;
    p.seed = 0;
    Rng rng(2024);
    const int n = 200000;
    std::vector<int> counts(kLogits.size());
    for (int i = 0; i < n; ++i) counts[sample(kLogits, p, {}, rng)]++;
    const auto expected = softmax(kLogits, temp);
    for (size_t i = 0; i < counts.size(); ++i) {
      const double f = static_cast<double>(counts[i]) / n;
      EXPECT_NEAR(f, expected[i], 4 * std::sqrt(expected[i] * (1 - expected[i]) / n) + 1e-4) << "id " << i;
    }
  }
}

// Frequencies of `draws` samples against `want` (id -> probability; ids not listed: never drawn).
void expect_frequencies(const std::vector<float>& logits, const SamplingParams& p, const std::map<int, double>& want,
                        int draws = 100000) {
  Rng rng(77);
  std::map<int, int> counts;
  for (int i = 0; i < draws; ++i) counts[sample(logits, p, {}, rng)]++;
  for (const auto& [id, c] : counts) EXPECT_TRUE(want.count(id)) << "id " << id << " drawn " << c << " times";
  for (const auto& [id, q] : want) {
    const double f = static_cast<double>(counts[id]) / draws;
    EXPECT_NEAR(f, q, 4 * std::sqrt(q * (1 - q) / draws) + 1e-4) << "id " << id;
  }
}

TEST(Sampler, TemperatureLastFiltersTheUntemperedDistribution) {
  // softmax(2, 1, 0) = .665, .245, .090: top_p 0.7 keeps ids 0 and 1; at T = 0.25 they weigh e^8 : e^4.
  const std::vector<float> l = {2.0f, 1.0f, 0.0f};
  SamplingParams p;
  p.temperature = 0.25f;
  p.top_p = 0.7f;
  const double p1 = 1.0 / (1.0 + std::exp(4.0));
  p.temperature_last = true;
  expect_frequencies(l, p, {{0, 1 - p1}, {1, p1}});
  p.temperature_last = false;  // tempered first: .982 for id 0 alone passes top_p
  expect_frequencies(l, p, {{0, 1.0}});
  // min_p the same way: 0.3 of the best keeps id 1 (.37 of it) untempered, and drops it tempered.
  p.top_p = 1.0f;
  p.min_p = 0.3f;
  p.temperature_last = true;
  expect_frequencies(l, p, {{0, 1 - p1}, {1, p1}});
}

// A vocabulary for the infill filter: text pieces, two end-of-generation control tokens, end_id 7.
std::shared_ptr<const InfillVocab> infill_vocab() {
  auto v = std::make_shared<InfillVocab>();
  v->pieces = {"a", "ab", "b", "", "c", "d", "", "", "e"};
  v->eog = {0, 0, 0, 1, 0, 0, 1, 1, 0};
  v->end_id = 7;
  return v;
}

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(x > 0 ? static_cast<float>(std::log(x)) : -1e9f);
  return l;
}

TEST(Sampler, InfillMergesPrefixesAndDrawsSurvivorsByTheirOwnLogits) {
  // top_k 4: a .30, ab .25, b .40, end 3 .05 (3 * .05 * 4 < .95); "a" starts "ab" and takes its
  // mass (.55); .2 and then 1/3 keep a and b; the end stays. The draw weighs them .30, .40, .05.
  SamplingParams p;
  p.infill = infill_vocab();
  p.top_k = 4;
  const std::vector<float> l = log_probs({.30, .25, .40, .05, 0, 0, 0, 0, 0});
  expect_frequencies(l, p, {{0, .30 / .75}, {2, .40 / .75}, {3, .05 / .75}});
  // Greedy with the temperature last: the best survivor.
  p.temperature = 0.0f;
  p.temperature_last = true;
  expect_frequencies(l, p, {{2, 1.0}}, 10);
}

TEST(Sampler, InfillKeepsOnlyTheEndsWhenTheyAreLikelyEnough) {
  // a .5, ends .3 and .2: 3 * 3 * .5 > .5, so only the ends stay, drawn .6 : .4.
  SamplingParams p;
  p.infill = infill_vocab();
  const std::vector<float> l = log_probs({.5, 0, 0, .3, 0, 0, .2, 0, 0});
  expect_frequencies(l, p, {{3, .6}, {6, .4}});
  p.temperature = 0.0f;  // greedy takes the likelier end, not the argmax "a"
  p.temperature_last = true;
  expect_frequencies(l, p, {{3, 1.0}}, 10);
  p.temperature_last = false;  // tempered first, greedy is the argmax (llama.cpp's temp_ext keeps only it)
  expect_frequencies(l, p, {{0, 1.0}}, 10);
}

TEST(Sampler, InfillEndsWithEndIdWhenNoTextTokenIsLikelyEnough) {
  // Five text tokens at .198 and an end at .01 (3 * .01 * 9 < .99): none reaches .2, so end_id.
  SamplingParams p;
  p.infill = infill_vocab();
  expect_frequencies(log_probs({.198, 0, .198, .01, .198, .198, 0, 0, .198}), p, {{7, 1.0}}, 100);
  // top_k 3 first: a, ab, b (.31, .31, .38); "a" takes "ab"'s mass, both a and b pass .2 and 1/3,
  // and are drawn by their own weights; the end is not among the three.
  p.top_k = 3;
  expect_frequencies(log_probs({.2, .2, .25, .01, 0, 0, 0, 0, 0}), p, {{0, .2 / .45}, {2, .25 / .45}});
}

TEST(Sampler, InfillLooksAtTheBestCandidatesOfALargeVocabulary) {
  // 100k candidates with no top-k: the quadratic merge sees the best 256 only, and still follows
  // its rules there (no text token reaches .2 of them: end_id).
  auto v = std::make_shared<InfillVocab>();
  const int n = 100000;
  v->pieces.resize(n);
  v->eog.assign(n, 0);
  for (int i = 0; i < n; ++i) v->pieces[static_cast<size_t>(i)] = "t" + std::to_string(1000000 + i);  // none starts another
  v->pieces[0] = "";
  v->eog[0] = 1;
  v->end_id = 0;
  std::vector<float> l(n, 0.0f);
  l[0] = -10.0f;
  SamplingParams p;
  p.infill = v;
  Rng rng(1);
  EXPECT_EQ(sample(l, p, {}, rng), 0);
}

TEST(Sampler, LargeVocabTopPUsesExactMass) {
  // 50k near-flat logits: top_p 0.5 needs far more than the 1024 shortlist.
  std::vector<float> l(50000);
  for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(i % 7) * 1e-3f;
  SamplingParams p;
  p.top_p = 0.5f;
  Rng rng(8);
  // The 1024 best all have i % 7 == 6; about half the mass also includes i % 7 in {5, 4, 3}.
  int below_shortlist = 0;
  for (int i = 0; i < 300; ++i) below_shortlist += sample(l, p, {}, rng) % 7 != 6;
  EXPECT_GT(below_shortlist, 100);
}

TEST(Logprobs, LogSoftmaxAndTopN) {
  const auto probs = softmax(kLogits);
  for (int id = 0; id < static_cast<int>(kLogits.size()); ++id) {
    EXPECT_NEAR(token_logprob(kLogits, id), std::log(probs[id]), 1e-5);
  }
  std::vector<std::pair<int, float>> top;
  top.reserve(3);
  top_logprobs(kLogits, 3, top);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);  // tie with 4: lower id first
  EXPECT_EQ(top[1].first, 4);
  EXPECT_EQ(top[2].first, 6);
  EXPECT_NEAR(top[2].second, std::log(probs[6]), 1e-5);
  double total = 0;
  for (double q : probs) total += q;
  EXPECT_NEAR(total, 1.0, 1e-9);
}

}  // namespace
}  // namespace anelm::engine
