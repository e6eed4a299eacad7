// Prefill/decode throughput of an engine::Engine, measured like the peer kit's llamacpp-bench so the two
// can be compared as ratios (fresh sequence per rep, one warm-up, argmax after every step, EOS ignored).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.h"

namespace anelm::tools {

struct BenchOptions {
  int prompt_tokens = 128;  // N: prompt length, submitted as one forward (chunked by max_batch)
  int gen_tokens = 64;      // M: single-token decode steps
  int reps = 3;             // measured repetitions (median reported)
  bool warmup = true;       // one unreported rep first (pages the weights in)
  int add_bos = -1;         // prompt starts with BOS: 1 yes, 0 no, -1 as llama.cpp's vocab default
                            // (llama/SPM: yes; qwen2/GPT-2 BPE: no); pass the tokenizer's rule if known
};

struct BenchResult {
  double prefill_tok_s = 0;                // median of N / (prompt forward + argmax)
  double decode_tok_s = 0;                 // median of M / (M x (forward 1 token + argmax))
  std::vector<double> prefill_tok_s_all;   // every measured rep
  std::vector<double> decode_tok_s_all;
  std::vector<int> greedy_first_ids;       // first 8 argmax ids of the first measured rep
  int64_t peak_rss_bytes = 0;              // VmHWM after the run
};

// The deterministic prompt of llamacpp-bench: BOS (when add_bos and the model has one), then ids
// (i * 7919 + 13) % min(vocab, 32000), skipping BOS/EOG ids. add_bos as BenchOptions::add_bos.
std::vector<int> bench_prompt(const engine::ModelConfig& cfg, int n, int add_bos = -1);

// Throws Error(kInvalidArgument) when N + M exceeds the engine's context or N, M, reps are < 1/0/1.
BenchResult run_bench(engine::Engine& engine, const BenchOptions& opts);

// Peak resident set size of this process in bytes (VmHWM, else getrusage's ru_maxrss).
int64_t peak_rss_bytes();

}  // namespace anelm::tools
