// `anelm bench`: prefill and decode tokens/s (median of several reps) and peak memory, defined like llamacpp-bench.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tools/bench_runner.h"
#include "engine/error.h"
#include "tools/cli_commands.h"
#include "tools/cli_util.h"

namespace anelm::tools {

using namespace engine;

int run_bench(int argc, char** argv) {
  cxxopts::Options options("anelm bench", "Measure prefill and decode tokens/s");
  add_engine_flags(options);
  options.add_options("bench")
      ("prompt-tokens", "prompt length N (one batch)", cxxopts::value<int>()->default_value("128"))
      ("gen-tokens", "decode steps M", cxxopts::value<int>()->default_value("64"))
      ("reps", "measured repetitions (median reported)", cxxopts::value<int>()->default_value("3"))
      ("no-warmup", "skip the unreported warm-up repetition")
      ("json", "print one JSON line");
  auto r = parse_cli(options, argc, argv);
  if (!r) return 0;
  engine::EngineOptions eo = engine_options_from(*r);
  BenchOptions bo;
  bo.prompt_tokens = (*r)["prompt-tokens"].as<int>();
  bo.gen_tokens = (*r)["gen-tokens"].as<int>();
  bo.reps = (*r)["reps"].as<int>();
  bo.warmup = r->count("no-warmup") == 0;
  if (eo.ctx == 0) eo.ctx = bo.prompt_tokens + bo.gen_tokens;

  auto t0 = std::chrono::steady_clock::now();
  auto eng = engine::Engine::load(eo);
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  BenchResult res = run_bench(*eng, bo);
  engine::BackendStats st = eng->stats();

  nlohmann::json out = {
      {"tool", "anelm-bench"},
      {"model", std::filesystem::path(eo.model_path).filename().string()},
      {"backend", st.backend}, {"isa", st.isa},
      {"weight_bytes", st.weight_bytes}, {"kv_bytes", st.kv_bytes},
      {"prompt_tokens", bo.prompt_tokens}, {"gen_tokens", bo.gen_tokens},
      {"threads", eo.threads}, {"reps", bo.reps}, {"warmup", bo.warmup},
      {"load_ms", load_ms},
      {"prefill_tok_s", res.prefill_tok_s}, {"decode_tok_s", res.decode_tok_s},
      {"prefill_tok_s_all", res.prefill_tok_s_all}, {"decode_tok_s_all", res.decode_tok_s_all},
      {"greedy_first_ids", res.greedy_first_ids},
      {"peak_rss_bytes", res.peak_rss_bytes},
  };
  if (r->count("json")) {
    std::puts(out.dump().c_str());
  } else {
    std::printf("%s (%s, %s): prefill %.1f tok/s, decode %.2f tok/s, peak RSS %.1f MiB, load %.0f ms\n",
                out["model"].get<std::string>().c_str(), st.backend.c_str(), st.isa.c_str(),
                res.prefill_tok_s, res.decode_tok_s, res.peak_rss_bytes / 1048576.0, load_ms);
  }
  return 0;
}

}  // namespace anelm::tools
