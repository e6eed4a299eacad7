// Sampling parameters and a pure sampling function of (logits, params, history, rng).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace anelm::engine {

// What llama.cpp's "infill" sampler reads of the vocabulary (code completion): each token's text,
// which tokens end the generation, and the one token to emit when only those are left.
struct InfillVocab {
  std::vector<std::string> pieces;  // id -> text; "" for control tokens
  std::vector<char> eog;            // id -> 1 when it ends the generation
  int end_id = -1;                  // EOT, else EOS
};

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
  // OpenAI logit_bias: (token id, bias) added to the logit before everything else (greedy too);
  // a bias <= -100 bans the token outright. Ids outside the vocabulary are skipped.
  std::vector<std::pair<int, float>> logit_bias;
  // llama.cpp's chain order (its /completion and /infill): the filters see the untempered
  // distribution and the temperature applies to what survives them. false: temperature first.
  bool temperature_last = false;
  // llama.cpp's "infill" filter after top-k/top-p/min-p (set: on); see sample().
  std::shared_ptr<const InfillVocab> infill;
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

// Reusable buffers for sample(); sized on first use (to the vocab), so a decode loop that keeps one
// SampleScratch allocates nothing per token.
struct SampleScratch {
  std::vector<float> logits;                // penalised / scaled copy of the logits
  std::vector<std::pair<float, int>> cand;  // surviving candidates (logit or prob, id)
  std::vector<int> window;                  // sorted copy of the penalty window
  std::vector<float> p;                     // the infill filter's probabilities
};

// Picks the next token id. Order: logit_bias, then penalties over the last penalty_last_n history ids (repetition as
// llama.cpp: logit > 0 ? logit / pen : logit * pen; then OpenAI presence/frequency: logit -= count *
// frequency + (count > 0) * presence), then temperature (<= 0: argmax, ties to the lowest id), then
// top-k, top-p (smallest prefix with cumulative p >= top_p), min-p (p >= min_p * p_max), then the
// infill filter, then one draw from the renormalised distribution (temperature_last: the temperature
// moves to just before the draw). The infill filter is llama.cpp's, over the n best candidates
// (at most 256: its merge is quadratic): when 3 n p(end-of-generation) > p(text), only the
// end-of-generation tokens stay; otherwise of two tokens where one's text starts the other's, the
// likelier takes both masses, then text tokens under p 0.2 and then under 1 / (texts kept + 1) go,
// and with no text token left, end_id alone. It decides who survives; the draw weighs survivors by
// their own logits, as llama.cpp's does. penalty_last_n: 0 disables penalties, < 0 means the whole
// history. Pure: depends only on its arguments (and advances rng once when drawing).
int sample(std::span<const float> logits, const SamplingParams& params, std::span<const int> history,
           Rng& rng, SampleScratch& scratch);
// Convenience overload with a thread-local scratch.
int sample(std::span<const float> logits, const SamplingParams& params, std::span<const int> history,
           Rng& rng);

// Index of the largest logit (ties to the lowest id).
int argmax(std::span<const float> logits);

// log-softmax of logits[id] (numerically stable; O(vocab)).
float token_logprob(std::span<const float> logits, int id);
// The n highest-probability ids with their log-softmax values, best first (ties to lower id);
// writes into `out` (cleared first; reserve n to avoid allocation). Returns the log-sum-exp.
float top_logprobs(std::span<const float> logits, int n, std::vector<std::pair<int, float>>& out);
// Same with the log-sum-exp already known (e.g. from a vectorised kernel).
void top_logprobs(std::span<const float> logits, int n, float lse, std::vector<std::pair<int, float>>& out);

}  // namespace anelm::engine
