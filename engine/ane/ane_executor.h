// The ANE backend: every decoder layer (two fused programs) and the LM head (vocabulary chunks)
// lowered to ane_bridge programs compiled once at start-up; the token mixer's core runs on the CPU
// between a layer's two programs (attention: q/k head norms, RoPE, causal GQA attention over the
// KV cache, Qwen3.5's output gate; Gated DeltaNet: conv, gates, delta rule, gated RMSNorm). Only
// ane_executor.cpp sees ane_bridge.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/weights.h"

namespace anelm::engine {

class ThreadPool;
class Transformer;

// Per layer: program A = RMSNorm + the stacked in-projections, [1, D, 1, S] -> [1, A, 1, S]
// (attention: q | k | v (+ biases) | gate (Qwen3.5), A = Qd + 2 KVd (+ Qd); Gated DeltaNet:
// qkv | z | beta | alpha, A = conv_dim + value_dim + 2 N_v); CPU: the mixer core; program B =
// output projection + residual + RMSNorm + SwiGLU + residual, [1, M + D, 1, S] -> [1, D, 1, S]
// (M = Qd, or value_dim for ssm_out). LM head: ceil(vocab / max_lm_head_rows) chunks at S = 32, each
// recomputing the final norm. Decode uses S = 32 with the token in lane 0; prefill runs chunks
// through the S buckets.
struct AneBackendOptions {
  std::string cache_dir;                     // on-disk compiled-program cache; empty: none
  bool int8_weights = false;                 // per-output-channel int8 weights; false: fp16
  std::vector<int> seq_buckets = {32, 128};  // S buckets; must contain 32 (decode). Larger ones are
                                             // dropped (largest first) when the budget lacks room
  int compile_budget = 119;                  // successful compiles per process (§1.10)
  int budget_reserve = 8;                    // compiles left free when keeping optional buckets
  int max_live_programs = 60;                // programs loaded at once (SimulatorOptions::
                                             // max_live_programs; IM reports ~55 live models, §10.5);
                                             // 0: no limit
  bool lm_head_on_ane = true;                // false: the final norm + LM head stay on the CPU
  bool cpu_remainder = true;                 // the budget cannot hold every layer: run the rest
                                             // on the CPU (labelled); false: throw at start-up
  bool simulator = false;                    // force the CPU simulator even where the ANE exists
  int max_lm_head_rows = 16384;              // vocabulary rows per LM-head chunk (§5.1)
  bool fp32_residual = false;                // keep the residual stream in fp32 on the CPU: each
                                             // layer's program B returns only its update
                                             // (BlockOptions::update_only), added here in fp32;
                                             // same dispatches (cost in docs/ane.md)
  double rms_prescale = 0;                   // power of two applied before the fp16 RMSNorm
                                             // squares (|x| up to 256/p stays finite; small x
                                             // lose precision to fp16 subnormals); 0: calibrated
                                             // per program at start-up (ane_calibrate.h)
  std::function<void(int64_t done, int64_t total)> progress;  // programs compiled so far; optional
  // Start-up self-check of the loaded programs against the simulator (ane_selfcheck.h). kDevice:
  // only when the runtime is the real ANE (UNTESTED: no Mac in CI), so the simulator pays
  // nothing; kAlways: on the simulator too (tests); kOff: never.
  enum class SelfCheck { kDevice, kAlways, kOff };
  SelfCheck self_check = SelfCheck::kDevice;
  // Tests: alters the self-check's device outputs (program name, [tokens][channels]) to stand for
  // an ANE that computes something else; empty: none.
  std::function<void(const std::string& program, std::vector<float>& y)> self_check_device_fault;
};

// What the backend placed where and what starting it cost.
struct AneBackendStats {
  std::string backend;           // "ane" | "ane (simulator)", plus " + cpu (...)" for a remainder
  std::string why_not_ane;       // why the simulator was used instead of the ANE; empty otherwise
  std::string weight_format;     // "fp16" | "int8"
  std::vector<int> seq_buckets;  // S buckets compiled for the layers
  int ane_layers = 0;            // layers [0, ane_layers) on the ANE, the rest on the CPU
  bool lm_head_on_ane = false;
  int lm_head_chunks = 0;  // LM-head programs (0 when the head is on the CPU)
  int programs = 0;        // programs loaded (compiled or from the cache)
  int compiles = 0;        // compiles spent against the budget (cache hits excluded)
  int cache_hits = 0;      // programs loaded from the on-disk cache without compiling
  int compile_budget = 0;
  int programs_per_decode_token = 0;  // evaluations per decoded token: 2 per ANE layer + chunks
  double build_ms = 0;                // MIL text + weight blob generation (incl. dequantisation)
  double compile_ms = 0;              // Runtime::compile calls (compile or cache load)
  int64_t weight_bytes = 0;           // weight blob bytes of all loaded programs
  double prescale_min = 0, prescale_max = 0;  // RMSNorm prescales chosen over all programs
  double self_check_rel_error = -1;  // device vs simulator, worst program; -1: not run
  int self_check_programs = 0;       // programs the self-check ran (one dispatch each)
  std::string declined;  // non-empty: the self-check failed, why ("device disagrees ...");
                         // the engine must then drop the backend and serve on the CPU
};

// Owns the runtime, the programs and the executors it installed on the Transformer; destroying it
// hands every layer and the head back to the CPU. Not thread-safe (the engine's driver thread).
class AneBackend {
 public:
  virtual ~AneBackend() = default;
  virtual const AneBackendStats& stats() const = 0;
};

// Builds and compiles every program (all within the compile budget), then installs the layer and
// head executors on `tf`. `weights`, `tf` and `pool` must outlive the backend. Throws anelm::Error:
// kResourceExhausted when the model cannot fit the budget and cpu_remainder is false (the message
// gives the arithmetic), kInvalidArgument for bad buckets, kInternal when a program fails to build.
std::unique_ptr<AneBackend> make_ane_backend(const ModelConfig& cfg, const ModelWeights& weights,
                                             Transformer& tf, ThreadPool& pool,
                                             const AneBackendOptions& opts);

}  // namespace anelm::engine
