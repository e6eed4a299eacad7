// Bench loop mirroring llamacpp-bench: per rep a fresh sequence, prefill N + argmax, then M decode steps.
#include "tools/bench_runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include "engine/error.h"
#include "engine/sampler.h"

namespace anelm::tools {

using namespace engine;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

bool is_special(const ModelConfig& cfg, int id) {
  return id == cfg.bos_id || std::find(cfg.eos_ids.begin(), cfg.eos_ids.end(), id) != cfg.eos_ids.end();
}

}  // namespace

std::vector<int> bench_prompt(const ModelConfig& cfg, int n, int add_bos) {
  std::vector<int> ids;
  ids.reserve(static_cast<size_t>(n));
  const bool bos = add_bos < 0 ? cfg.arch == Arch::kLlama : add_bos > 0;
  if (bos && cfg.bos_id >= 0 && n > 0) ids.push_back(cfg.bos_id);
  const int lim = std::min(cfg.vocab_size, 32000);
  for (int64_t i = 0; static_cast<int>(ids.size()) < n; ++i) {
    int t = static_cast<int>((i * 7919 + 13) % lim);
    for (int tries = 0; tries < lim && is_special(cfg, t); ++tries) t = (t + 1) % lim;
    ids.push_back(t);
  }
  return ids;
}

int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:  1234 kB"
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

BenchResult run_bench(Engine& engine, const BenchOptions& opts) {
  if (opts.prompt_tokens < 1 || opts.gen_tokens < 0 || opts.reps < 1) {
    throw Error(ErrorKind::kInvalidArgument, "bench: need prompt_tokens >= 1 (got " + std::to_string(opts.prompt_tokens) +
                                                 "), gen_tokens >= 0 (got " + std::to_string(opts.gen_tokens) +
                                                 "), reps >= 1 (got " + std::to_string(opts.reps) + ")");
  }
  if (opts.prompt_tokens + opts.gen_tokens > engine.ctx()) {
    throw Error(ErrorKind::kInvalidArgument, "bench: prompt_tokens (" + std::to_string(opts.prompt_tokens) +
                                                 ") + gen_tokens (" + std::to_string(opts.gen_tokens) +
                                                 ") exceeds the context of " + std::to_string(engine.ctx()) +
                                                 " tokens (raise --ctx)");
  }
  const std::vector<int> prompt = bench_prompt(engine.config(), opts.prompt_tokens, opts.add_bos);
  BenchResult res;
  for (int rep = opts.warmup ? -1 : 0; rep < opts.reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    int tok = argmax(engine.forward(prompt, 0));  // start_pos 0: a fresh sequence
    const double t_prefill = seconds_since(t0);
    if (rep == 0) res.greedy_first_ids.push_back(tok);
    const auto t1 = std::chrono::steady_clock::now();
    for (int g = 0; g < opts.gen_tokens; ++g) {
      tok = argmax(engine.forward(std::span<const int>(&tok, 1), opts.prompt_tokens + g));
      if (rep == 0 && res.greedy_first_ids.size() < 8) res.greedy_first_ids.push_back(tok);
    }
    const double t_decode = seconds_since(t1);
    if (rep >= 0) {
      res.prefill_tok_s_all.push_back(opts.prompt_tokens / t_prefill);
      res.decode_tok_s_all.push_back(opts.gen_tokens > 0 ? opts.gen_tokens / t_decode : 0.0);
    }
  }
  res.prefill_tok_s = median(res.prefill_tok_s_all);
  res.decode_tok_s = median(res.decode_tok_s_all);
  res.peak_rss_bytes = peak_rss_bytes();
  return res;
}

}  // namespace anelm::tools
