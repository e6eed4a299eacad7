// Public kernel API: the KernelTable of function pointers, one per ISA, chosen once at start-up.
// Kernels are free functions over raw pointers and sizes: no allocation, exceptions or logging.
#pragma once

#include <cstdint>

#include "engine/kernels/isa.h"
#include "engine/kernels/dtype.h"

namespace anelm::engine::kernels {

// Y[i][r] = sum_c W[r][c] * X[i][c] for rows r in [r0, r1) and tokens i in [0, n).
// W [rows][cols] row-major of the table slot's type; X [n][cols] f32 (float weights) or xq, the
// quantised activations: [n][cols/32] QBlock8 (uses_q8_activations) or [n][cols/256] QBlockK
// (uses_q8k_activations); Y row stride ldy floats. Threads call it on disjoint row ranges of the same Y.
using MatmulFn = void (*)(const void* w, int64_t cols, const float* x, const void* xq, int n,
                          float* __restrict y, int64_t ldy, int64_t r0, int64_t r1);

// Attention of one query head over n_pos cached positions: k, v [n_pos][head_dim] of type kv
// (F32 or F16); scores [n_pos] scratch; out [head_dim] = softmax(scale * q.k) . v.
using AttendFn = void (*)(const float* q, const void* k, const void* v, DType kv, int n_pos,
                          int head_dim, float scale, float* __restrict scores,
                          float* __restrict out);

// Causal attention of n_q consecutive query tokens sharing one KV head (one GQA group of `group`
// query heads). Token t sits at position pos0 + t and attends over cached positions [0, pos0 + t]
// (window > 0: only (pos0 + t - window, pos0 + t], llama.cpp's LLAMA_SWA_TYPE_STANDARD mask);
// its head h reads q[t * ld + h * head_dim ..] and writes out[t * ld + h * head_dim ..].
// k, v: [>= pos0 + n_q - kv_first][head_dim] of type kv (F32 or F16), the KvCache block of that head;
// row 0 holds position kv_first (0, or with a window at most the first token's first position: a
// windowed layer's ring of recent positions, see KvCache), and no position below it is read.
struct AttentionArgs {
  const float* q = nullptr;
  float* out = nullptr;
  int64_t ld = 0;  // floats between consecutive tokens' rows in q and out
  const void* k = nullptr;
  const void* v = nullptr;
  DType kv = DType::kF16;
  int n_q = 0;
  int pos0 = 0;
  int group = 1;
  int head_dim = 0;
  float scale = 1.0f;
  int window = 0;  // > 0: a sliding window of that many positions (Gemma 3's local layers)
  int kv_first = 0;  // the position in row 0 of k and v (<= max(0, pos0 - window + 1) with a window)
};

// Scratch one attend_causal call needs, in floats (an upper bound for every ISA's table).
// The kernels hold up to 64 query rows (token x head) and 32 K/V positions at a time.
constexpr int64_t kAttentionMaxRows = 64;
constexpr int64_t kAttentionKvBlock = 32;
constexpr int64_t attention_scratch_floats(int head_dim) {
  return 2 * head_dim * kAttentionMaxRows + 4 * kAttentionMaxRows + 2 * kAttentionKvBlock * head_dim +
         kAttentionKvBlock * kAttentionMaxRows;
}

// scratch: attention_scratch_floats(head_dim) floats, owned by the calling thread.
using AttendCausalFn = void (*)(const AttentionArgs& a, float* __restrict scratch);

// The gated delta rule of one Gated DeltaNet value head over n consecutive tokens of a sequence
// (Qwen3.5; the recurrence of shared/docs/qwen35-architecture.md §5.3 (5)). Per token t:
//   S <- exp(g[t]) S;  delta = beta[t] (v_t - S^T k_t);  S <- S + k_t delta^T;  out_t = S^T q_t
// q_t, k_t: d_k floats (q already L2-normalised and scaled, k L2-normalised), v_t and out_t: d_v.
// state: [d_v][d_k], i.e. S transposed (row b holds the keys' weights for value dim b), updated in
// place. Strides are in floats; g and beta are read at t * ld_gb.
struct DeltaRuleArgs {
  float* state = nullptr;
  const float* q = nullptr;
  const float* k = nullptr;
  int64_t ld_qk = 0;
  const float* v = nullptr;
  int64_t ld_v = 0;
  const float* g = nullptr;
  const float* beta = nullptr;
  int64_t ld_gb = 0;
  float* out = nullptr;
  int64_t ld_out = 0;
  int n = 0;
  int d_k = 0;
  int d_v = 0;
};

// Causal depthwise convolution of n consecutive tokens' `channels` inputs followed by SiLU:
//   out[t][c] = silu(sum_i w[c][i] * in[t - taps + 1 + i][c])
// where inputs before the first token come from state [taps - 1] rows of `channels` at stride
// ld_state (oldest first), which is then replaced by the last taps - 1 inputs. x: n rows at stride
// ld_x; out may not alias x. A caller may split the channels of one conv across threads.
struct ConvArgs {
  const float* x = nullptr;
  int64_t ld_x = 0;
  int n = 0;
  int channels = 0;
  const float* w = nullptr;  // [channels][taps]
  int taps = 0;
  float* state = nullptr;
  int64_t ld_state = 0;
  float* out = nullptr;
  int64_t ld_out = 0;
};

struct KernelTable {
  Isa isa = Isa::kScalar;
  MatmulFn matmul[kNumDTypes] = {};  // indexed by dtype_index(weight type)
  // From this many tokens, the type's matmul given the float activations (x non-null) multiplies
  // bf16-rounded weights and activations with fp32 sums (AMX-BF16 prefill, amx_bf16-inl.h); 0: never.
  int bf16_min_tokens[kNumDTypes] = {};
  // X [n] f32 -> n/32 QBlock8 (n % 32 == 0); bit-identical to ref::quantize_q8.
  void (*quantize_q8)(const float* x, int64_t n, QBlock8* __restrict out) = nullptr;
  // X [n] f32 -> n/256 QBlockK (n % 256 == 0); bit-identical to ref::quantize_q8k.
  void (*quantize_q8k)(const float* x, int64_t n, QBlockK* __restrict out) = nullptr;
  // out[cols] = W[row][:] as f32 (embedding lookup).
  void (*dequantize_row)(const void* w, DType t, int64_t row, int64_t cols,
                         float* __restrict out) = nullptr;
  void (*rmsnorm)(const float* x, const float* w, float eps, int n, float* out) = nullptr;
  // LayerNorm with weight and bias (GPT-2), as ref::layer_norm; out may alias x.
  void (*layer_norm)(const float* x, const float* w, const float* b, float eps, int n, float* out) = nullptr;
  // Rotates the first rope_dim dims of each head by one position's angles: cs holds rope_dim/2
  // cosines then rope_dim/2 sines (rope_cos_sin in rope.h); pairs per RopeLayout, as ref::rope.
  void (*rope)(float* x, int n_heads, int head_dim, int rope_dim, RopeLayout layout, const float* cs) = nullptr;
  void (*softmax)(float* x, int n) = nullptr;
  // max(x) + log(sum(exp(x - max(x)))) over x[0..n): the log-softmax normaliser of a logit row.
  float (*log_sum_exp)(const float* x, int n) = nullptr;
  void (*silu_mul)(const float* gate, const float* up, int n, float* out) = nullptr;
  // out[i] = gelu_tanh(gate[i]) * up[i] (GeGLU, as ref::gelu_mul); out may alias gate.
  void (*gelu_mul)(const float* gate, const float* up, int n, float* out) = nullptr;
  // out[i] = gelu_tanh(x[i]) (GPT-2's ungated FFN, as ref::gelu); out may alias x.
  void (*gelu)(const float* x, int n, float* out) = nullptr;
  void (*add)(const float* a, const float* b, int n, float* out) = nullptr;  // out may alias a
  AttendFn attend_head = nullptr;
  // Blocked causal attention with an online softmax (flash-attention style): every K/V row is read
  // once per pass of up to kAttentionMaxRows query rows, shared by the heads of the group. Prefill
  // (n_q > 1) and decode (n_q = 1: the group's heads are the rows) use the same kernel.
  AttendCausalFn attend_causal = nullptr;
  // KV cache stores: dst[n] = src[n] converted (F16 round to nearest even) or copied (F32).
  void (*store_kv)(const float* src, DType kv, int n, void* __restrict dst) = nullptr;
  void (*delta_rule)(const DeltaRuleArgs& a) = nullptr;
  void (*conv_silu)(const ConvArgs& a) = nullptr;
};

// The table for `isa`, or nullptr when that path is not compiled in or not supported here.
const KernelTable* kernel_table(Isa isa);
// The table of selected_isa(), fixed for the life of the process; on AMX with ANELM_AMX_BF16=1,
// amx_bf16_table(); with ANELM_F16_ACTIVATIONS=f16, with_f16_rounded_activations of it.
const KernelTable& active_kernels();
// The AMX table with the matmuls of many tokens (bf16_min_tokens: prefill chunks) on AMX-BF16 tiles:
// faster prefill of long prompts, but every weight and activation there is rounded to bf16, so its
// logits leave llama.cpp's (whose AMX and VNNI paths multiply the same int8 activations as the int8
// tiles) by more than llama.cpp's own flash-attention on/off differences: on prompts of 700 tokens the
// GPT-2, Phi-3 and SmolLM3 Q8_0 parity suites fail with it. Hence opt-in (ANELM_AMX_BF16=1).
// nullptr where the CPU lacks AMX-BF16 or AMX is not compiled in.
const KernelTable* amx_bf16_table();
// `t` with ggml's f16 roundings, a diagnostic that reproduces llama.cpp's: its F16-weight matmul fed
// activations rounded to f16 first (F16's vec_dot_type), attention over an F16 cache fed queries
// rounded to f16 (ggml converts Q to K's type), and GELU / GeGLU through ggml's f16 table
// (f16(gelu(f16(x))), GGML_GELU_FP16). By default anelm multiplies the f32 activations and computes
// GELU in f32, which lands closer to the exact result (docs/parity.md). One such table per process.
KernelTable with_f16_rounded_activations(const KernelTable& t);

// Per-ISA table builders (defined in kernels_<isa>.cpp; absent ones are not compiled).
const KernelTable& scalar_kernel_table();
const KernelTable& avx2_kernel_table();
const KernelTable& avx512_kernel_table();
const KernelTable& neon_kernel_table();
const KernelTable& amx_kernel_table();
const KernelTable* amx_bf16_kernel_table();  // nullptr without AMX-BF16
// True when the CPU has AMX-TILE and AMX-INT8 and the kernel granted this process the tile state
// (Linux arch_prctl ARCH_REQ_XCOMP_PERM; asked once).
bool amx_usable();

}  // namespace anelm::engine::kernels
