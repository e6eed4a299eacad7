// The one plain model configuration: parsed once from GGUF metadata or HF config.json, validated, then read-only.
#pragma once

#include <string>
#include <vector>

#include "engine/kernels/dtype.h"

namespace anelm::engine {

enum class Arch { kLlama, kQwen2, kQwen3, kQwen35, kGranite, kSmolLM3, kPhi3, kGemma3, kGpt2, kBert, kNomicBert };

const char* arch_name(Arch a);

// How an embedding is pooled from the final hidden states (after the output norm); the values are
// llama.cpp's llama_pooling_type, as GGUF stores them in `<arch>.pooling_type`.
// kRank: a reranker (Qwen3-Reranker): the last token's state through the classifier head
// (cls.output), softmaxed; its first value is the relevance score.
enum class Pooling { kNone = 0, kMean = 1, kCls = 2, kLast = 3, kRank = 4 };
const char* pooling_name(Pooling p);

// Llama-3's rope scaling (transformers' _compute_llama3_parameters) as per-pair divisors of the
// RoPE frequency, as llama.cpp's converter writes them to rope_freqs: wavelengths beyond
// old_ctx / low_freq_factor slowed by `factor`, below old_ctx / high_freq_factor kept, blended between.
std::vector<float> llama3_rope_freq_factors(double theta, int rope_dim, double factor, double low_freq_factor,
                                            double high_freq_factor, double old_ctx);

// Upper bounds validate() enforces, far above any real checkpoint, so that every size derived from a
// config (q_dim, kv_dim, tensor bytes, KV cache and activation buffers) is computed without overflow.
struct ModelLimits {
  static constexpr int kMaxLayers = 4096;
  static constexpr int kMaxHeads = 65536;       // n_heads, n_kv_heads
  static constexpr int kMaxDim = 1 << 20;       // d_model, d_ff, head_dim, q_dim, kv_dim, rope_dim
  static constexpr int kMaxVocab = 1 << 24;
  static constexpr int kMaxCtx = 1 << 30;       // max_ctx (trained context; a run may use less)
};

// A decoder layer's token mixer; the FFN after it is the same SwiGLU for every kind. The CPU
// executor holds one implementation per kind (engine/mixers/), so a new kind is a new file.
enum class Mixer : uint8_t { kAttention, kDeltaNet };
const char* mixer_name(Mixer m);

// The gate activation of the gated FFN: SwiGLU's SiLU, or GeGLU's tanh-approximated GELU (Gemma 3).
enum class FfnAct : uint8_t { kSilu, kGeluTanh };

// Gated DeltaNet (Qwen3.5's linear attention): N_k key heads of d_k, N_v value heads of d_v
// (N_v % N_k == 0; value head j reads key head key_head(j)), a causal
// depthwise conv of conv_kernel taps over the [q | k | v] channels.
struct DeltaNetDims {
  int n_k_heads = 0;
  int n_v_heads = 0;
  int d_k = 0;
  int d_v = 0;
  int conv_kernel = 0;
  // Value head j reads key head j / (N_v / N_k) (HF's repeat_interleave order) instead of the GGUF's
  // j % N_k (llama.cpp's converter re-orders the value heads into that tiled order).
  bool grouped_heads = false;
  int key_head(int v_head) const { return grouped_heads ? v_head / (n_v_heads / n_k_heads) : v_head % n_k_heads; }
  int key_dim() const { return n_k_heads * d_k; }
  int value_dim() const { return n_v_heads * d_v; }
  int conv_dim() const { return 2 * key_dim() + value_dim(); }
  // Floats of one layer's recurrent state per sequence: conv history, then the delta-rule matrices.
  int64_t conv_state_floats() const { return static_cast<int64_t>(conv_kernel - 1) * conv_dim(); }
  int64_t delta_state_floats() const { return static_cast<int64_t>(n_v_heads) * d_k * d_v; }
};

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string name;            // human-readable model name (general.name or directory name)
  int n_layers = 0;
  int d_model = 0;             // hidden size
  int n_heads = 0;
  int n_kv_heads = 0;          // grouped-query attention: n_heads % n_kv_heads == 0
  int head_dim = 0;            // usually d_model / n_heads
  int d_ff = 0;                // SwiGLU intermediate size
  int vocab_size = 0;
  int max_ctx = 0;             // trained context length
  float rms_eps = 1e-6f;
  float rope_theta = 10000.0f;
  int rope_dim = 0;            // rotated dims per head (== head_dim for supported models)
  RopeLayout rope_layout = RopeLayout::kHalf;
  bool qkv_bias = false;       // Qwen2 has biases on Q, K, V projections
  bool qk_norm = false;        // Qwen3: RMSNorm over each head of Q and K (before RoPE)
  bool tie_embeddings = false; // LM head shares the token embedding
  int bos_id = -1;             // -1: none
  std::vector<int> eos_ids;    // end-of-generation ids (EOS, EOT, ...)
  // GGUF `<arch>.pooling_type`: kNone for a generative model; anything else marks an embedding
  // model (Qwen3-Embedding: kLast), which the server serves on /v1/embeddings without --embeddings.
  Pooling pooling = Pooling::kNone;
  int n_cls_out = 0;           // kRank: rows of the classifier head (Qwen3-Reranker: 2, "yes" and "no")

  // Hybrid models (Qwen3.5): the mixer of every layer, [n_layers]; empty means all attention.
  std::vector<Mixer> mixers;
  DeltaNetDims deltanet;        // set when any layer is kDeltaNet
  // Qwen3.5's gated attention: the Q projection yields [query | gate] per head (2 * q_dim rows)
  // and the attention output is multiplied by sigmoid(gate) before the output projection.
  bool attn_output_gate = false;

  // Granite's multipliers (engine/family_granite.cpp); 1 (attention_scale 0) leaves Llama's layer:
  // the token embeddings times embedding_scale, every mixer and FFN output times residual_scale
  // before its residual add, attention scores times attention_scale instead of 1/sqrt(head_dim),
  // logits divided by logit_scale.
  float embedding_scale = 1.0f;
  float residual_scale = 1.0f;
  float attention_scale = 0.0f;
  float logit_scale = 1.0f;
  // Attention layers that use no positions (NoPE: no RoPE on q and k), [n_layers]; empty means
  // every layer rotates (SmolLM3: every 4th layer is NoPE).
  std::vector<bool> nope_layers;

  // Gemma 3 (engine/family_gemma3.cpp): the FFN's activation; RMSNorms on the mixer's and the FFN's
  // outputs before their residual adds (LayerWeights attn_post_norm, ffn_post_norm); sliding-window
  // layers, [n_layers] (empty: none), where a query at position p attends to the keys at
  // (p - sliding_window, p] and RoPE uses base rope_theta_swa without rope_freq_factors (the other,
  // global layers use rope_theta and the factors).
  FfnAct ffn_act = FfnAct::kSilu;
  bool post_norms = false;
  int sliding_window = 0;
  std::vector<bool> swa_layers;
  float rope_theta_swa = 10000.0f;

  // GPT-2 (engine/family_gpt2.cpp): LayerNorms with biases instead of RMSNorms (rms_eps is their
  // epsilon); a plain up -> GELU -> down FFN with biases (no gate); token embeddings plus learned
  // absolute position embeddings (ModelWeights::pos_embd, max_ctx rows; no RoPE: every layer NoPE).
  bool layer_norm = false;
  bool gated_ffn = true;
  bool learned_positions = false;
  bool proj_bias = false;      // biases on attn_output, ffn_up and ffn_down (GPT-2, BERT; not nomic-bert)

  // BERT (engine/family_bert.cpp), an encoder that only embeds: bidirectional attention (causal
  // false: every token of an input attends every token of it, so an input runs whole in one pass);
  // post-LN layers (norm_after_residual: each LayerNorm applies to x + branch, with the attn_norm and
  // ffn_norm weights, and there is no output norm); a LayerNorm on the input embeddings (embd_norm,
  // ModelWeights::embd_norm) after the token, position and token-type rows are summed.
  bool causal = true;
  bool norm_after_residual = false;
  bool embd_norm = false;
  int n_token_types = 0;       // rows of ModelWeights::type_embd (0: none)

  Mixer mixer(int layer) const { return mixers.empty() ? Mixer::kAttention : mixers[static_cast<size_t>(layer)]; }
  bool rope(int layer) const { return nope_layers.empty() || !nope_layers[static_cast<size_t>(layer)]; }
  bool swa(int layer) const { return !swa_layers.empty() && swa_layers[static_cast<size_t>(layer)]; }
  int window(int layer) const { return swa(layer) ? sliding_window : 0; }  // 0: every earlier position
  float attn_scale() const;          // attention_scale, else 1/sqrt(head_dim)
  bool recurrent() const;            // any layer keeps a recurrent state (prefixes cannot be cut back)
  int n_attention_layers() const;    // layers with a KV cache

  // Divisors of each RoPE pair's frequency (rope_dim / 2), empty when unscaled: GGUF rope_freqs, or
  // computed from HF rope_scaling {"rope_type": "llama3", factor, low/high_freq_factor,
  // original_max_position_embeddings}.
  std::vector<float> rope_freq_factors;
  const float* rope_factors() const { return rope_freq_factors.empty() ? nullptr : rope_freq_factors.data(); }
  // Phi-3's LongRoPE (engine/family_phi3.cpp): two sets of rope_dim / 2 divisors, `long` for a run
  // context beyond rope_orig_ctx and `short` within it; select_rope_factors copies one into
  // rope_freq_factors once the context is known (short until then). rope_attn_factor multiplies the
  // cosines and sines of the rotated dims (1: none).
  std::vector<float> rope_factors_long;
  std::vector<float> rope_factors_short;
  int rope_orig_ctx = 0;
  float rope_attn_factor = 1.0f;

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  int group_size() const { return n_heads / n_kv_heads; }

  // Throws anelm::Error(kFormat) listing every problem with field names and values; `source` names the file.
  void validate(const std::string& source) const;
};

}  // namespace anelm::engine
