// Maps HF config.json / generation_config.json fields to ModelConfig (Qwen2, Llama, Qwen3.5, Phi-3, Gemma 3, GPT-2).
#include "engine/config_hf.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/families.h"
#include "engine/json_depth.h"

namespace anelm::engine {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(ErrorKind::kNotFound, "cannot read '" + p.string() + "'");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// A JSON value in an error message, cut to a few dozen characters.
std::string brief(const json& v) {
  std::string s = v.dump();
  return s.size() <= 64 ? s : s.substr(0, 60) + " ...";
}

json parse_json(const std::string& text, const std::string& source) {
  // nlohmann::json dumps, copies and compares recursively: bound the nesting before parsing.
  check_json_depth(text, source, "the JSON");
  try {
    json j = json::parse(text);
    if (!j.is_object()) throw Error(ErrorKind::kFormat, "'" + source + "': expected a JSON object");
    return j;
  } catch (const json::exception& e) {
    std::string msg = e.what();  // without the bytes it quotes ("; last read: '...'")
    if (size_t at = msg.find("; last read"); at != std::string::npos) msg.resize(at);
    throw Error(ErrorKind::kFormat, "'" + source + "': invalid JSON: " + msg);
  }
}

bool get_bool(const json& j, const char* key, const std::string& source, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    throw Error(ErrorKind::kFormat, "'" + source + "': field '" + key + "' must be a bool, got " + brief(*it));
  }
  return it->get<bool>();
}

int get_int(const json& j, const char* key, const std::string& source, std::optional<int> fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    throw Error(ErrorKind::kNotFound, "'" + source + "': required field '" + key + "' is missing");
  }
  if (!it->is_number_integer()) {
    throw Error(ErrorKind::kFormat, "'" + source + "': field '" + key + "' must be an integer, got " + brief(*it));
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT32_MAX)) {
    throw Error(ErrorKind::kFormat, "'" + source + "': field '" + key + "' = " + it->dump() + " is out of range");
  }
  int64_t v = it->get<int64_t>();
  if (v < INT32_MIN || v > INT32_MAX) {
    throw Error(ErrorKind::kFormat, "'" + source + "': field '" + key + "' = " + std::to_string(v) + " is out of range");
  }
  return static_cast<int>(v);
}

float get_float(const json& j, const char* key, const std::string& source, float fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) {
    throw Error(ErrorKind::kFormat, "'" + source + "': field '" + key + "' must be a number, got " + brief(*it));
  }
  return it->get<float>();
}

// eos_token_id / bos_token_id may be an integer or a list of integers.
std::vector<int> get_id_list(const json& j, const char* key, const std::string& source) {
  std::vector<int> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  auto add = [&](const json& v) {
    const bool in_range = v.is_number_integer() &&
                          (v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(INT32_MAX)
                                                  : v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX);
    if (!in_range) {
      throw Error(ErrorKind::kFormat, "'" + source + "': field '" + key +
                                          "' must be an int32 or a list of int32s, got " + brief(*it));
    }
    int id = v.get<int>();
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  };
  if (it->is_array()) {
    constexpr size_t kMaxIds = 256;  // real configs list a handful; bounds the duplicate checks
    if (it->size() > kMaxIds) {
      throw Error(ErrorKind::kFormat, "'" + source + "': field '" + key + "' lists " + std::to_string(it->size()) +
                                          " ids (at most " + std::to_string(kMaxIds) + ")");
    }
    for (const json& v : *it) add(v);
  } else {
    add(*it);
  }
  return out;
}

// bos_token_id (the first, unless one is set already) and eos_token_id (added to the list, once
// each) of one config object; a nested config calls it for the outer object and then its own.
void read_token_ids(const json& j, const std::string& source, ModelConfig& c) {
  if (std::vector<int> bos = get_id_list(j, "bos_token_id", source); !bos.empty() && c.bos_id < 0) c.bos_id = bos[0];
  for (int id : get_id_list(j, "eos_token_id", source)) {
    if (std::find(c.eos_ids.begin(), c.eos_ids.end(), id) == c.eos_ids.end()) c.eos_ids.push_back(id);
  }
}

}  // namespace

namespace {

// transformers' _compute_llama3_parameters as per-pair divisors of the frequency (llama.cpp's
// rope_freqs): long wavelengths slowed by `factor`, short ones kept, a smooth blend between.
std::vector<float> llama3_rope_factors(const json& rs, const ModelConfig& c, const std::string& source) {
  std::string type;
  if (rs.is_object()) {
    auto t = rs.find("rope_type");
    if (t == rs.end()) t = rs.find("type");
    if (t != rs.end() && t->is_string()) type = t->get<std::string>();
  }
  if (type == "default") return {};
  if (type != "llama3") {
    throw Error(ErrorKind::kUnsupported, "'" + source + "': rope_scaling " + brief(rs) +
                                             " is not supported (supported: rope_type llama3)");
  }
  auto num = [&](const char* key, double fallback) {
    const auto v = rs.find(key);
    if (v == rs.end()) return fallback;
    if (!v->is_number() || !(v->get<double>() > 0))
      throw Error(ErrorKind::kFormat, "'" + source + "': rope_scaling." + key + " must be a positive number");
    return v->get<double>();
  };
  const double factor = num("factor", 8), low = num("low_freq_factor", 1), high = num("high_freq_factor", 4);
  const double old_ctx = num("original_max_position_embeddings", 8192);
  // An out-of-range head_dim is reported by validate(); do not size a table from it here.
  if (c.rope_dim <= 0 || c.rope_dim > ModelLimits::kMaxDim) return {};
  if (!(high > low)) throw Error(ErrorKind::kFormat, "'" + source + "': rope_scaling needs high_freq_factor > low_freq_factor");
  return llama3_rope_freq_factors(c.rope_theta, c.rope_dim, factor, low, high, old_ctx);
}

// The sizes every decoder config.json names alike.
void read_sizes(const json& j, const std::string& source, ModelConfig& c) {
  c.d_model = get_int(j, "hidden_size", source, std::nullopt);
  c.n_layers = get_int(j, "num_hidden_layers", source, std::nullopt);
  c.n_heads = get_int(j, "num_attention_heads", source, std::nullopt);
  c.n_kv_heads = get_int(j, "num_key_value_heads", source, c.n_heads);
  c.d_ff = get_int(j, "intermediate_size", source, std::nullopt);
  c.vocab_size = get_int(j, "vocab_size", source, std::nullopt);
}

// rope_theta and partial_rotary_factor, read inside rope_parameters (newer configs) or at the top;
// `fields` is where the other RoPE fields live (rope_parameters when present, else the config).
struct RopeBase {
  const json& fields;
  float theta;
  float partial;
};

RopeBase read_rope_base(const json& j, const std::string& source, float theta_default, float partial_default) {
  const auto rp = j.find("rope_parameters");
  const json& rope = rp != j.end() && rp->is_object() ? *rp : j;
  const float theta = get_float(rope, "rope_theta", source, get_float(j, "rope_theta", source, theta_default));
  const float partial = get_float(rope, "partial_rotary_factor", source, get_float(j, "partial_rotary_factor", source, partial_default));
  if (!(partial > 0.0f && partial <= 1.0f)) {
    throw Error(ErrorKind::kFormat, "'" + source + "': partial_rotary_factor = " + std::to_string(partial) + " must be in (0, 1]");
  }
  return {rope, theta, partial};
}

// Qwen3.5: the text model's fields sit in `text_config` (the multimodal checkpoints) or at the top.
// Tensors keep HF's conventions, which the loader converts (zero-centred norms, A_log, grouped
// value heads: DeltaNetDims::grouped_heads).
ModelConfig qwen35_from_hf(const json& top, const std::string& source) {
  const auto tc = top.find("text_config");
  const json& j = tc != top.end() && tc->is_object() ? *tc : top;
  ModelConfig c;
  c.arch = Arch::kQwen35;
  c.rope_layout = RopeLayout::kHalf;
  c.qk_norm = true;
  c.attn_output_gate = get_bool(j, "attn_output_gate", source, true);
  read_sizes(j, source, c);
  c.head_dim = get_int(j, "head_dim", source, std::nullopt);
  c.max_ctx = get_int(j, "max_position_embeddings", source, 262144);
  c.rms_eps = get_float(j, "rms_norm_eps", source, 1e-6f);
  const RopeBase rb = read_rope_base(j, source, 10000000.0f, 0.25f);
  c.rope_theta = rb.theta;
  c.rope_dim = static_cast<int>(std::lround(c.head_dim * rb.partial));
  DeltaNetDims& dn = c.deltanet;
  dn.n_k_heads = get_int(j, "linear_num_key_heads", source, std::nullopt);
  dn.n_v_heads = get_int(j, "linear_num_value_heads", source, std::nullopt);
  dn.d_k = get_int(j, "linear_key_head_dim", source, 128);
  dn.d_v = get_int(j, "linear_value_head_dim", source, 128);
  dn.conv_kernel = get_int(j, "linear_conv_kernel_dim", source, 4);
  dn.grouped_heads = true;
  if (c.n_layers <= 0 || c.n_layers > ModelLimits::kMaxLayers) return c;  // validate() names it
  c.mixers.assign(static_cast<size_t>(c.n_layers), Mixer::kAttention);
  if (auto lt = j.find("layer_types"); lt != j.end() && !lt->is_null()) {
    if (!lt->is_array() || lt->size() != static_cast<size_t>(c.n_layers)) {
      throw Error(ErrorKind::kFormat, "'" + source + "': layer_types must list num_hidden_layers = " +
                                          std::to_string(c.n_layers) + " entries, got " + brief(*lt));
    }
    for (int l = 0; l < c.n_layers; ++l) {
      const json& t = (*lt)[static_cast<size_t>(l)];
      if (t == "linear_attention") {
        c.mixers[static_cast<size_t>(l)] = Mixer::kDeltaNet;
      } else if (t != "full_attention") {
        throw Error(ErrorKind::kUnsupported, "'" + source + "': layer_types[" + std::to_string(l) + "] = " + brief(t) +
                                                 " is not supported (linear_attention, full_attention)");
      }
    }
  } else {
    const int interval = get_int(j, "full_attention_interval", source, 4);
    if (interval <= 0) throw Error(ErrorKind::kFormat, "'" + source + "': full_attention_interval must be > 0");
    for (int l = 0; l < c.n_layers; ++l) c.mixers[static_cast<size_t>(l)] = (l + 1) % interval ? Mixer::kDeltaNet : Mixer::kAttention;
  }
  c.tie_embeddings = get_bool(top, "tie_word_embeddings", source, get_bool(j, "tie_word_embeddings", source, false));
  for (const json* src : {&top, &j}) read_token_ids(*src, source, c);
  return c;
}

// A JSON array of positive numbers (LongRoPE factors), bounded by the config's rope_dim / 2.
std::vector<float> get_factors(const json& rs, const char* key, const std::string& source, int rope_dim) {
  const auto it = rs.find(key);
  if (it == rs.end() || !it->is_array() || static_cast<int64_t>(it->size()) != rope_dim / 2) {
    throw Error(ErrorKind::kFormat, "'" + source + "': rope_scaling." + key + " must be a list of rope_dim / 2 = " +
                                        std::to_string(rope_dim / 2) + " numbers, got " +
                                        (it == rs.end() ? std::string("none") : brief(*it)));
  }
  std::vector<float> f;
  for (const json& v : *it) {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
      throw Error(ErrorKind::kFormat, "'" + source + "': rope_scaling." + key + " holds " + brief(v) + ", not a positive number");
    }
    f.push_back(v.get<float>());
  }
  return f;
}

// Phi-3 / Phi-3.5 / Phi-4-mini (Phi3ForCausalLM): the fused qkv_proj and gate_up_proj are split by the
// loader (row views, engine/family_phi3.cpp); rotate-half RoPE over int(partial_rotary_factor *
// hidden_size) / heads dims, as the converter counts them; LongRoPE from rope_scaling (longrope / su:
// long_factor, short_factor for original_max_position_embeddings, attention_factor, else HF's and the
// converter's sqrt(1 + ln(max / original) / ln(original))).
ModelConfig phi3_from_hf(const json& j, const std::string& source) {
  ModelConfig c;
  c.arch = Arch::kPhi3;
  c.rope_layout = RopeLayout::kHalf;
  read_sizes(j, source, c);
  c.head_dim = c.n_heads > 0 ? c.d_model / c.n_heads : 0;
  c.max_ctx = get_int(j, "max_position_embeddings", source, 4096);
  c.rms_eps = get_float(j, "rms_norm_eps", source, 1e-5f);
  // Newer configs nest the RoPE fields in rope_parameters (with the LongRoPE ones), older ones keep
  // them at the top with LongRoPE in rope_scaling.
  const RopeBase rb = read_rope_base(j, source, 10000.0f, 1.0f);
  const json& rope = rb.fields;
  c.rope_theta = rb.theta;
  if (c.n_heads > 0 && c.d_model > 0 && c.d_model <= ModelLimits::kMaxDim) {
    c.rope_dim = static_cast<int>(static_cast<double>(rb.partial) * c.d_model) / c.n_heads;
  }
  c.rope_orig_ctx = get_int(rope, "original_max_position_embeddings", source,
                            get_int(j, "original_max_position_embeddings", source, c.max_ctx));
  const auto rsi = j.find("rope_scaling");
  const json* rs = rsi != j.end() && rsi->is_object() ? &*rsi : rope.contains("long_factor") ? &rope : nullptr;
  if (rsi != j.end() && !rsi->is_null() && !rsi->is_object()) {
    throw Error(ErrorKind::kFormat, "'" + source + "': rope_scaling must be an object or null, got " + brief(*rsi));
  }
  if (rs) {
    std::string type;
    for (const char* k : {"rope_type", "type"}) {
      if (auto t = rs->find(k); type.empty() && t != rs->end() && t->is_string()) type = t->get<std::string>();
    }
    if (type != "longrope" && type != "su") {
      throw Error(ErrorKind::kUnsupported, "'" + source + "': phi3 rope_scaling " + brief(*rs) +
                                               " is not supported (supported: rope_type longrope or su)");
    }
    if (c.rope_dim > 0 && c.rope_orig_ctx > 0) {  // else validate() names the field
      c.rope_factors_long = get_factors(*rs, "long_factor", source, c.rope_dim);
      c.rope_factors_short = get_factors(*rs, "short_factor", source, c.rope_dim);
      const double scale = static_cast<double>(c.max_ctx) / c.rope_orig_ctx;
      const double computed = scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(c.rope_orig_ctx)) : 1.0;
      c.rope_attn_factor = get_float(*rs, "attention_factor", source, static_cast<float>(computed));
    }
  }
  select_rope_factors(c, 0);  // short until the run context is known
  c.tie_embeddings = get_bool(j, "tie_word_embeddings", source, false);
  read_token_ids(j, source, c);
  return c;
}

// A key that must be absent or null (a feature these layers do not run): refused by name.
void refuse_set(const json& j, const char* key, const std::string& source, const std::string& what) {
  if (auto it = j.find(key); it != j.end() && !it->is_null() && *it != false) {
    throw Error(ErrorKind::kUnsupported, "'" + source + "': " + key + " = " + brief(*it) + " is not supported (" + what + ")");
  }
}

// A string-valued key that must be one of `ok` when present.
void require_one_of(const json& j, const char* key, const std::string& source, std::initializer_list<const char*> ok) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  for (const char* v : ok) {
    if (*it == v) return;
  }
  std::string list;
  for (const char* v : ok) list += (list.empty() ? "" : ", ") + std::string(v);
  throw Error(ErrorKind::kUnsupported, "'" + source + "': " + key + " = " + brief(*it) + " is not supported (supported: " + list + ")");
}

// Gemma 3 (Gemma3ForCausalLM, model_type gemma3_text; Gemma3ForConditionalGeneration's text_config):
// the same layers as the GGUF (engine/family_gemma3.cpp), read the way transformers' Gemma3TextConfig
// reads them, with its defaults for the keys multimodal configs leave out. The norm weights stay HF's
// w (the loader adds the 1 llama.cpp's converter adds, model_loader.cpp); the embedding scale is
// sqrt(d_model) in f32 as llama.cpp computes it (transformers rounds it to the weights' dtype).
ModelConfig gemma3_from_hf(const json& top, const std::string& source) {
  const auto tc = top.find("text_config");
  const json& j = tc != top.end() && tc->is_object() ? *tc : top;
  ModelConfig c;
  c.arch = Arch::kGemma3;
  c.rope_layout = RopeLayout::kHalf;
  c.qk_norm = true;
  c.post_norms = true;
  c.ffn_act = FfnAct::kGeluTanh;
  // transformers' Gemma3MLP reads hidden_activation only (an old hidden_act key is ignored).
  require_one_of(j, "hidden_activation", source, {"gelu_pytorch_tanh"});
  refuse_set(j, "final_logit_softcapping", source, "no logit soft-capping");
  refuse_set(j, "attn_logit_softcapping", source, "no attention soft-capping");
  refuse_set(j, "attention_bias", source, "Gemma 3's projections have no biases");
  c.d_model = get_int(j, "hidden_size", source, std::nullopt);
  c.n_layers = get_int(j, "num_hidden_layers", source, std::nullopt);
  c.d_ff = get_int(j, "intermediate_size", source, std::nullopt);
  c.n_heads = get_int(j, "num_attention_heads", source, 8);
  c.n_kv_heads = get_int(j, "num_key_value_heads", source, 4);
  c.head_dim = get_int(j, "head_dim", source, 256);
  c.vocab_size = get_int(j, "vocab_size", source, 262208);
  c.max_ctx = get_int(j, "max_position_embeddings", source, 131072);
  c.rms_eps = get_float(j, "rms_norm_eps", source, 1e-6f);
  c.rope_dim = c.head_dim;
  c.embedding_scale = c.d_model > 0 ? std::sqrt(static_cast<float>(c.d_model)) : 1.0f;
  const float scalar = get_float(j, "query_pre_attn_scalar", source, 256.0f);
  if (!(scalar > 0.0f) || !std::isfinite(scalar)) {
    throw Error(ErrorKind::kFormat, "'" + source + "': query_pre_attn_scalar = " + std::to_string(scalar) + " must be > 0");
  }
  c.attention_scale = 1.0f / std::sqrt(scalar);
  // RoPE: newer configs nest per layer kind in rope_parameters {full_attention, sliding_attention},
  // older ones give rope_theta, rope_local_base_freq and rope_scaling (the global layers' only).
  const json none = json::object();
  const auto rp = j.find("rope_parameters");
  const bool nested = rp != j.end() && rp->is_object() && rp->contains("full_attention");
  const auto rs = j.find("rope_scaling");
  const json& global = nested ? (*rp)["full_attention"] : rs != j.end() && rs->is_object() ? *rs : none;
  const json& local = nested && rp->contains("sliding_attention") ? (*rp)["sliding_attention"] : none;
  if (!global.is_object() || !local.is_object()) {
    throw Error(ErrorKind::kFormat, "'" + source + "': rope_parameters.full_attention / sliding_attention must be objects");
  }
  c.rope_theta = get_float(global, "rope_theta", source, get_float(j, "rope_theta", source, 1000000.0f));
  c.rope_theta_swa = get_float(local, "rope_theta", source, get_float(j, "rope_local_base_freq", source, 10000.0f));
  auto rope_type = [&](const json& r) {
    for (const char* k : {"rope_type", "type"}) {
      if (auto t = r.find(k); t != r.end() && t->is_string()) return t->get<std::string>();
    }
    return std::string("default");
  };
  if (const std::string t = rope_type(global); t == "linear") {
    const float factor = get_float(global, "factor", source, 0.0f);
    if (!(factor > 0.0f) || !std::isfinite(factor)) {
      throw Error(ErrorKind::kFormat, "'" + source + "': linear rope scaling needs a factor > 0, got " + brief(global));
    }
    // llama.cpp's linear scaling: every pair's frequency divided by the factor (global layers only).
    if (factor != 1.0f && c.rope_dim > 0 && c.rope_dim <= ModelLimits::kMaxDim) {
      c.rope_freq_factors.assign(static_cast<size_t>(c.rope_dim / 2), factor);
    }
  } else if (t != "default") {
    throw Error(ErrorKind::kUnsupported, "'" + source + "': gemma3 rope scaling " + brief(global) +
                                             " is not supported (supported: rope_type default or linear)");
  }
  if (const std::string t = rope_type(local); t != "default") {
    throw Error(ErrorKind::kUnsupported, "'" + source + "': gemma3 sliding_attention rope " + brief(local) +
                                             " is not supported (supported: rope_type default)");
  }
  // Local layers: layer_types when given, else transformers' sliding_window_pattern (layer l is local
  // unless (l + 1) % pattern == 0; llama.cpp's default pattern 6 is the same).
  c.sliding_window = get_int(j, "sliding_window", source, 4096);
  if (c.sliding_window <= 0 || c.sliding_window > ModelLimits::kMaxCtx) {
    throw Error(ErrorKind::kFormat, "'" + source + "': sliding_window = " + std::to_string(c.sliding_window) +
                                        " must be in 1.." + std::to_string(ModelLimits::kMaxCtx));
  }
  if (c.n_layers <= 0 || c.n_layers > ModelLimits::kMaxLayers) return c;  // validate() names it
  c.swa_layers.assign(static_cast<size_t>(c.n_layers), false);
  if (auto lt = j.find("layer_types"); lt != j.end() && !lt->is_null()) {
    if (!lt->is_array() || lt->size() != static_cast<size_t>(c.n_layers)) {
      throw Error(ErrorKind::kFormat, "'" + source + "': layer_types must list num_hidden_layers = " +
                                          std::to_string(c.n_layers) + " entries, got " + brief(*lt));
    }
    for (int l = 0; l < c.n_layers; ++l) {
      const json& t = (*lt)[static_cast<size_t>(l)];
      if (t != "sliding_attention" && t != "full_attention") {
        throw Error(ErrorKind::kUnsupported, "'" + source + "': layer_types[" + std::to_string(l) + "] = " + brief(t) +
                                                 " is not supported (sliding_attention, full_attention)");
      }
      c.swa_layers[static_cast<size_t>(l)] = t == "sliding_attention";
    }
  } else {
    const int pattern = get_int(j, "sliding_window_pattern", source, 6);
    if (pattern <= 0 || pattern > ModelLimits::kMaxLayers) {
      throw Error(ErrorKind::kFormat, "'" + source + "': sliding_window_pattern = " + std::to_string(pattern) +
                                          " must be in 1.." + std::to_string(ModelLimits::kMaxLayers));
    }
    for (int l = 0; l < c.n_layers; ++l) c.swa_layers[static_cast<size_t>(l)] = (l + 1) % pattern != 0;
  }
  c.tie_embeddings = get_bool(top, "tie_word_embeddings", source, get_bool(j, "tie_word_embeddings", source, true));
  for (const json* src : {&top, &j}) read_token_ids(*src, source, c);
  return c;
}

// GPT-2 (GPT2LMHeadModel, model_type gpt2): the same layers as the GGUF (engine/family_gpt2.cpp). The
// Conv1D weights (stored [in, out]) are repacked by the loader (gpt2_hf_tensors); what these layers do
// not run (another activation, unscaled or layer-scaled attention, cross-attention) is refused by name.
ModelConfig gpt2_from_hf(const json& j, const std::string& source) {
  ModelConfig c;
  c.arch = Arch::kGpt2;
  c.layer_norm = true;
  c.gated_ffn = false;
  c.ffn_act = FfnAct::kGeluTanh;
  c.learned_positions = true;
  c.qkv_bias = true;
  c.proj_bias = true;
  // gelu_new is the tanh approximation (as llama.cpp's gpt2 graph runs it); gelu_pytorch_tanh too.
  require_one_of(j, "activation_function", source, {"gelu_new", "gelu_pytorch_tanh"});
  if (get_bool(j, "scale_attn_weights", source, true) == false) {
    throw Error(ErrorKind::kUnsupported, "'" + source + "': scale_attn_weights = false is not supported (scores are scaled by 1/sqrt(head_dim))");
  }
  refuse_set(j, "scale_attn_by_inverse_layer_idx", source, "scores are scaled by 1/sqrt(head_dim) only");
  refuse_set(j, "add_cross_attention", source, "a decoder-only model");
  c.d_model = get_int(j, "n_embd", source, std::nullopt);
  c.n_layers = get_int(j, "n_layer", source, std::nullopt);
  c.n_heads = get_int(j, "n_head", source, std::nullopt);
  c.n_kv_heads = c.n_heads;
  c.vocab_size = get_int(j, "vocab_size", source, std::nullopt);
  // n_positions sizes wpe (llama.cpp's converter writes n_ctx, equal in every GPT-2 checkpoint).
  c.max_ctx = get_int(j, "n_positions", source, get_int(j, "n_ctx", source, 1024));  // transformers' default
  if (c.max_ctx <= 0 || c.max_ctx > ModelLimits::kMaxCtx) {
    throw Error(ErrorKind::kFormat, "'" + source + "': n_positions = " + std::to_string(c.max_ctx) + " must be in 1.." +
                                        std::to_string(ModelLimits::kMaxCtx));
  }
  if (c.d_model > 0 && c.d_model <= ModelLimits::kMaxDim) c.d_ff = get_int(j, "n_inner", source, 4 * c.d_model);
  if (c.n_heads > 0 && c.d_model % c.n_heads != 0) {
    throw Error(ErrorKind::kFormat, "'" + source + "': n_embd = " + std::to_string(c.d_model) +
                                        " must be a multiple of n_head = " + std::to_string(c.n_heads));
  }
  c.head_dim = c.n_heads > 0 ? c.d_model / c.n_heads : 0;
  c.rope_dim = c.head_dim;
  c.rms_eps = get_float(j, "layer_norm_epsilon", source, 1e-5f);
  if (c.n_layers > 0 && c.n_layers <= ModelLimits::kMaxLayers) c.nope_layers.assign(static_cast<size_t>(c.n_layers), true);
  c.tie_embeddings = get_bool(j, "tie_word_embeddings", source, true);
  read_token_ids(j, source, c);
  return c;
}

}  // namespace

ModelConfig config_from_hf_json(const std::string& json_text, const std::string& source) {
  json j = parse_json(json_text, source);
  ModelConfig c;
  std::string arch;
  if (auto it = j.find("architectures"); it != j.end() && it->is_array() && !it->empty() &&
                                         (*it)[0].is_string()) {
    arch = (*it)[0].get<std::string>();
  } else if (auto mt = j.find("model_type"); mt != j.end() && mt->is_string()) {
    arch = mt->get<std::string>();
  }
  if (arch == "Qwen2ForCausalLM" || arch == "qwen2") {
    c.arch = Arch::kQwen2;
    c.qkv_bias = true;
  } else if (arch == "Qwen3ForCausalLM" || arch == "qwen3") {
    c.arch = Arch::kQwen3;
    c.qkv_bias = get_bool(j, "attention_bias", source, false);
    c.qk_norm = true;
  } else if (arch == "LlamaForCausalLM" || arch == "llama") {
    c.arch = Arch::kLlama;
    c.qkv_bias = get_bool(j, "attention_bias", source, false);
  } else if (arch == "Qwen3_5ForConditionalGeneration" || arch == "Qwen3_5ForCausalLM" || arch == "qwen3_5" ||
             arch == "qwen3_5_text") {
    return qwen35_from_hf(j, source);
  } else if (arch == "Phi3ForCausalLM" || arch == "phi3") {
    return phi3_from_hf(j, source);
  } else if (arch == "Gemma3ForCausalLM" || arch == "Gemma3ForConditionalGeneration" || arch == "gemma3_text" ||
             arch == "gemma3") {
    return gemma3_from_hf(j, source);
  } else if (arch == "GPT2LMHeadModel" || arch == "gpt2") {
    return gpt2_from_hf(j, source);
  } else {
    throw Error(ErrorKind::kUnsupported, "'" + source + "': architecture '" + arch +
                                             "' is not supported (supported: Qwen2ForCausalLM, Qwen3ForCausalLM, LlamaForCausalLM, "
                                             "Qwen3_5ForConditionalGeneration, Qwen3_5ForCausalLM, Phi3ForCausalLM, Gemma3ForCausalLM, "
                                             "Gemma3ForConditionalGeneration, GPT2LMHeadModel)");
  }
  c.rope_layout = RopeLayout::kHalf;  // HF stores Q/K unpermuted: rotate-half pairs
  read_sizes(j, source, c);
  c.head_dim = get_int(j, "head_dim", source, c.n_heads > 0 ? c.d_model / c.n_heads : 0);
  c.rope_dim = c.head_dim;
  c.max_ctx = get_int(j, "max_position_embeddings", source, 2048);
  c.rms_eps = get_float(j, "rms_norm_eps", source, 1e-6f);
  c.rope_theta = get_float(j, "rope_theta", source, 10000.0f);
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    c.rope_freq_factors = llama3_rope_factors(*it, c, source);
  }
  if (auto it = j.find("tie_word_embeddings"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      throw Error(ErrorKind::kFormat, "'" + source + "': field 'tie_word_embeddings' must be a bool, got " + it->dump());
    }
    c.tie_embeddings = it->get<bool>();
  }
  read_token_ids(j, source, c);
  return c;
}

ModelConfig config_from_hf_dir(const std::string& dir) {
  fs::path d(dir);
  fs::path cfg = d / "config.json";
  if (!fs::exists(cfg)) {
    throw Error(ErrorKind::kNotFound, "'" + dir + "' has no config.json; not a HuggingFace model directory");
  }
  ModelConfig c = config_from_hf_json(read_text(cfg), cfg.string());
  c.name = fs::path(dir).filename().string();
  if (c.name.empty()) c.name = fs::path(dir).parent_path().filename().string();
  fs::path gen = d / "generation_config.json";
  if (fs::exists(gen)) {
    json g = parse_json(read_text(gen), gen.string());
    for (int id : get_id_list(g, "eos_token_id", gen.string())) {
      if (std::find(c.eos_ids.begin(), c.eos_ids.end(), id) == c.eos_ids.end()) c.eos_ids.push_back(id);
    }
  }
  return c;
}

}  // namespace anelm::engine
