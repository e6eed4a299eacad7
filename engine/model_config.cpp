// ModelConfig validation (lists every problem at once) and architecture names.
#include "engine/model_config.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engine/error.h"

namespace anelm::engine {

std::vector<float> llama3_rope_freq_factors(double theta, int rope_dim, double factor, double low_freq_factor,
                                            double high_freq_factor, double old_ctx) {
  const double low_wavelen = old_ctx / low_freq_factor, high_wavelen = old_ctx / high_freq_factor;
  std::vector<float> out;
  for (int i = 0; i < rope_dim / 2; ++i) {
    const double freq = std::pow(theta, -2.0 * i / rope_dim);
    const double wavelen = 2 * M_PI / freq;
    double divisor = 1;
    if (wavelen > low_wavelen) {
      divisor = factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (old_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      divisor = 1 / ((1 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(divisor));
  }
  return out;
}

const char* arch_name(Arch a) {
  switch (a) {
    case Arch::kLlama: return "llama";
    case Arch::kQwen2: return "qwen2";
    case Arch::kQwen3: return "qwen3";
    case Arch::kQwen35: return "qwen35";
    case Arch::kGranite: return "granite";
    case Arch::kSmolLM3: return "smollm3";
    case Arch::kPhi3: return "phi3";
    case Arch::kGemma3: return "gemma3";
    case Arch::kGpt2: return "gpt2";
    case Arch::kBert: return "bert";
    case Arch::kNomicBert: return "nomic-bert";
  }
  return "unknown";
}

const char* mixer_name(Mixer m) { return m == Mixer::kAttention ? "attention" : "deltanet"; }

bool ModelConfig::recurrent() const {
  return std::find(mixers.begin(), mixers.end(), Mixer::kDeltaNet) != mixers.end();
}

float ModelConfig::attn_scale() const {
  return attention_scale > 0.0f ? attention_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

int ModelConfig::n_attention_layers() const {
  if (mixers.empty()) return n_layers;
  return static_cast<int>(std::count(mixers.begin(), mixers.end(), Mixer::kAttention));
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kNone: return "none";
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
    case Pooling::kRank: return "rank";
  }
  return "unknown";
}

namespace {

// Collects "field = value (why)" lines so one error can name every inconsistency.
struct Problems {
  std::vector<std::string> items;
  template <typename T>
  void add(const char* field, T value, const std::string& why) {
    std::ostringstream os;
    os << field << " = " << value << " (" << why << ")";
    items.push_back(os.str());
  }
};

}  // namespace

void ModelConfig::validate(const std::string& source) const {
  Problems p;
  using L = ModelLimits;
  // Every count in 1..max; products below are formed in int64 and checked against the same bounds,
  // so q_dim() and kv_dim() (int) cannot overflow once this passed.
  auto in_range = [&](const char* field, int value, int max) {
    if (value <= 0) p.add(field, value, "must be > 0");
    else if (value > max) p.add(field, value, "must be <= " + std::to_string(max));
  };
  in_range("n_layers", n_layers, L::kMaxLayers);
  in_range("d_model", d_model, L::kMaxDim);
  in_range("n_heads", n_heads, L::kMaxHeads);
  in_range("n_kv_heads", n_kv_heads, L::kMaxHeads);
  in_range("head_dim", head_dim, L::kMaxDim);
  in_range("d_ff", d_ff, L::kMaxDim);
  in_range("vocab_size", vocab_size, L::kMaxVocab);
  in_range("max_ctx", max_ctx, L::kMaxCtx);
  const int64_t q = static_cast<int64_t>(n_heads) * head_dim, kv = static_cast<int64_t>(n_kv_heads) * head_dim;
  const bool head_dim_ok = head_dim > 0 && head_dim <= L::kMaxDim;  // else reported once above
  if (n_heads > 0 && head_dim_ok && q > L::kMaxDim) {
    p.add("head_dim", head_dim, "n_heads * head_dim = " + std::to_string(q) + " must be <= " + std::to_string(L::kMaxDim));
  } else if (n_kv_heads > 0 && head_dim_ok && kv > L::kMaxDim) {
    p.add("head_dim", head_dim, "n_kv_heads * head_dim = " + std::to_string(kv) + " must be <= " + std::to_string(L::kMaxDim));
  }
  if (n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads != 0) {
    p.add("n_heads", n_heads, "must be a multiple of n_kv_heads = " + std::to_string(n_kv_heads));
  }
  if (n_kv_heads > n_heads && n_heads > 0) {
    p.add("n_kv_heads", n_kv_heads, "must be <= n_heads = " + std::to_string(n_heads));
  }
  if (head_dim > 0 && head_dim % 2 != 0) p.add("head_dim", head_dim, "must be even for RoPE");
  // Llama and Qwen2 checkpoints always split d_model evenly across the query heads; Qwen3 sets
  // head_dim on its own (Qwen3-0.6B: 16 x 128 = 2048 query columns for d_model 1024).
  if (arch != Arch::kQwen3 && arch != Arch::kQwen35 && arch != Arch::kGemma3 && n_heads > 0 && head_dim > 0 && d_model > 0 && q != d_model) {
    p.add("head_dim", head_dim, "head_dim * n_heads = " + std::to_string(q) +
                                    " must equal d_model = " + std::to_string(d_model));
  }
  if (rope_dim <= 0 || rope_dim > head_dim || rope_dim % 2 != 0) {
    p.add("rope_dim", rope_dim, "must be even and in 1..head_dim = " + std::to_string(head_dim));
  }
  if (!rope_freq_factors.empty() && static_cast<int>(rope_freq_factors.size()) != rope_dim / 2) {
    p.add("rope_freq_factors.size", rope_freq_factors.size(), "must be rope_dim / 2 = " + std::to_string(rope_dim / 2));
  }
  for (float f : rope_freq_factors) {
    if (!(f > 0.0f) || !std::isfinite(f)) {
      p.add("rope_freq_factors", f, "must be finite and > 0");
      break;
    }
  }
  for (const std::vector<float>* f : {&rope_factors_long, &rope_factors_short}) {
    const char* field = f == &rope_factors_long ? "rope_factors_long" : "rope_factors_short";
    if (!f->empty() && static_cast<int>(f->size()) != rope_dim / 2) {
      p.add(field, std::to_string(f->size()) + " factors", "must be rope_dim / 2 = " + std::to_string(rope_dim / 2));
    }
    if (std::any_of(f->begin(), f->end(), [](float x) { return !(x > 0.0f) || !std::isfinite(x); })) {
      p.add(field, "...", "every factor must be finite and > 0");
    }
  }
  if (!(rope_attn_factor > 0.0f) || !std::isfinite(rope_attn_factor)) {
    p.add("rope_attn_factor", rope_attn_factor, "must be finite and > 0");
  }
  if (pooling == Pooling::kRank && (n_cls_out < 1 || n_cls_out > 64)) {
    p.add("n_cls_out", n_cls_out, "a reranker's classifier head needs 1..64 labels");
  }
  // An encoder has no LM head and no causal cache to decode from: it is served as an embedding model.
  if (!causal && (pooling == Pooling::kNone || pooling == Pooling::kRank)) {
    p.add("pooling", pooling_name(pooling), "an encoder (bidirectional attention) needs mean, cls or last pooling");
  }
  if (!(rms_eps > 0.0f && rms_eps < 1e-1f)) p.add("rms_eps", rms_eps, "must be in (0, 0.1)");
  if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta)) p.add("rope_theta", rope_theta, "must be > 0");
  if (bos_id < -1 || (vocab_size > 0 && bos_id >= vocab_size)) {
    p.add("bos_id", bos_id, "must be -1 or in [0, vocab_size = " + std::to_string(vocab_size) + ")");
  }
  for (int id : eos_ids) {
    if (id < 0 || (vocab_size > 0 && id >= vocab_size)) {
      p.add("eos_id", id, "must be in [0, vocab_size = " + std::to_string(vocab_size) + ")");
    }
  }
  if (!mixers.empty() && static_cast<int>(mixers.size()) != n_layers) {
    p.add("mixers.size", mixers.size(), "must be n_layers = " + std::to_string(n_layers));
  }
  if (!nope_layers.empty() && static_cast<int>(nope_layers.size()) != n_layers) {
    p.add("nope_layers.size", nope_layers.size(), "must be n_layers = " + std::to_string(n_layers));
  }
  if (!swa_layers.empty() && static_cast<int>(swa_layers.size()) != n_layers) {
    p.add("swa_layers.size", swa_layers.size(), "must be n_layers = " + std::to_string(n_layers));
  }
  if (!swa_layers.empty() && !(sliding_window > 0 && sliding_window <= L::kMaxCtx)) {
    p.add("sliding_window", sliding_window, "must be in 1.." + std::to_string(L::kMaxCtx) + " with sliding-window layers");
  }
  if (!(rope_theta_swa > 0.0f) || !std::isfinite(rope_theta_swa)) p.add("rope_theta_swa", rope_theta_swa, "must be > 0");
  auto positive = [&](const char* field, float value) {
    if (!(value > 0.0f) || !std::isfinite(value)) p.add(field, value, "must be finite and > 0");
  };
  positive("embedding_scale", embedding_scale);
  positive("residual_scale", residual_scale);
  positive("logit_scale", logit_scale);
  if (!(attention_scale >= 0.0f) || !std::isfinite(attention_scale)) {
    p.add("attention_scale", attention_scale, "must be finite and >= 0 (0: 1/sqrt(head_dim))");
  }
  if (recurrent()) {
    const DeltaNetDims& dn = deltanet;
    in_range("ssm.group_count (DeltaNet key heads)", dn.n_k_heads, L::kMaxHeads);
    in_range("ssm.time_step_rank (DeltaNet value heads)", dn.n_v_heads, L::kMaxHeads);
    in_range("ssm.state_size (DeltaNet d_k)", dn.d_k, 1024);
    in_range("DeltaNet d_v", dn.d_v, 1024);
    in_range("ssm.conv_kernel", dn.conv_kernel, 64);
    if (dn.n_k_heads > 0 && dn.n_v_heads > 0 && dn.n_v_heads % dn.n_k_heads != 0) {
      p.add("ssm.time_step_rank", dn.n_v_heads, "must be a multiple of ssm.group_count = " + std::to_string(dn.n_k_heads));
    }
    if (dn.n_k_heads > 0 && dn.d_k > 0 && dn.n_v_heads > 0 && dn.d_v > 0 &&
        static_cast<int64_t>(dn.conv_dim()) > L::kMaxDim) {
      p.add("DeltaNet conv_dim", dn.conv_dim(), "must be <= " + std::to_string(L::kMaxDim));
    }
    if (dn.d_k > 0 && dn.d_k % 16 != 0) p.add("ssm.state_size", dn.d_k, "must be a multiple of 16");
  }
  if (p.items.empty()) return;
  std::string msg = "invalid model config in '" + source + "' (" + arch_name(arch) + "): ";
  for (size_t i = 0; i < p.items.size(); ++i) msg += (i ? "; " : "") + p.items[i];
  throw Error(ErrorKind::kFormat, msg);
}

}  // namespace anelm::engine
