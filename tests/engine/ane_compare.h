// The ANE backend against the CPU on one model: greedy ids of both, then the teacher-forced logits
// of both over the prompt + the CPU's ids (shared by the ANE test files).
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"

namespace anelm::engine::testing {

// Logit tolerance: |ane - cpu| <= kAneRelTol * max(1, max |cpu logit|) (the ANE path rounds the
// activations to fp16 at every program boundary).
constexpr float kAneRelTol = 0.01f;

std::vector<int> greedy(Engine& e, const std::vector<int>& prompt, int n);
std::vector<float> all_logits(Engine& e, const std::vector<int>& ids);
// top1 - top2 of one logit row.
float margin(const float* row, int vocab);

struct Comparison {
  std::vector<int> cpu_ids, ane_ids;
  float max_diff = 0, tol = 0, max_logit = 0;
  int first_near_tie = 0;     // first generated position whose CPU margin < 2 * max_diff (n: none)
  int first_mismatch = 0;     // first position where the ids differ (n: none)
  float mismatch_margin = 0;  // CPU top1 - top2 where the ids first differ
  BackendStats ane_stats;
};

// Greedy n on both engines, then teacher-forced logits over prompt + the CPU's ids on both; prints
// one line tagged `tag`. Both runs see the same prefix up to the first mismatch, so where the CPU's
// margin exceeds twice the largest logit difference measured the ANE's argmax cannot differ.
Comparison compare_backends(Engine& cpu, Engine& ane, const std::vector<int>& prompt, int n, const std::string& tag);

// Teacher-forced logits of both engines over `ids` (a prefill) agree within kAneRelTol * max(1,
// max |cpu logit|); prints the largest difference under `tag`.
void expect_ane_logits_close(Engine& cpu, Engine& ane, const std::vector<int>& ids, const std::string& tag);

}  // namespace anelm::engine::testing
