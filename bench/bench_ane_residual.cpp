// Cost of keeping the ANE path's residual stream in fp32 on the CPU (AneBackendOptions::
// fp32_residual) against the default fp16 round trip through every layer's program B: dispatches
// per token, simulator decode time, and each path's logits against the CPU backend's (teacher
// forced over a BOS-first prompt). Prints JSON.
//   bench_ane_residual --model M [--prompt-tokens 24] [--gen-tokens 16] [--threads 2]
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "engine/ane/ane_executor.h"
#include "engine/generator.h"
#include "engine/kernels/kernels.h"
#include "engine/kv_cache.h"
#include "engine/model_loader.h"
#include "engine/thread_pool.h"
#include "engine/transformer.h"

using namespace anelm::engine;

namespace {

std::vector<float> logits(Transformer& tf, const std::vector<int>& ids, int threads) {
  const int n = static_cast<int>(ids.size());
  KvCache kv(tf.config(), n, DType::kF32);
  Activations acts(tf.config(), n, n, threads);
  std::vector<float> out(static_cast<std::size_t>(n) * tf.config().vocab_size);
  tf.forward(ids, 0, kv, acts, out.data());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options opts("bench_ane_residual", "fp16 vs fp32 residual stream on the ANE path");
  opts.add_options()("model", "GGUF file or HF directory", cxxopts::value<std::string>())(
      "prompt-tokens", "teacher-forced prompt length (BOS first)",
      cxxopts::value<int>()->default_value("24"))(
      "gen-tokens", "greedy tokens timed per path", cxxopts::value<int>()->default_value("16"))(
      "threads", "CPU threads", cxxopts::value<int>()->default_value("2"));
  const auto r = opts.parse(argc, argv);
  if (!r.count("model")) {
    std::fputs("--model is required\n", stderr);
    return 2;
  }
  const int threads = r["threads"].as<int>(), np = r["prompt-tokens"].as<int>(),
            ng = r["gen-tokens"].as<int>();
  auto model = load_model(r["model"].as<std::string>());
  const ModelConfig& cfg = model->config;
  ThreadPool pool(threads);
  const auto& k = kernels::active_kernels();
  std::vector<int> ids{cfg.bos_id >= 0 ? cfg.bos_id : 1};
  for (int i = 1; i < np; ++i) ids.push_back(static_cast<int>((i * 7919L + 13) % cfg.vocab_size));
  Transformer cpu_tf(cfg, model->weights, pool, k);
  const std::vector<float> ref = logits(cpu_tf, ids, threads);
  double max_logit = 0;
  for (float v : ref) max_logit = std::max(max_logit, std::fabs(static_cast<double>(v)));

  nlohmann::ordered_json out;
  out["model"] = cfg.name;
  out["prompt_tokens"] = np;
  out["max_abs_cpu_logit"] = max_logit;
  for (bool fp32 : {false, true}) {
    Transformer tf(cfg, model->weights, pool, k);
    AneBackendOptions o;
    o.simulator = true;
    o.fp32_residual = fp32;
    auto backend = make_ane_backend(cfg, model->weights, tf, pool, o);
    const std::vector<float> got = logits(tf, ids, threads);
    double max_diff = 0, sum = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double d = std::fabs(static_cast<double>(got[i]) - ref[i]);
      max_diff = std::max(max_diff, d);
      sum += d;
    }
    Generator gen(tf, 256, 64, DType::kF16, threads);
    GenerateRequest req;
    req.prompt = ids;
    req.max_tokens = ng;
    req.ignore_eos = true;
    req.sampling.temperature = 0.0f;
    const auto res = gen.generate(req, {});
    nlohmann::ordered_json j;
    j["dispatches_per_token"] = backend->stats().programs_per_decode_token;
    j["programs"] = backend->stats().programs;
    j["decode_tok_s"] = res.decode_tok_s;
    j["prefill_tok_s"] = res.prefill_tok_s;
    j["max_abs_logit_diff_vs_cpu"] = max_diff;
    j["mean_abs_logit_diff_vs_cpu"] = sum / static_cast<double>(got.size());
    out[fp32 ? "fp32_residual" : "fp16_residual"] = j;
  }
  std::puts(out.dump().c_str());
  return 0;
}
