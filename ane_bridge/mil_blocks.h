// Fused transformer blocks as MIL programs from plain shape structs: norm+QKV, Wo+FFN, LM head.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ane_bridge/program.h"
#include "ane_bridge/surface_layout.h"
#include "ane_bridge/weight_blob.h"

namespace anelm::ane {

// Shapes of one decoder layer (Qwen2/Llama family). No engine types: the engine copies its config.
struct LayerShapes {
  std::int64_t d_model = 0;     // D
  std::int64_t n_heads = 0;     // H
  std::int64_t n_kv_heads = 0;  // KVH
  std::int64_t head_dim = 0;    // HD
  std::int64_t d_ff = 0;        // F
  double rms_eps = 1e-6;
  // Input width of the output projection program B starts with: 0 means q_dim (attention); a
  // Gated DeltaNet layer's ssm_out reads its value_dim (engine/ane/ane_programs.h).
  std::int64_t mixer_dim = 0;

  std::int64_t q_dim() const { return n_heads * head_dim; }
  std::int64_t mix_dim() const { return mixer_dim > 0 ? mixer_dim : q_dim(); }
  std::int64_t kv_dim() const { return n_kv_heads * head_dim; }
  std::int64_t qkv_dim() const { return q_dim() + 2 * kv_dim(); }
};

enum class WeightFormat {
  kFp16,  // weights rounded to fp16 and baked as BLOBFILE consts
  kInt8,  // symmetric per-output-channel int8 + fp16 scale vector, constexpr_affine_dequantize
};

// y = W x (+ b) in the HF nn.Linear layout: weight [out][in] row-major (= conv [out, in, 1, 1],
// §3.4), bias [out] or empty.
struct LinearWeights {
  std::span<const float> weight;
  std::span<const float> bias;
};

// Program A of a layer: RMSNorm(x) * gain, then stacked Q, K, V projections (+ biases), and for
// gated attention (Qwen3.5) the output gate's rows after them.
struct AttnInputWeights {
  std::span<const float> norm_gain;  // [D] input_layernorm
  LinearWeights q;                   // [H*HD][D]
  LinearWeights k;                   // [KVH*HD][D]
  LinearWeights v;                   // [KVH*HD][D]
  LinearWeights gate = {};           // [H*HD][D] or empty (no output gate)
};

// Program A of a Gated DeltaNet layer (Qwen3.5): RMSNorm(x) * gain, then its four in-projections
// stacked. Row counts come from the spans (each a multiple of D): conv_dim, value_dim, N_v, N_v.
struct DeltaNetInputWeights {
  std::span<const float> norm_gain;  // [D] input_layernorm
  std::span<const float> qkv;        // [conv_dim][D] attn_qkv: q | k | v, the conv's input
  std::span<const float> z;          // [value_dim][D] attn_gate, the output gate
  std::span<const float> beta;       // [N_v][D] ssm_beta
  std::span<const float> alpha;      // [N_v][D] ssm_alpha
};

// Program B of a layer: h = x + Wo a; y = h + Wd (silu(Wg n) * Wu n), n = RMSNorm(h) * gain.
struct FfnBlockWeights {
  LinearWeights o;                   // [D][H*HD]
  std::span<const float> norm_gain;  // [D] post_attention_layernorm
  LinearWeights gate;                // [F][D]
  LinearWeights up;                  // [F][D]
  LinearWeights down;                // [D][F]
};

struct BlockOptions {
  // The S bucket: the declared spatial size. Must be a multiple of 32 so fp16 rows are 64 bytes
  // (§4.3); decode uses S = 32 with the token in lane 0.
  std::int64_t seq_len = kDecodeSeqLen;
  WeightFormat format = WeightFormat::kFp16;
  // RMSNorm runs on fp16 storage: x is scaled by this power of two before squaring so that x^2 and
  // the channel sum stay finite (|x * p| < 256, D * rms(x * p)^2 < 65504) while the squares of
  // ordinary channels stay fp16 normals (|x * p| >= 2^-7; smaller squares flush to zero on an FTZ
  // chip). The engine calibrates it per program (engine/ane/ane_calibrate.h); 1 suits rms ~0.1-2.
  double rms_prescale = 1.0;
  // Program B only. false: the output is the next residual, x + Wo a + ffn (fp16, so the residual
  // stream is rounded to fp16 in every layer; a massive activation of ~1e3 keeps an ulp of 0.5).
  // true: the output is only the layer's update, Wo a + ffn, which the caller adds to a residual it
  // keeps in fp32. Same op count and dispatches; x still comes in (fp16) for h's norm.
  bool update_only = false;
  // Dtype code of int8 weight payloads (weight_blob.h): 1 as the seeds write (default), 4 per CT.
  std::uint32_t int8_blob_dtype_code = kInt8BlobDtypeCodeSeeds;
  // Program name (directory name, prog-tag in buildInfo so identifiers differ, §1.11).
  std::string name;
};

// A channel range of an I/O tensor, e.g. "q" = [0, 896) of the QKV output.
struct IoSegment {
  std::string name;
  std::int64_t channel_offset = 0;
  std::int64_t channels = 0;
};

struct IoDesc {
  std::string name;  // MIL variable name
  MilType type;      // fp16 [1, C, 1, S]
  std::vector<IoSegment> segments;
  SurfaceLayout layout() const { return SurfaceLayout::for_type(type); }
};

// A block ready to compile or export.
struct BlockProgram {
  ProgramSource source;            // name, MIL text, weights/*.bin files
  std::string kind;                // "attn_in", "ffn", "dn_in", "dn_ffn", "lm_head", "final_norm"
  int layer = -1;                  // decoder layer, or -1
  std::vector<IoDesc> inputs;      // one input
  std::vector<IoDesc> outputs;     // one output (results concatenated on channels, §4.5)
  std::int64_t seq_len = 0;        // S
  std::uint64_t weight_bytes = 0;  // sum of the blob file sizes
  WeightFormat format = WeightFormat::kFp16;
};

// Program A. Input x [1, D, 1, S] (residual stream); output y [1, Qd + 2*KVd, 1, S] with segments
// q, k, v (stacked conv, §2.9; biases as a separate add). The norm gain is folded into the rows of
// Wq/Wk/Wv (W[o][i] * g[i] in fp32, rounded once) instead of a separate multiply.
Status build_attn_input_block(const LayerShapes& shapes, const AttnInputWeights& w,
                              const BlockOptions& opts, BlockProgram* out);

// Program A of a Gated DeltaNet layer. Input x [1, D, 1, S]; output y [1, conv_dim + value_dim +
// 2 N_v, 1, S] with segments qkv, z, beta, alpha (no biases: Qwen3.5 has none). The conv, the
// gates and the recurrence run on the CPU.
Status build_deltanet_input_block(const LayerShapes& shapes, const DeltaNetInputWeights& w,
                                  const BlockOptions& opts, BlockProgram* out);

// Program B. Input x [1, M + D, 1, S] with M = shapes.mix_dim(): channels [0, M) the mixer output
// before its output projection (attention heads concatenated, or a DeltaNet layer's gated-normed
// values), [M, M + D) the residual stream. Output y [1, D, 1, S]: the next residual, or with
// opts.update_only the update to add to it.
Status build_ffn_block(const LayerShapes& shapes, const FfnBlockWeights& w,
                       const BlockOptions& opts, BlockProgram* out);

// LM head chunks of at most `max_rows` vocabulary rows (16384: the strictest channel limit, §5.1).
struct LmHeadChunk {
  std::int64_t row_begin = 0;
  std::int64_t rows = 0;
};
std::vector<LmHeadChunk> plan_lm_head_chunks(std::int64_t vocab, std::int64_t max_rows = 16384);

// One LM head chunk: input x [1, D, 1, S], output logits [1, rows, 1, S] for vocabulary rows
// [row_begin, row_begin + rows) of `head_weight` ([vocab][D]; the tied embedding for Qwen2.5).
// With a non-empty `final_norm_gain` the final RMSNorm is fused into the chunk (recomputed per
// chunk: D-wide, negligible next to the conv) and the gain is folded into the weights, so no extra
// program is needed.
Status build_lm_head_chunk(const LayerShapes& shapes, std::span<const float> head_weight,
                           std::int64_t vocab, const LmHeadChunk& chunk,
                           std::span<const float> final_norm_gain, const BlockOptions& opts,
                           BlockProgram* out);

// Standalone final RMSNorm program ([1, D, 1, S] -> [1, D, 1, S]) for when the head stays on the
// CPU.
Status build_final_norm(const LayerShapes& shapes, std::span<const float> gain,
                        const BlockOptions& opts, BlockProgram* out);

// Symmetric per-row int8 quantization used by WeightFormat::kInt8: scale[o] = fp16(max|w[o,:]| /
// 127) (1 when the row is zero), q = clamp(round_half_even(w / scale), -127, 127). The ANE folds
// fp16(scale * q) at compile time.
struct QuantizedRows {
  std::vector<std::int8_t> q;        // [rows][cols]
  std::vector<std::uint16_t> scale;  // [rows] fp16 bits
};
QuantizedRows quantize_rows_int8(std::span<const float> w, std::int64_t rows, std::int64_t cols);

// Program budget for a whole model (§1.10): per S bucket two programs per layer; the LM head runs
// once per generated token on the S = 32 programs only (prefill needs logits for its last token).
struct ModelShapes {
  LayerShapes layer;
  std::int64_t n_layers = 0;
  std::int64_t vocab = 0;
};
struct ProgramPlanOptions {
  std::vector<std::int64_t> seq_buckets = {kDecodeSeqLen};  // must contain 32 (decode)
  bool lm_head_on_ane = true;
  bool fuse_final_norm = true;  // false: one extra final_norm program
  std::int64_t max_lm_head_rows = 16384;
};
struct ProgramPlan {
  int programs_per_layer = 2;
  int layer_programs = 0;  // n_layers * 2 * buckets
  int lm_head_programs = 0;
  int final_norm_programs = 0;
  int total_programs = 0;  // compiles on a cold start
  int decode_dispatches_per_token = 0;
};
ProgramPlan plan_programs(const ModelShapes& model, const ProgramPlanOptions& opts);

// Conventional program names: "L07_attn_in_s32", "L07_ffn_s128", "L04_dn_in_s32",
// "L04_dn_ffn_s32", "lm_head_03_s32", "final_norm_s32".
std::string block_name(const std::string& kind, int index, std::int64_t seq_len);

}  // namespace anelm::ane
