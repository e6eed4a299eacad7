// OpenAI logit_bias in the sampler: added before temperature (greedy too), -100 bans, and the sampled
// distribution matches softmax(logits + bias) computed independently here.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/sampler.h"

namespace anelm::engine {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.5f, -1.0f, 3.0f, 0.5f, 2.9f, -4.0f};

SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

TEST(LogitBias, MovesGreedyChoice) {
  Rng rng(1);
  SamplingParams p = greedy();
  EXPECT_EQ(1, sample(kLogits, p, {}, rng));
  p.logit_bias = {{7, 7.5f}};  // -4 + 7.5 = 3.5 > 3
  EXPECT_EQ(7, sample(kLogits, p, {}, rng));
  p.logit_bias = {{1, -0.2f}};  // 2.8 < 3 (id 4)
  EXPECT_EQ(4, sample(kLogits, p, {}, rng));
  p.logit_bias = {{1, -100.0f}, {4, -100.0f}};  // banned: next best is id 6 (2.9)
  EXPECT_EQ(6, sample(kLogits, p, {}, rng));
  p.logit_bias = {{99, 50.0f}, {-3, 50.0f}};  // out of range: skipped, not a crash
  EXPECT_EQ(1, sample(kLogits, p, {}, rng));
}

TEST(LogitBias, BanHoldsAgainstHugeLogits) {
  // -100 added to a logit of 1000 would still win; a ban must not.
  const std::vector<float> l = {1000.0f, 0.0f, -1.0f};
  SamplingParams p;
  p.temperature = 1.0f;
  p.logit_bias = {{0, -100.0f}};
  Rng rng(3);
  for (int i = 0; i < 2000; ++i) ASSERT_NE(0, sample(l, p, {}, rng));
  SamplingParams g = greedy();
  g.logit_bias = p.logit_bias;
  EXPECT_EQ(1, sample(l, g, {}, rng));
  // Banning every token cannot empty the distribution: the bias is then only added.
  g.logit_bias = {{0, -100.0f}, {1, -100.0f}, {2, -100.0f}};
  EXPECT_EQ(0, sample(l, g, {}, rng));  // 900, -100, -101
}

TEST(LogitBias, DistributionIsSoftmaxOfBiasedLogitsOverTemperature) {
  const std::vector<std::pair<int, float>> bias = {{3, 4.0f}, {1, -2.0f}, {5, 1.5f}};
  std::vector<float> biased = kLogits;
  for (const auto& [id, b] : bias) biased[static_cast<size_t>(id)] += b;
  const float temp = 0.8f;
  std::vector<double> expected(biased.size());
  double mx = -1e30, sum = 0;
  for (float v : biased) mx = std::max(mx, static_cast<double>(v));
  for (size_t i = 0; i < biased.size(); ++i) sum += expected[i] = std::exp((biased[i] - mx) / temp);
  for (auto& x : expected) x /= sum;

  SamplingParams p;
  p.temperature = temp;
  p.logit_bias = bias;
  Rng rng(2025);
  const int n = 200000;
  std::vector<int> counts(kLogits.size());
  for (int i = 0; i < n; ++i) counts[static_cast<size_t>(sample(kLogits, p, {}, rng))]++;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double f = static_cast<double>(counts[i]) / n;
    EXPECT_NEAR(f, expected[i], 4 * std::sqrt(expected[i] * (1 - expected[i]) / n) + 1e-4) << "id " << i;
  }
}

TEST(LogitBias, AppliesBeforePenalties) {
  // Bias first, then the repetition penalty on the biased logit (llama.cpp's sampler chain order).
  // id 0 seen once, penalty 2, bias -2: bias first (1 - 2) * 2 = -2.0 < -1.7 -> id 1;
  // penalty first 1 / 2 - 2 = -1.5 > -1.7 would give id 0.
  const std::vector<float> l = {1.0f, -1.7f};
  SamplingParams p = greedy();
  p.repetition_penalty = 2.0f;
  p.logit_bias = {{0, -2.0f}};
  Rng rng(1);
  EXPECT_EQ(1, sample(l, p, std::vector<int>{0}, rng));
  p.logit_bias.clear();
  EXPECT_EQ(0, sample(l, p, std::vector<int>{0}, rng));
}

}  // namespace
}  // namespace anelm::engine
