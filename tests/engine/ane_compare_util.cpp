#include "tests/engine/ane_compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

namespace anelm::engine::testing {

std::vector<int> greedy(Engine& e, const std::vector<int>& prompt, int n) {
  GenerateRequest r;
  r.prompt = prompt;
  r.max_tokens = n;
  r.ignore_eos = true;
  r.sampling.temperature = 0.0f;
  return e.generate(r, {}).ids;
}

std::vector<float> all_logits(Engine& e, const std::vector<int>& ids) {
  const auto s = e.forward(ids, 0, true);
  return {s.begin(), s.end()};
}

float margin(const float* row, int vocab) {
  float a = -INFINITY, b = -INFINITY;
  for (int i = 0; i < vocab; ++i) {
    if (row[i] > a) {
      b = a;
      a = row[i];
    } else if (row[i] > b) {
      b = row[i];
    }
  }
  return a - b;
}

Comparison compare_backends(Engine& cpu, Engine& ane, const std::vector<int>& prompt, int n, const std::string& tag) {
  Comparison c;
  c.ane_stats = ane.stats();
  c.cpu_ids = greedy(cpu, prompt, n);
  c.ane_ids = greedy(ane, prompt, n);
  std::vector<int> seq = prompt;
  seq.insert(seq.end(), c.cpu_ids.begin(), c.cpu_ids.end());
  const std::vector<float> lc = all_logits(cpu, seq), la = all_logits(ane, seq);
  const int vocab = cpu.config().vocab_size;
  for (std::size_t i = 0; i < lc.size(); ++i) {
    c.max_diff = std::max(c.max_diff, std::fabs(lc[i] - la[i]));
    c.max_logit = std::max(c.max_logit, std::fabs(lc[i]));
  }
  c.tol = kAneRelTol * std::max(1.0f, c.max_logit);
  auto row = [&](int i) { return lc.data() + (prompt.size() - 1 + i) * static_cast<std::size_t>(vocab); };
  c.first_near_tie = c.first_mismatch = n;
  for (int i = 0; i < n; ++i) {
    if (margin(row(i), vocab) < 2 * c.max_diff) {
      c.first_near_tie = i;
      break;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (c.ane_ids[i] != c.cpu_ids[i]) {
      c.first_mismatch = i;
      c.mismatch_margin = margin(row(i), vocab);
      break;
    }
  }
  std::cout << "[" << tag << "] " << c.ane_stats.backend << ": " << c.ane_stats.ane_programs << " programs, "
            << c.ane_stats.ane_compile_ms << " ms; first id mismatch " << c.first_mismatch << "/" << n
            << " (CPU margin there " << c.mismatch_margin << "), first CPU near-tie " << c.first_near_tie
            << ", max |dlogit| " << c.max_diff << " (tol " << c.tol << ", max |logit| " << c.max_logit << ")\n";
  return c;
}

void expect_ane_logits_close(Engine& cpu, Engine& ane, const std::vector<int>& ids, const std::string& tag) {
  const std::vector<float> lc = all_logits(cpu, ids), la = all_logits(ane, ids);
  ASSERT_EQ(lc.size(), la.size()) << tag;
  float diff = 0, mx = 0;
  for (std::size_t i = 0; i < lc.size(); ++i) {
    diff = std::max(diff, std::fabs(lc[i] - la[i]));
    mx = std::max(mx, std::fabs(lc[i]));
  }
  std::cout << "[" << tag << "] max |dlogit| " << diff << " (max |logit| " << mx << ")\n";
  EXPECT_LE(diff, kAneRelTol * std::max(1.0f, mx)) << tag;
}

}  // namespace anelm::engine::testing
