// make_model: seeded random Qwen2/Llama weights streamed into a GGUF file or an HF safetensors directory.
#include "tools/model_maker.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/families.h"
#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "server/rerank_api.h"
#include "tools/model_maker_plan.h"
#include "tools/model_maker_tokenizer.h"
#include "engine/kernels/quantize.h"
#include "engine/safetensors.h"

namespace anelm::tools {

using namespace engine;

namespace fs = std::filesystem;

namespace {

// Llama-3.2's rope_scaling: factor, low_freq_factor, high_freq_factor, original_max_position_embeddings.
constexpr double kLlama32Scaling[4] = {32, 1, 4, 8192};

ModelConfig shape_config(const MakeModelOptions& o) {
  if (o.arch == Arch::kQwen35) {
    ModelConfig c = qwen35_shape_config(o.shape, o.layers);
    c.name = "qwen35-" + o.shape + "-random-seed" + std::to_string(o.seed);
    return c;
  }
  if (o.arch == Arch::kGranite || o.arch == Arch::kSmolLM3 || o.arch == Arch::kPhi3 || o.arch == Arch::kGemma3 ||
      o.arch == Arch::kGpt2 || o.arch == Arch::kBert || o.arch == Arch::kNomicBert) {
    if (o.format != ModelFormat::kGguf && o.arch != Arch::kPhi3 && o.arch != Arch::kGemma3 && o.arch != Arch::kGpt2) {
      throw Error(ErrorKind::kInvalidArgument, std::string("make_model: ") + arch_name(o.arch) + " is written as GGUF only");
    }
    ModelConfig c = o.arch == Arch::kGranite   ? granite_shape_config(o.shape, o.layers)
                    : o.arch == Arch::kPhi3    ? phi3_shape_config(o.shape, o.layers)
                    : o.arch == Arch::kGemma3  ? gemma3_shape_config(o.shape, o.layers)
                    : o.arch == Arch::kGpt2    ? gpt2_shape_config(o.shape, o.layers)
                    : o.arch == Arch::kBert    ? bert_shape_config(o.shape, o.layers)
                    : o.arch == Arch::kNomicBert ? nomic_bert_shape_config(o.shape, o.layers)
                                               : smollm3_shape_config(o.shape, o.layers);
    c.name = std::string(arch_name(o.arch)) + "-" + o.shape + "-random-seed" + std::to_string(o.seed);
    c.pooling = o.pooling;
    if (!c.causal && c.pooling == Pooling::kNone) c.pooling = Pooling::kMean;  // an encoder only embeds
    return c;
  }
  ModelConfig c;
  c.arch = o.arch;
  const bool llama32 = o.shape.rfind("llama-3.2", 0) == 0;
  if (llama32 && o.arch != Arch::kLlama) {
    throw Error(ErrorKind::kInvalidArgument, "shape '" + o.shape + "' needs --arch llama");
  }
  if (o.shape == "tiny" || o.shape == "llama-3.2-tiny") {
    c.n_layers = 2, c.d_model = 64, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 16, c.d_ff = 128;
    c.max_ctx = 4096;
    c.tie_embeddings = o.arch != Arch::kLlama;  // llama: a separate output.weight, to cover both
  } else if (o.shape == "tiny256") {  // every row a multiple of 256: K-quants apply to all matrices
    c.n_layers = 2, c.d_model = 256, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64, c.d_ff = 512;
    c.max_ctx = 4096;
    c.tie_embeddings = o.arch != Arch::kLlama;
  } else if (o.shape == "qwen2.5-0.5b") {
    c.n_layers = 24, c.d_model = 896, c.n_heads = 14, c.n_kv_heads = 2, c.head_dim = 64, c.d_ff = 4864;
    c.max_ctx = 32768;
    c.tie_embeddings = true;
  } else if (o.shape == "llama-3.2-1b") {
    c.n_layers = 16, c.d_model = 2048, c.n_heads = 32, c.n_kv_heads = 8, c.head_dim = 64, c.d_ff = 8192;
    c.max_ctx = 131072;
  } else if (o.shape == "qwen3-0.6b") {  // head_dim 128 is not d_model / n_heads (64)
    c.n_layers = 28, c.d_model = 1024, c.n_heads = 16, c.n_kv_heads = 8, c.head_dim = 128, c.d_ff = 3072;
    c.max_ctx = 40960;
    c.tie_embeddings = true;
  } else {
    throw Error(ErrorKind::kInvalidArgument,
                "unknown model shape '" + o.shape +
                    "' (tiny | tiny256 | qwen2.5-0.5b | qwen3-0.6b | llama-3.2-1b | llama-3.2-tiny)");
  }
  if (o.layers > 0) c.n_layers = o.layers;
  c.rope_dim = c.head_dim;
  c.qkv_bias = o.arch == Arch::kQwen2;
  c.qk_norm = o.arch == Arch::kQwen3;
  c.rope_theta = o.arch == Arch::kLlama ? 10000.0f : 1000000.0f;
  c.rms_eps = o.arch == Arch::kLlama ? 1e-5f : 1e-6f;
  c.rope_layout = (o.format == ModelFormat::kGguf && o.arch == Arch::kLlama) ? RopeLayout::kInterleaved
                                                                             : RopeLayout::kHalf;
  if (llama32) {  // tied embeddings, theta 500000, rope scaling
    c.tie_embeddings = true;
    c.rope_theta = 500000.0f;
    c.rope_freq_factors = llama3_rope_freq_factors(c.rope_theta, c.rope_dim, kLlama32Scaling[0], kLlama32Scaling[1],
                                                   kLlama32Scaling[2], kLlama32Scaling[3]);
  }
  c.name = std::string(arch_name(o.arch)) + "-" + o.shape + "-random-seed" + std::to_string(o.seed);
  c.pooling = o.pooling;
  if (o.pooling == Pooling::kRank) {
    if (o.arch != Arch::kQwen3) throw Error(ErrorKind::kInvalidArgument, "make_model: --pooling rank needs --arch qwen3");
    c.n_cls_out = 2;  // Qwen3-Reranker's "yes" and "no"
  }
  return c;
}

// llama_gguf: Q/K rows in llama.cpp's converter order (Llama and the families converted as Llama).
std::vector<Plan> make_plan(const ModelConfig& c, bool llama_gguf) {
  const int64_t d = c.d_model, q = c.q_dim(), kv = c.kv_dim(), ff = c.d_ff, v = c.vocab_size;
  std::vector<Plan> p;
  // Qwen3.5's checkpoints are multimodal: the text model sits under model.language_model.
  const std::string hf_model = c.arch == Arch::kQwen35 ? "model.language_model." : "model.";
  p.push_back({"token_embd.weight", hf_model + "embed_tokens.weight", {v, d}, Kind::kEmbed});
  if (c.learned_positions) p.push_back({"position_embd.weight", "", {c.max_ctx, d}, Kind::kEmbed});  // GPT-2, BERT
  if (!c.causal) add_bert_global_plan(c, p);
  for (int l = 0; l < c.n_layers; ++l) {
    if (c.arch == Arch::kQwen35) {
      add_qwen35_block_plan(c, l, p);
      continue;
    }
    if (c.arch == Arch::kPhi3) {
      add_phi3_block_plan(c, l, p);
      continue;
    }
    if (c.arch == Arch::kGpt2) {
      add_gpt2_block_plan(c, l, p);
      continue;
    }
    if (!c.causal) {  // BERT, nomic-bert
      add_bert_block_plan(c, l, p);
      continue;
    }
    const std::string g = "blk." + std::to_string(l) + ".", h = "model.layers." + std::to_string(l) + ".";
    p.push_back({g + "attn_norm.weight", h + "input_layernorm.weight", {d}, Kind::kNorm});
    p.push_back({g + "attn_q.weight", h + "self_attn.q_proj.weight", {q, d}, Kind::kMatrix,
                 llama_gguf ? c.n_heads : 0});
    p.push_back({g + "attn_k.weight", h + "self_attn.k_proj.weight", {kv, d}, Kind::kMatrix,
                 llama_gguf ? c.n_kv_heads : 0});
    p.push_back({g + "attn_v.weight", h + "self_attn.v_proj.weight", {kv, d}, Kind::kMatrix});
    if (c.qkv_bias) {
      p.push_back({g + "attn_q.bias", h + "self_attn.q_proj.bias", {q}, Kind::kBias});
      p.push_back({g + "attn_k.bias", h + "self_attn.k_proj.bias", {kv}, Kind::kBias});
      p.push_back({g + "attn_v.bias", h + "self_attn.v_proj.bias", {kv}, Kind::kBias});
    }
    if (c.qk_norm) {
      p.push_back({g + "attn_q_norm.weight", h + "self_attn.q_norm.weight", {c.head_dim}, Kind::kNorm});
      p.push_back({g + "attn_k_norm.weight", h + "self_attn.k_norm.weight", {c.head_dim}, Kind::kNorm});
    }
    p.push_back({g + "attn_output.weight", h + "self_attn.o_proj.weight", {d, q}, Kind::kMatrix});
    p.push_back({g + "ffn_norm.weight", h + "post_attention_layernorm.weight", {d}, Kind::kNorm});
    p.push_back({g + "ffn_gate.weight", h + "mlp.gate_proj.weight", {ff, d}, Kind::kMatrix});
    p.push_back({g + "ffn_up.weight", h + "mlp.up_proj.weight", {ff, d}, Kind::kMatrix});
    p.push_back({g + "ffn_down.weight", h + "mlp.down_proj.weight", {d, ff}, Kind::kMatrix});
    if (c.post_norms) {  // Gemma 3 (HF names: set_gemma3_hf_names)
      p.push_back({g + "post_attention_norm.weight", "", {d}, Kind::kNorm});
      p.push_back({g + "post_ffw_norm.weight", "", {d}, Kind::kNorm});
    }
  }
  if (!c.norm_after_residual) {  // BERT's layers end normed
    p.push_back({"output_norm.weight", hf_model + "norm.weight", {d}, Kind::kNorm});
    if (c.layer_norm) p.push_back({"output_norm.bias", "", {d}, Kind::kBias});  // GPT-2
    p.back().hf_zero_centred = c.arch == Arch::kQwen35;
  }
  // GGUF only: llama.cpp's converter stores Llama-3 rope scaling as this tensor (HF: config.json).
  if (llama_gguf && !c.rope_freq_factors.empty())
    p.push_back({"rope_freqs.weight", "", {static_cast<int64_t>(c.rope_freq_factors.size())}, Kind::kRopeFreqs});
  // Phi-3's LongRoPE factors (GGUF only; HF: config.json rope_scaling).
  if (!c.rope_factors_long.empty()) {
    p.push_back({"rope_factors_long.weight", "", {static_cast<int64_t>(c.rope_factors_long.size())}, Kind::kRopeLong});
    p.push_back({"rope_factors_short.weight", "", {static_cast<int64_t>(c.rope_factors_short.size())}, Kind::kRopeShort});
  }
  if (!c.tie_embeddings) p.push_back({"output.weight", "lm_head.weight", {v, d}, Kind::kMatrix});
  if (c.arch == Arch::kGemma3) set_gemma3_hf_names(p);
  if (c.arch == Arch::kGpt2) set_gpt2_hf_names(p);
  return p;
}

uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t name_key(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ull;
  return mix64(h ^ mix64(seed));
}

// Approximately N(0, 1): the sum of four 16-bit uniforms, standardised. Counter based, so a value
// depends only on (tensor key, element index) and any row can be generated in any order.
float normal_at(uint64_t key, uint64_t index) {
  uint64_t h = mix64(key ^ (index * 0xd1b54a32d192ed03ull));
  float s = 0;
  for (int k = 0; k < 4; ++k) s += static_cast<float>((h >> (16 * k)) & 0xffff) * (1.0f / 65536.0f);
  return (s - 2.0f) * 1.7320508f;
}

// Row `r` as stored in the file -> the HF (unpermuted) row it holds. llama.cpp's permute reshapes
// rows to [heads, 2, head_dim/2] and swaps the last two axes.
int64_t source_row(const Plan& p, int64_t r) {
  if (p.permute_heads == 0) return r;
  const int64_t hd = p.shape[0] / p.permute_heads, half = hd / 2;
  const int64_t head = r / hd, within = r % hd, i = within / 2, j = within % 2;
  return head * hd + j * half + i;
}

// Fills one stored row in f32, already rounded to `round_to` so every format sees equal values. `hf`:
// the row as the HF form stores it (Qwen3.5: value heads re-ordered, zero-centred norms, A_log).
void gen_row(const Plan& p, const ModelConfig& cfg, uint64_t key, int64_t r, DType round_to, bool hf, float* out) {
  const int64_t cols = p.shape.size() == 2 ? p.shape[1] : p.shape[0];
  if (p.kind == Kind::kRopeFreqs) {
    std::copy(cfg.rope_freq_factors.begin(), cfg.rope_freq_factors.end(), out);
    return;
  }
  if (p.kind == Kind::kRopeLong || p.kind == Kind::kRopeShort) {
    const std::vector<float>& f = p.kind == Kind::kRopeLong ? cfg.rope_factors_long : cfg.rope_factors_short;
    std::copy(f.begin(), f.end(), out);
    return;
  }
  const HfValueHeads heads = hf ? p.hf_heads : HfValueHeads{};
  const bool vector = p.shape.size() == 1;
  const int64_t src = !p.row_ids.empty()                              ? p.row_ids[static_cast<size_t>(r)]
                      : heads.axis == HfValueHeads::kRows && !vector ? qwen35_gguf_index(heads, cfg.deltanet, r)
                                                                      : source_row(p, r);
  float scale = 0, offset = 0;
  switch (p.rows_of.empty() ? p.kind : p.rows_of_kind) {
    // Granite multiplies the embeddings by embedding_scale (12): its stream starts as large as the
    // other families' (a trained Granite's embeddings are as small), and the layers' residual-scaled
    // outputs still move it (at 0.5 * 12 the model repeats its input token).
    case Kind::kEmbed: scale = 0.5f / cfg.embedding_scale; break;
    // 2/sqrt(fan_in) lets every layer move the residual stream; with 1/sqrt(fan_in) tied models
    // fall into repeating one token under greedy decoding (checked with llama.cpp).
    case Kind::kMatrix: scale = 2.0f / std::sqrt(static_cast<float>(cols)); break;
    case Kind::kNorm: scale = 0.05f, offset = 1.0f; break;
    case Kind::kBias: scale = 0.1f; break;
    case Kind::kConv: scale = 0.5f; break;
    case Kind::kDecay: scale = 0.5f; break;
    case Kind::kRopeFreqs:
    case Kind::kRopeLong:
    case Kind::kRopeShort: break;
  }
  // A vector's elements, or a matrix's columns, re-ordered by value head in the HF form.
  const bool by_element = heads.axis == HfValueHeads::kCols || (heads.axis == HfValueHeads::kRows && vector);
  // GPT-2's Conv1D weights in the HF form: stored row r is the GGUF's column r.
  const bool transposed = hf && p.hf_transposed;
  for (int64_t c = 0, n = transposed ? p.shape[0] : cols; c < n; ++c) {
    const int64_t sc = by_element ? qwen35_gguf_index(heads, cfg.deltanet, c) : c;
    const int64_t index = transposed ? c * cols + r : src * cols + sc;
    float x = offset + scale * normal_at(key, static_cast<uint64_t>(index));
    if (round_to == DType::kF16) x = f16_to_f32(f32_to_f16(x));
    if (round_to == DType::kBF16) x = bf16_to_f32(f32_to_bf16(x));
    // The decay is drawn (and rounded) as A_log, which HF stores; GGUF holds -exp(A_log) in f32, as
    // the converter writes it, so the loader's -exp of the HF value gives the same float.
    if (p.kind == Kind::kDecay && !hf) x = -std::exp(x);
    if (p.hf_zero_centred && hf) x -= 1.0f;  // exact: x is within [0.5, 2]
    out[c] = x;
  }
}

// Streams every planned tensor through `sink(bytes, n)`, in plan order, ~4 MiB at a time.
template <typename Sink>
int64_t stream_tensors(const std::vector<Plan>& plan, const std::vector<DType>& types, const ModelConfig& cfg,
                       uint64_t seed, DType value_dtype, bool hf, Sink&& sink) {
  int64_t total = 0;
  std::vector<uint8_t> buf;
  std::vector<float> row;
  for (size_t i = 0; i < plan.size(); ++i) {
    const Plan& p = plan[i];
    const bool transposed = hf && p.hf_transposed;  // stored [in, out]
    const int64_t rows = p.shape.size() == 2 ? p.shape[transposed ? 1 : 0] : 1;
    const int64_t cols = p.shape.size() == 2 ? p.shape[transposed ? 0 : 1] : p.shape[0];
    const int64_t row_bytes = dtype_row_bytes(types[i], cols);
    const uint64_t key = name_key(seed, p.rows_of.empty() ? p.gguf_name : p.rows_of);
    // Block-type values are rounded by quantisation itself; f32-stored norms follow the model dtype.
    const DType round_to = dtype_is_quantized(value_dtype) ? DType::kF32 : value_dtype;
    row.resize(cols);
    for (int64_t r = 0; r < rows; ++r) {
      gen_row(p, cfg, key, r, round_to, hf, row.data());
      const size_t at = buf.size();
      buf.resize(at + row_bytes);
      kernels::row_from_f32(row.data(), types[i], buf.data() + at, cols);
      if (buf.size() >= (4u << 20)) {
        sink(buf.data(), buf.size());
        total += static_cast<int64_t>(buf.size());
        buf.clear();
      }
    }
    sink(buf.data(), buf.size());  // tensor boundary: the GGUF writer pads after each tensor
    total += static_cast<int64_t>(buf.size());
    buf.clear();
  }
  return total;
}

void write_hf_config(const ModelConfig& c, DType dtype, const fs::path& dir) {
  nlohmann::ordered_json j = {
      {"architectures", {c.arch == Arch::kQwen2   ? "Qwen2ForCausalLM"
                         : c.arch == Arch::kQwen3 ? "Qwen3ForCausalLM"
                                                  : "LlamaForCausalLM"}},
      {"model_type", arch_name(c.arch)},
      {"hidden_act", "silu"},
      {"hidden_size", c.d_model},
      {"intermediate_size", c.d_ff},
      {"num_attention_heads", c.n_heads},
      {"num_hidden_layers", c.n_layers},
      {"num_key_value_heads", c.n_kv_heads},
      {"head_dim", c.head_dim},
      {"max_position_embeddings", c.max_ctx},
      {"rms_norm_eps", c.rms_eps},
      {"rope_theta", c.rope_theta},
      {"rope_scaling", c.rope_freq_factors.empty()
                           ? nlohmann::ordered_json(nullptr)
                           : nlohmann::ordered_json{{"rope_type", "llama3"}, {"factor", kLlama32Scaling[0]},
                                                    {"low_freq_factor", kLlama32Scaling[1]},
                                                    {"high_freq_factor", kLlama32Scaling[2]},
                                                    {"original_max_position_embeddings", kLlama32Scaling[3]}}},
      {"tie_word_embeddings", c.tie_embeddings},
      {"vocab_size", c.vocab_size},
      {"torch_dtype", dtype == DType::kF32 ? "float32" : dtype == DType::kF16 ? "float16" : "bfloat16"},
  };
  if (c.arch != Arch::kQwen2) j["attention_bias"] = false;
  if (c.bos_id >= 0) j["bos_token_id"] = c.bos_id;
  if (!c.eos_ids.empty()) j["eos_token_id"] = c.eos_ids[0];
  std::ofstream out(dir / "config.json");
  out << j.dump(2) << "\n";
  if (!out) throw Error(ErrorKind::kIo, "cannot write '" + (dir / "config.json").string() + "'");
}

// general.file_type: llama.cpp's LLAMA_FTYPE for a file whose matrices are all `dtype` (the K-quants
// as their _S mixes, the nearest named ones). Informative only: loaders read each tensor's type.
uint32_t llama_file_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kQ4_0: return 2;
    case DType::kQ4_1: return 3;
    case DType::kQ8_0: return 7;
    case DType::kQ5_0: return 8;
    case DType::kQ5_1: return 9;
    case DType::kQ2_K: return 10;
    case DType::kQ3_K: return 11;
    case DType::kQ4_K: return 14;
    case DType::kQ5_K: return 16;
    case DType::kQ6_K: return 18;
    case DType::kIQ4_NL: return 25;
    case DType::kIQ4_XS: return 30;
    case DType::kBF16: return 32;
  }
  return 0;
}

void add_gguf_hparams(const ModelConfig& c, DType dtype, const std::string& shape, GgufWriter& w) {
  const std::string a = arch_name(c.arch);
  w.add_string("general.architecture", a);
  w.add_string("general.name", c.name);
  w.add_u32("general.file_type", llama_file_type(dtype));
  if (dtype_is_quantized(dtype)) w.add_u32("general.quantization_version", 2);
  if (c.arch == Arch::kGpt2) return gpt2_to_gguf(c, w);  // its converter writes its own few keys
  if (!c.causal) return bert_to_gguf(c, w);
  w.add_u32(a + ".block_count", c.n_layers);
  w.add_u32(a + ".context_length", c.max_ctx);
  w.add_u32(a + ".embedding_length", c.d_model);
  w.add_u32(a + ".feed_forward_length", c.d_ff);
  w.add_u32(a + ".attention.head_count", c.n_heads);
  w.add_u32(a + ".attention.head_count_kv", c.n_kv_heads);
  w.add_f32(a + ".rope.freq_base", c.rope_theta);
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", c.rms_eps);
  w.add_u32(a + ".rope.dimension_count", c.rope_dim);
  w.add_u32(a + ".attention.key_length", c.head_dim);
  w.add_u32(a + ".attention.value_length", c.head_dim);
  // llama.cpp's LlamaModel converter (also Granite's and SmolLM3's) writes the vocab size.
  if (c.arch == Arch::kLlama || c.arch == Arch::kGranite || c.arch == Arch::kSmolLM3) w.add_u32(a + ".vocab_size", c.vocab_size);
  if (c.pooling != Pooling::kNone) w.add_u32(a + ".pooling_type", static_cast<uint32_t>(c.pooling));
  if (c.pooling == Pooling::kRank) {
    // What llama.cpp's converter writes for Qwen3-Reranker: the labels, and its prompt as a named
    // template.
    w.add_string_array(a + ".classifier.output_labels", {"yes", "no"});
    w.add_string("tokenizer.chat_template.rerank", server::kQwen3RerankTemplate);
  }
  if (c.arch == Arch::kQwen35) add_qwen35_hparams(c, w);
  if (c.arch == Arch::kGranite) granite_to_gguf(c, w);
  if (c.arch == Arch::kPhi3) phi3_to_gguf(c, phi3_sliding_window(shape), w);
  if (c.arch == Arch::kGemma3) gemma3_to_gguf(c, w);
}

// Last-token pooling reads the hidden state at the EOS every input ends with (Qwen3-Embedding:
// <|endoftext|>, appended by the tokenizer): make it the vocabulary's EOS when it has one.
void use_endoftext_eos(MakerVocab& v) {
  if (v.gguf) return;  // keys are copied verbatim
  const auto it = std::find(v.tokens.begin(), v.tokens.end(), "<|endoftext|>");
  if (it != v.tokens.end()) v.eos = static_cast<int>(it - v.tokens.begin());
}

// A reranker's classifier head as llama.cpp's converter cuts it from Qwen3-Reranker: the LM head's
// rows of "yes" and "no" (GGUF only), so that the same weights served as a causal LM with
// --reranking score alike.
Plan rerank_head_plan(const ModelConfig& c, const MakerVocab& v) {
  Plan p{"cls.output.weight", "", {c.n_cls_out, c.d_model}, Kind::kMatrix};
  p.rows_of = c.tie_embeddings ? "token_embd.weight" : "output.weight";
  p.rows_of_kind = c.tie_embeddings ? Kind::kEmbed : Kind::kMatrix;
  for (const char* label : {"yes", "no"}) {
    const auto it = std::find(v.tokens.begin(), v.tokens.end(), label);
    if (it == v.tokens.end()) {
      throw Error(ErrorKind::kInvalidArgument, std::string("make_model: --pooling rank needs a vocabulary with the "
                                                           "token \"") + label + "\" (--tokenizer-from)");
    }
    p.row_ids.push_back(it - v.tokens.begin());
  }
  return p;
}

}  // namespace

MadeModel make_model(const MakeModelOptions& o, const std::string& out) {
  if (dtype_is_quantized(o.dtype) && o.format != ModelFormat::kGguf) {
    throw Error(ErrorKind::kInvalidArgument, std::string("make_model: ") + dtype_name(o.dtype) +
                                                 " needs GGUF output (safetensors has no block types)");
  }
  if (o.pooling != Pooling::kNone && o.format != ModelFormat::kGguf) {
    throw Error(ErrorKind::kInvalidArgument, "make_model: --pooling needs GGUF output");
  }
  ModelConfig c = shape_config(o);
  MakerVocab vocab = load_maker_vocab(o.tokenizer);
  if (o.pooling == Pooling::kLast) use_endoftext_eos(vocab);
  int vocab_size = static_cast<int>(vocab.tokens.size());
  // The real checkpoints' embedding rows (the head is a large share of a small model's decode).
  const int real_rows = o.shape.rfind("qwen3.5-", 0) == 0 ? 248320
                        : o.shape == "qwen2.5-0.5b" || o.shape == "qwen3-0.6b" || o.arch == Arch::kQwen35 ? 151936
                        : o.shape == "granite-3.3-2b" ? 49159
                        : o.shape == "smollm3-3b" ? 128256
                        : o.shape == "phi-4-mini" ? 200064
                        : o.shape == "phi-3.5-mini" ? 32064
                        : o.shape == "gemma-3-1b" ? 262144
                        : o.shape == "gpt2-124m" ? 50257
                        : o.shape == "bge-small" || o.shape == "bge-base" || o.shape == "nomic-embed-text-v1.5" ? 30522 : 0;
  if (vocab.paddable && vocab_size < real_rows) vocab_size = real_rows;
  pad_maker_vocab(vocab, vocab_size);
  // llama.cpp sets Phi-3's special-token attributes by general.name (containing "phi3" or "phi-3")
  // and then looks up "</s>", which a vocab without it (the synthetic one) fails to load over.
  if (c.arch == Arch::kPhi3 && std::find(vocab.tokens.begin(), vocab.tokens.end(), "</s>") == vocab.tokens.end()) {
    const std::string variant = o.shape == "phi-3.5-mini" ? "3.5-mini" : o.shape == "phi-4-mini" ? "4-mini" : o.shape;
    c.name = "phi-family-" + variant + "-random-seed" + std::to_string(o.seed);
  }
  c.vocab_size = vocab_size;
  c.bos_id = vocab.bos;
  if (vocab.eos >= 0) c.eos_ids = {vocab.eos};
  c.validate("make_model");

  const bool gguf = o.format == ModelFormat::kGguf;
  std::vector<Plan> plan = make_plan(c, gguf && c.rope_layout == RopeLayout::kInterleaved);
  if (c.pooling == Pooling::kRank) plan.push_back(rerank_head_plan(c, vocab));
  // GGUF-only tensors (Phi-3's LongRoPE factors: HF has them in config.json).
  if (!gguf) std::erase_if(plan, [](const Plan& p) { return p.hf_name.empty(); });
  std::vector<DType> types;
  MadeModel made;
  made.path = out;
  made.config = c;
  for (const Plan& p : plan) {
    // GGUF keeps norms and biases in f32 as llama.cpp's converter does; HF uses one dtype throughout.
    // A matrix whose rows do not fit the block type falls back as llama.cpp's quantizer would
    // (32-element type, else f16).
    // kConv too: llama.cpp's ssm_conv kernel reads only an f32 kernel.
    const bool vec = p.kind == Kind::kNorm || p.kind == Kind::kBias || p.kind == Kind::kRopeFreqs ||
                     p.kind == Kind::kRopeLong || p.kind == Kind::kRopeShort ||
                     p.kind == Kind::kConv || p.kind == Kind::kDecay;
    types.push_back(gguf && vec ? DType::kF32
                                : kernels::writable_type_for(o.dtype, p.shape.back()).value_or(DType::kF16));
    int64_t n = 1;
    for (int64_t s : p.shape) n *= s;
    made.n_params += n;
  }
  if (gguf) {
    GgufWriter w;
    add_gguf_hparams(c, o.dtype, o.shape, w);
    add_maker_vocab_to_gguf(vocab, w, c.arch == Arch::kGpt2 ? "gpt-2" : "");  // GPT-2's own pre-tokenizer regex
    if (o.pooling == Pooling::kLast && !(vocab.gguf && vocab.gguf->has("tokenizer.ggml.add_eos_token"))) {
      w.add_bool("tokenizer.ggml.add_eos_token", true);
    }
    for (size_t i = 0; i < plan.size(); ++i) w.add_tensor(plan[i].gguf_name, types[i], plan[i].shape);
    w.begin(out);
    made.data_bytes = stream_tensors(plan, types, c, o.seed, o.dtype, false,
                                     [&](const void* d, size_t n) { w.write_data(d, n); });
    w.finish();
  } else {
    fs::create_directories(out);
    if (c.arch == Arch::kQwen35) {
      write_qwen35_hf_config(c, o.dtype, out);
    } else if (c.arch == Arch::kPhi3) {
      write_phi3_hf_config(c, o.dtype, o.shape, out);
    } else if (c.arch == Arch::kGemma3) {
      write_gemma3_hf_config(c, o.dtype, out);
    } else if (c.arch == Arch::kGpt2) {
      write_gpt2_hf_config(c, o.dtype, out);
    } else {
      write_hf_config(c, o.dtype, out);
    }
    write_maker_vocab_hf(vocab, out);
    std::vector<SafetensorsWriter::Decl> decls;
    for (size_t i = 0; i < plan.size(); ++i) {
      std::vector<int64_t> shape = plan[i].shape;
      if (plan[i].kind == Kind::kConv) shape = {shape[0], 1, shape[1]};  // PyTorch's Conv1d [channels, 1, taps]
      if (plan[i].hf_transposed) shape = {shape[1], shape[0]};           // GPT-2's Conv1D [in, out]
      decls.push_back({plan[i].hf_name, types[i], shape});
    }
    SafetensorsWriter w((fs::path(out) / "model.safetensors").string(), decls, {{"format", "pt"}});
    made.data_bytes = stream_tensors(plan, types, c, o.seed, o.dtype, true,
                                     [&](const void* d, size_t n) { w.append_data(d, n); });
    w.finish();
  }
  return made;
}

}  // namespace anelm::tools
