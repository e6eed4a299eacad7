// Prompt-cache copy cost on a real model's KV shape: snapshot (store) and restore of an N-token
// prefix as memcpys, and end to end the prefill of a prompt whose prefix comes from the cache
// against the same prompt computed from scratch. Prints JSON.
//   bench_prompt_cache --model FILE [--tokens 1000] [--threads 2] [--reps 20]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/kv_cache.h"
#include "engine/prompt_cache.h"

using namespace anelm::engine;
using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

GenerateRequest one_token(std::vector<int> prompt) {
  GenerateRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = 1;
  r.sampling.temperature = 0.0f;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model;
  int n = 1000, threads = 2, reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--model") model = argv[i + 1];
    else if (a == "--tokens") n = std::atoi(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
  }
  if (model.empty() || n < 2) {
    std::fprintf(stderr, "usage: bench_prompt_cache --model FILE [--tokens N] [--threads T] [--reps R]\n");
    return 2;
  }
  EngineOptions o;
  o.model_path = model;
  o.threads = threads;
  o.ctx = std::max(2 * n, 2048);
  o.prompt_cache_bytes = int64_t{1} << 30;
  auto eng = Engine::load(o);
  const ModelConfig& cfg = eng->config();

  // ---- the copies alone, on a KV cache of the model's shape (f16, as served)
  KvCache kv(cfg, o.ctx, DType::kF16);
  for (int l = 0; l < cfg.n_layers; ++l)
    for (int h = 0; h < cfg.n_kv_heads; ++h) {
      std::memset(kv.k(l, h), l + h + 1, static_cast<size_t>(n * kv.row_bytes()));
      std::memset(kv.v(l, h), l + h + 2, static_cast<size_t>(n * kv.row_bytes()));
    }
  std::vector<int> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = 100 + i % 1000;
  std::vector<double> store_ms, restore_ms;
  KvCache dst(cfg, o.ctx, DType::kF16);
  for (int r = 0; r < reps; ++r) {
    PromptCache pc(kv, cfg.n_layers, cfg.n_kv_heads, int64_t{1} << 30);
    auto t0 = Clock::now();
    pc.store(ids, kv);
    store_ms.push_back(ms(t0));
    const PromptCache::Hit hit = pc.lookup(ids);
    t0 = Clock::now();
    pc.restore(hit, 0, n, dst);
    restore_ms.push_back(ms(t0));
  }
  const int64_t bytes = PromptCache(kv, cfg.n_layers, cfg.n_kv_heads, 1).entry_bytes(n);

  // ---- end to end: A computed, B (different first token) displaces it, A again from the cache
  std::vector<int> a(static_cast<size_t>(n + 1)), b(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<int>(1000 + (i * 7919) % 20000);
    b[i] = static_cast<int>(2000 + (i * 104729) % 20000);
  }
  const GenerateResult cold = eng->generate(one_token(a), {});
  eng->generate(one_token(b), {});
  const GenerateResult warm = eng->generate(one_token(a), {});

  nlohmann::json j = {
      {"model", model},
      {"tokens", n},
      {"layers", cfg.n_layers},
      {"kv_heads", cfg.n_kv_heads},
      {"head_dim", cfg.head_dim},
      {"kv_type", "f16"},
      {"entry_bytes", bytes},
      {"store_ms_median", median(store_ms)},
      {"restore_ms_median", median(restore_ms)},
      {"restore_gb_s", static_cast<double>(bytes) / (median(restore_ms) / 1e3) / 1e9},
      {"prefill_cold_ms", cold.prefill_ms},
      {"prefill_from_cache_ms", warm.prefill_ms},
      {"cached_tokens", warm.cached_tokens},
      {"same_first_token", cold.ids == warm.ids},
      {"threads", threads},
  };
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}
