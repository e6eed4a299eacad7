// Token sampling: xoshiro256** Rng, penalties, temperature, top-k/top-p/min-p, draw; logprob helpers.
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace anelm::engine {

// ---- Rng: splitmix64 seeding, xoshiro256** (Blackman & Vigna) ----------------------------------

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

float Rng::uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }

// ---- helpers --------------------------------------------------------------------------------------

int argmax(std::span<const float> logits) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(logits.size()); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

namespace {

// Candidate order: higher value first, then lower id (so ties resolve to the lowest id).
inline bool better(const std::pair<float, int>& a, const std::pair<float, int>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

float log_sum_exp(std::span<const float> logits) {
  float mx = logits[0];
  for (float v : logits) mx = std::max(mx, v);
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v - mx));
  return mx + static_cast<float>(std::log(sum));
}

bool has_penalties(const SamplingParams& p) {
  return p.penalty_last_n != 0 &&
         (p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f);
}

// Applies repetition / presence / frequency penalties in place for each distinct id in the window.
void apply_penalties(std::vector<float>& logits, const SamplingParams& p, std::span<const int> history,
                     std::vector<int>& window) {
  const size_t n = p.penalty_last_n < 0 ? history.size()
                                        : std::min(history.size(), static_cast<size_t>(p.penalty_last_n));
  window.assign(history.end() - static_cast<std::ptrdiff_t>(n), history.end());
  std::sort(window.begin(), window.end());
  for (size_t i = 0; i < window.size();) {
    size_t j = i;
    while (j < window.size() && window[j] == window[i]) ++j;
    const int id = window[i];
    const int count = static_cast<int>(j - i);
    i = j;
    if (id < 0 || id >= static_cast<int>(logits.size())) continue;
    float& l = logits[static_cast<size_t>(id)];
    if (p.repetition_penalty != 1.0f) l = l > 0.0f ? l / p.repetition_penalty : l * p.repetition_penalty;
    l -= static_cast<float>(count) * p.frequency_penalty + p.presence_penalty;
  }
}

// OpenAI logit_bias, in place. -100 is documented as "should result in a ban": the token's logit
// becomes -inf (unless that would leave no token at all, when the bias is only added).
void apply_logit_bias(std::vector<float>& logits, const std::vector<std::pair<int, float>>& bias) {
  const int n = static_cast<int>(logits.size());
  int banned = 0;
  for (const auto& [id, b] : bias)
    if (id >= 0 && id < n && b <= -100.0f) ++banned;
  const bool ban = banned < n;  // never ban every token (the distribution would be empty)
  for (const auto& [id, b] : bias) {
    if (id < 0 || id >= n) continue;
    float& l = logits[static_cast<size_t>(id)];
    l = ban && b <= -100.0f ? -std::numeric_limits<float>::infinity() : l + b;
  }
}

// Sorts the best `k` candidates to the front (ties by id); returns k.
size_t partial_sort_best(std::vector<std::pair<float, int>>& cand, size_t k) {
  k = std::min(k, cand.size());
  if (k < cand.size()) std::nth_element(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(k), cand.end(), better);
  std::sort(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(k), better);
  return k;
}

constexpr size_t kInfillCandidates = 256;  // the merge is quadratic: bound it

// llama.cpp's infill filter (see sample()) over cand[0, n) holding weights exp(logit - max): keeps
// the survivors (with their own weights) at the front and returns how many.
size_t apply_infill(SampleScratch& s, size_t n, const InfillVocab& v) {
  auto& c = s.cand;
  const size_t k = std::min(n, kInfillCandidates);  // best first, as its softmax sorts
  std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k), c.begin() + static_cast<std::ptrdiff_t>(n), better);
  n = k;
  const auto eog = [&](int id) { return static_cast<size_t>(id) < v.eog.size() && v.eog[static_cast<size_t>(id)]; };
  const auto piece = [&](int id) -> const std::string& {
    static const std::string none;
    return static_cast<size_t>(id) < v.pieces.size() ? v.pieces[static_cast<size_t>(id)] : none;
  };
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += c[i].first;
  s.p.resize(n);
  double p_txt = 0.0, p_eog = 0.0;
  for (size_t i = 0; i < n; ++i) {
    s.p[i] = static_cast<float>(c[i].first / total);
    (eog(c[i].second) ? p_eog : p_txt) += s.p[i];
  }
  // Keeps the candidates `keep` accepts, compacting weights and probabilities together.
  auto filter = [&](auto keep) {
    size_t w = 0;
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i)
      if (keep(i)) {
        c[w] = c[i];
        s.p[w] = s.p[i];
        sum += s.p[w++];
      }
    for (size_t i = 0; i < w; ++i) s.p[i] = static_cast<float>(s.p[i] / sum);
    n = w;
  };
  if (3.0 * p_eog * static_cast<double>(n) > p_txt) {  // ending is likely enough: only the ends stay
    filter([&](size_t i) { return eog(c[i].second); });
    return n;
  }
  // A token whose text starts another's: the likelier of the two takes both masses (p < 0: gone).
  for (size_t i0 = 0; i0 < n; ++i0) {
    for (size_t i1 = 0; i1 < n && s.p[i0] >= 0.0f; ++i1) {
      if (i0 == i1 || s.p[i1] < 0.0f) continue;
      const std::string& a = piece(c[i0].second);
      const std::string& b = piece(c[i1].second);
      if (a.empty() || a.size() > b.size() || b.compare(0, a.size(), a) != 0) continue;
      const size_t dst = s.p[i1] > s.p[i0] ? i1 : i0, src = dst == i0 ? i1 : i0;
      s.p[dst] += s.p[src];
      s.p[src] = -1.0f;
    }
  }
  size_t texts = 0;
  filter([&](size_t i) {
    const bool keep = s.p[i] >= 0.0f && (s.p[i] >= 0.2f || eog(c[i].second));
    texts += keep && !eog(c[i].second);
    return keep;
  });
  if (texts == 0) {  // nothing but ends: end_id
    c[0] = {1.0f, v.end_id};
    return 1;
  }
  const float thold = 1.0f / static_cast<float>(texts + 1);
  filter([&](size_t i) { return s.p[i] >= thold || eog(c[i].second); });
  return n;
}

}  // namespace

float token_logprob(std::span<const float> logits, int id) {
  return logits[static_cast<size_t>(id)] - log_sum_exp(logits);
}

float top_logprobs(std::span<const float> logits, int n, std::vector<std::pair<int, float>>& out) {
  const float lse = log_sum_exp(logits);
  top_logprobs(logits, n, lse, out);
  return lse;
}

void top_logprobs(std::span<const float> logits, int n, float lse, std::vector<std::pair<int, float>>& out) {
  out.clear();
  if (n <= 0) return;
  // Insertion into a small sorted list: O(vocab * n) worst case, n is small (<= 20 in the API).
  for (int id = 0; id < static_cast<int>(logits.size()); ++id) {
    const float v = logits[static_cast<size_t>(id)];
    if (static_cast<int>(out.size()) == n && !(v > out.back().second)) continue;
    if (static_cast<int>(out.size()) < n) out.emplace_back(id, v);
    else out.back() = {id, v};
    for (size_t k = out.size() - 1; k > 0 && out[k].second > out[k - 1].second; --k) std::swap(out[k], out[k - 1]);
  }
  for (auto& [id, v] : out) v -= lse;
}

// ---- sample -------------------------------------------------------------------------------------

int sample(std::span<const float> logits, const SamplingParams& p, std::span<const int> history, Rng& rng,
           SampleScratch& s) {
  std::span<const float> l = logits;
  const bool penalties = has_penalties(p) && !history.empty();
  if (penalties || !p.logit_bias.empty()) {
    s.logits.assign(logits.begin(), logits.end());  // the scratch keeps its capacity: no allocation
    apply_logit_bias(s.logits, p.logit_bias);
    if (penalties) apply_penalties(s.logits, p, history, s.window);
    l = s.logits;
  }
  // Greedy: the argmax, which every filter keeps, except infill's when the temperature comes last
  // (then the best survivor, as llama.cpp's last temperature <= 0 keeps only the top logit).
  const bool greedy = p.temperature <= 0.0f;
  if (greedy && !(p.infill && p.temperature_last)) return argmax(l);

  // Candidates as (logit / T, id), untempered when the temperature comes last.
  const size_t vocab = l.size();
  s.cand.resize(vocab);
  const float inv_t = p.temperature_last ? 1.0f : 1.0f / p.temperature;
  for (size_t i = 0; i < vocab; ++i) s.cand[i] = {l[i] * inv_t, static_cast<int>(i)};

  size_t n = vocab;
  bool sorted = false;
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < vocab) {
    n = partial_sort_best(s.cand, static_cast<size_t>(p.top_k));
    sorted = true;
  }
  if (p.top_p < 1.0f && !sorted) {
    // Most mass sits in few tokens: sort the best 1024 first, everything only if they fall short.
    n = partial_sort_best(s.cand, 1024);
    sorted = true;
  }
  float mx = s.cand[0].first;
  if (!sorted) {
    for (size_t i = 1; i < n; ++i) mx = std::max(mx, s.cand[i].first);
  }
  // Every candidate -inf (a mask and a logit_bias ban together): no distribution to draw from.
  if (!(mx > -std::numeric_limits<float>::infinity())) return argmax(l);
  // Probabilities (unnormalised, relative to the max) replace logits in place.
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    s.cand[i].first = std::exp(s.cand[i].first - mx);
    total += s.cand[i].first;
  }
  if (p.top_p < 1.0f) {
    if (n < vocab && p.top_k <= 0) {  // the 1024 shortlist: exact total needs the rest too
      double rest = 0.0;
      for (size_t i = n; i < vocab; ++i) rest += std::exp(s.cand[i].first - mx);
      const double target = p.top_p * (total + rest);
      double cum = 0.0;
      size_t keep = 0;
      while (keep < n && cum < target) cum += s.cand[keep++].first;
      if (cum < target) {  // rare: need the full order
        for (size_t i = n; i < vocab; ++i) s.cand[i].first = std::exp(s.cand[i].first - mx);
        std::sort(s.cand.begin() + static_cast<std::ptrdiff_t>(n), s.cand.end(), better);
        n = vocab;
        while (keep < n && cum < target) cum += s.cand[keep++].first;
      }
      n = std::max<size_t>(keep, 1);
    } else {
      const double target = p.top_p * total;
      double cum = 0.0;
      size_t keep = 0;
      while (keep < n && cum < target) cum += s.cand[keep++].first;
      n = std::max<size_t>(keep, 1);
    }
  }
  if (p.min_p > 0.0f) {
    // p_max is exp(0) = 1 in these units; keep order-independent survivors, compacting in place.
    size_t w = 0;
    for (size_t i = 0; i < n; ++i) {
      if (s.cand[i].first >= p.min_p) s.cand[w++] = s.cand[i];
    }
    n = std::max<size_t>(w, 1);
  }
  if (p.infill) n = apply_infill(s, n, *p.infill);
  if (greedy) return s.cand[0].second;  // the infill filter leaves the survivors best first
  if (p.infill || (p.temperature_last && p.temperature != 1.0f)) {
    // exp((logit - max) / T) relative to the best survivor: the infill filter may have dropped the
    // max, leaving weights far below 1.
    float best = 0.0f;
    for (size_t i = 0; i < n; ++i) best = std::max(best, s.cand[i].first);
    const float t_inv = p.temperature_last ? 1.0f / p.temperature : 1.0f;
    if (best > 0.0f)
      for (size_t i = 0; i < n; ++i) s.cand[i].first = std::pow(s.cand[i].first / best, t_inv);
  }
  total = 0.0;
  for (size_t i = 0; i < n; ++i) total += s.cand[i].first;
  const double u = static_cast<double>(rng.uniform()) * total;
  double cum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cum += s.cand[i].first;
    if (u < cum) return s.cand[i].second;
  }
  return s.cand[n - 1].second;
}

int sample(std::span<const float> logits, const SamplingParams& params, std::span<const int> history,
           Rng& rng) {
  thread_local SampleScratch scratch;
  return sample(logits, params, history, rng, scratch);
}

}  // namespace anelm::engine
