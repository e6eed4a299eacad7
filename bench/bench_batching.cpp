// Continuous batching in the engine alone (no HTTP): P sequences started together with distinct
// N-token prompts, stepped until each generated M tokens. Reports per P the prefill phase, the
// decode steps (median and p99 ms per step, aggregate decode tok/s) and end-to-end tok/s. JSON.
//   bench_batching --model FILE [--parallel 1,2,4,8] [--prompt-tokens 128] [--gen-tokens 64] [--threads 2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"

using namespace anelm::engine;
using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::time_point t0, Clock::time_point t1) { return std::chrono::duration<double, std::milli>(t1 - t0).count(); }

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// One round: P requests at once; returns its JSON.
nlohmann::json round(Engine& e, int p, int n, int m, int tag) {
  std::vector<int> generated(static_cast<size_t>(p), 0);
  for (int s = 0; s < p; ++s) {
    GenerateRequest r;
    for (int i = 0; i < n; ++i) r.prompt.push_back((1000 + 7919 * ((tag * 16 + s) * n + i)) % (e.config().vocab_size - 10) + 10);
    r.max_tokens = m;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    e.start(std::move(r), [&generated, s](const TokenStep&) { return ++generated[static_cast<size_t>(s)] > 0; }, {});
  }
  const auto t0 = Clock::now();
  Clock::time_point first_decode{};
  std::vector<double> steps;
  for (bool running = true; running;) {
    const bool decoding = std::all_of(generated.begin(), generated.end(), [](int g) { return g > 0; });
    const auto s0 = Clock::now();
    running = e.step();
    if (decoding) {
      steps.push_back(ms(s0, Clock::now()));
      if (steps.size() == 1) first_decode = s0;
    }
  }
  const auto t1 = Clock::now();
  const double decode_ms = steps.empty() ? 0.0 : ms(first_decode, t1);
  int tokens = 0;
  for (int g : generated) tokens += g;
  return {{"parallel", p},
          {"prefill_ms", ms(t0, first_decode == Clock::time_point{} ? t1 : first_decode)},
          {"decode_steps", steps.size()},
          {"step_ms_p50", pct(steps, 0.5)},
          {"step_ms_p99", pct(steps, 0.99)},
          {"decode_tok_s", decode_ms > 0 ? static_cast<double>(steps.size()) * p / (decode_ms / 1e3) : 0.0},
          {"end_to_end_tok_s", tokens / (ms(t0, t1) / 1e3)}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, parallel = "1,2,4,8";
  int n = 128, m = 64, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--model") model = argv[i + 1];
    else if (a == "--parallel") parallel = argv[i + 1];
    else if (a == "--prompt-tokens") n = std::atoi(argv[i + 1]);
    else if (a == "--gen-tokens") m = std::atoi(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
  }
  if (model.empty() || n < 1 || m < 1) {
    std::fprintf(stderr,
                 "usage: bench_batching --model FILE [--parallel 1,2,4,8] [--prompt-tokens N] [--gen-tokens M] "
                 "[--threads T]\n");
    return 2;
  }
  std::vector<int> ps;
  std::stringstream ss(parallel);
  for (std::string x; std::getline(ss, x, ',');) ps.push_back(std::atoi(x.c_str()));
  EngineOptions o;
  o.model_path = model;
  o.threads = threads;
  o.ctx = n + m + 8;
  o.parallel = *std::max_element(ps.begin(), ps.end());
  auto e = Engine::load(o);
  round(*e, 1, n, 4, 0);  // warm-up (its own prompts: no slot holds a later prefix)
  nlohmann::json out = {{"tool", "anelm-bench-batching"}, {"model", model}, {"prompt_tokens", n},
                        {"gen_tokens", m}, {"threads", threads}, {"isa", e->stats().isa}, {"rounds", nlohmann::json::array()}};
  for (int p : ps) out["rounds"].push_back(round(*e, p, n, m, p));
  std::puts(out.dump(1).c_str());
  return 0;
}
