// What the ANE backend and `anelm compile` share: placement of every program within the compile
// budget, and building a layer's or an LM-head chunk's program from engine weights.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ane_bridge/mil_blocks.h"
#include "ane_bridge/status.h"
#include "engine/ane/ane_calibrate.h"
#include "engine/ane/ane_executor.h"
#include "engine/model_config.h"
#include "engine/weights.h"

namespace anelm::engine::ane_programs {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0);

// Throws Error(kInternal) naming `what` + `name` when s failed. `what` is a C string so the
// per-token paths build no message unless something failed.
void check(const ane::Status& s, const char* what, const std::string& name = {});

// Where every program goes. The same rules serve the backend, the plan and the export: within the
// compile budget and within o.max_live_programs loaded at once (prefill buckets are dropped first,
// then layers and the head go to the CPU when cpu_remainder allows).
struct Placement {
  std::vector<std::int64_t> buckets;     // ascending; buckets[0] == 32
  int ane_layers = 0;                    // layers [0, ane_layers) on the ANE
  std::vector<ane::LmHeadChunk> chunks;  // empty: head on the CPU
  int total = 0;                         // cold-start compiles
  int live = 0;                          // programs loaded at once (all of them stay resident)
  int dispatches_per_token = 0;          // evaluations per decoded token: 2 per layer + chunks
  std::string cpu_note;                  // what stays on the CPU ("" when nothing)
};
Placement place_programs(const ModelConfig& cfg, const AneBackendOptions& o, int budget);

// `rows` rows of a [rows][cols] weight from `row0`, any storage type, as f32.
std::vector<float> to_f32(const TensorView& t, std::int64_t row0 = 0, std::int64_t rows = -1);

// One layer's weights dequantised once, shared by the programs of every S bucket. Per kind:
// attention (Qwen2/Llama; Qwen3.5's gated attention with its Q rows split into queries and gates)
// or Gated DeltaNet (Qwen3.5: the four in-projections and ssm_out as `wo`).
struct LayerF32 {
  Mixer kind = Mixer::kAttention;
  std::vector<float> attn_norm, wq, wk, wv, bq, bk, bv, wo, ffn_norm, wg, wu, wd;
  std::vector<float> wq_gate;                          // gated attention: [q_dim][D], else empty
  std::vector<float> dn_qkv, dn_z, dn_beta, dn_alpha;  // Gated DeltaNet in-projections
  // GPT-2's LayerNorm and projection biases, Gemma 3's post-norms (empty for other families).
  std::vector<float> attn_norm_b, bo, ffn_norm_b, b_up, b_down;
  std::vector<float> attn_post_norm, ffn_post_norm;
  LayerF32(const ModelConfig& cfg, int layer, const LayerWeights& L);
};

// Program A's output channels for `layer`: attention q | k | v (| gate), DeltaNet
// qkv | z | beta | alpha.
std::int64_t ane_in_width(const ModelConfig& cfg, int layer);
// Program B's first input part for `layer`: the mixer output its output projection reads
// (attention q_dim, DeltaNet value_dim).
std::int64_t ane_mixer_width(const ModelConfig& cfg, int layer);
// The kind strings and names of a layer's programs: "attn_in"/"ffn", or "dn_in"/"dn_ffn".
const char* ane_layer_kind(const ModelConfig& cfg, int layer, bool ffn);

// A layer's shapes for the block builders (layer < 0: the head's, without a mixer width), and a
// program's options (name from kind, index and S; fp16 or int8; the norm's prescale).
ane::LayerShapes layer_shapes(const ModelConfig& c, int layer = -1);
ane::BlockOptions block_opts(const std::string& kind, int index, std::int64_t seq, bool int8,
                             double prescale);

// Program A (ffn == false) or B of `layer` for bucket `seq`, for the layer's kind.
// update_only: program B returns the layer's update, not the next residual (fp32_residual).
ane::BlockProgram build_layer_block(const ModelConfig& cfg, const LayerF32& w, int layer, bool ffn,
                                    std::int64_t seq, bool int8, const AnePrescales& ps,
                                    bool update_only = false);

// LM-head chunk `index` at S = 32 with the final norm fused.
ane::BlockProgram build_head_block(const ModelConfig& cfg, const ModelWeights& w,
                                   const std::vector<float>& out_norm, const ane::LmHeadChunk& c,
                                   int index, bool int8, double prescale);

}  // namespace anelm::engine::ane_programs
