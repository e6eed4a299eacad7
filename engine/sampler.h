// Sampling parameters and a pure sampling function of (logits, params, history, rng).
#pragma once

#include <cstdint>
#include <span>

namespace anelm::engine {

struct SamplingParams {
  float temperature = 1.0f;         // <= 0: greedy (argmax, ties to the lowest id)
  int top_k = 0;                    // 0: disabled
  float top_p = 1.0f;               // 1: disabled
  float min_p = 0.0f;               // 0: disabled; keep tokens with p >= min_p * p_max
  float repetition_penalty = 1.0f;  // 1: disabled; llama.cpp rule: logit>0 ? /pen : *pen
  float presence_penalty = 0.0f;    // OpenAI: subtract once per seen token
  float frequency_penalty = 0.0f;   // OpenAI: subtract count * value
  int penalty_last_n = 64;          // window of history the penalties look at
  uint64_t seed = 0;                // same seed, same output
};

// Deterministic 64-bit generator (splitmix64 seeding, xoshiro256**), owned by one sequence.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0);
  uint64_t next();
  float uniform();  // [0, 1)

 private:
  uint64_t s_[4];
};

}  // namespace anelm::engine
