// Gemma 3 and GPT-2 from Hugging Face safetensors directories: `anelm make-model --arch gemma3|gpt2
// --format hf` writes the same seeded weights as its GGUF in the HF checkpoint's conventions (Gemma:
// Gemma3RMSNorm weights stored as w, not 1 + w, pre_feedforward_layernorm; GPT-2: Conv1D weights
// stored [in, out], wte/wpe/h.N/ln_f names), the loader converts them back (the Gemma norms' 1 added,
// the Conv1D weights repacked once), so the HF directory binds bitwise the GGUF's weights, gives the
// GGUF's greedy ids and logits, and llama.cpp's recorded ones (fixtures of gemma3_llamacpp_test.cpp and
// gpt2_llamacpp_test.cpp, same tolerance); what these layers do not run is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "engine/error.h"
#include "engine/model_loader.h"
#include "engine/safetensors.h"
#include "tests/engine/family_parity.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;

const nlohmann::json& fixture(Arch arch) {
  static const nlohmann::json gemma = load_family_fixture("gemma3_tiny_llamacpp.json");
  static const nlohmann::json gpt2 = load_family_fixture("gpt2_tiny_llamacpp.json");
  return arch == Arch::kGemma3 ? gemma : gpt2;
}

uint64_t seed(Arch arch) { return fixture(arch)["seed"].get<uint64_t>(); }

fs::path temp_dir() {
  static const fs::path dir = anelm::testing::make_temp_dir("hf-gemma3-gpt2");
  return dir;
}

// `anelm make-model --arch <arch> --shape tiny --dtype <type> --seed <fixture seed> --format hf`, once.
std::string made_hf(Arch arch, DType type) {
  static std::map<std::string, std::string> made;
  const std::string name = std::string(arch_name(arch)) + "-" + dtype_name(type) + "-hf";
  if (auto it = made.find(name); it != made.end()) return it->second;
  tools::MakeModelOptions o;
  o.arch = arch;
  o.shape = "tiny";
  o.dtype = type;
  o.seed = seed(arch);
  o.format = ModelFormat::kHf;
  return made[name] = tools::make_model(o, (temp_dir() / name).string()).path;
}

std::string made_gguf(Arch arch, DType type) { return made_tiny(arch, type, seed(arch)); }

// A copy of an HF directory with config.json passed through `edit_config` and every tensor through
// `edit`: nullopt drops it, else its (new name, new shape) over the same bytes.
struct TensorEdit {
  std::string name;
  std::vector<int64_t> shape;
};
std::string hf_variant(const std::string& src, const std::string& name, const std::function<void(nlohmann::json&)>& edit_config,
                       const std::function<std::optional<TensorEdit>(const SafetensorsEntry&)>& edit = {}) {
  const fs::path out = temp_dir() / name;
  fs::create_directories(out);
  std::ifstream in(fs::path(src) / "config.json");
  nlohmann::json cfg = nlohmann::json::parse(in);
  edit_config(cfg);
  std::ofstream(out / "config.json") << cfg.dump(2);
  auto st = SafetensorsFile::open(src);
  std::vector<SafetensorsWriter::Decl> decls;
  std::vector<const SafetensorsEntry*> kept;
  for (const std::string& n : st->names()) {
    const SafetensorsEntry* e = st->find(n);
    std::optional<TensorEdit> to = edit ? edit(*e) : TensorEdit{e->name, e->shape};
    if (!to) continue;
    const DType dt = e->dtype == "F32" ? DType::kF32 : e->dtype == "F16" ? DType::kF16 : DType::kBF16;
    decls.push_back({to->name, dt, to->shape});
    kept.push_back(e);
  }
  SafetensorsWriter w((out / "model.safetensors").string(), decls);
  for (const SafetensorsEntry* e : kept) w.append_data(e->data, static_cast<size_t>(e->nbytes));
  w.finish();
  return out.string();
}

const auto same_config = [](nlohmann::json&) {};

// Every bound tensor of `hf` has the GGUF's dtype, shape and bytes (after the loader's conversions).
void expect_same_weights(const LoadedModel& gguf, const LoadedModel& hf) {
  auto same = [](const TensorView& a, const TensorView& b, const std::string& what) {
    ASSERT_EQ(a.empty(), b.empty()) << what;
    if (a.empty()) return;
    EXPECT_EQ(a.dtype, b.dtype) << what;
    ASSERT_EQ(a.ndim, b.ndim) << what;
    EXPECT_EQ(a.shape, b.shape) << what;
    ASSERT_EQ(a.nbytes, b.nbytes) << what;
    EXPECT_EQ(std::memcmp(a.data, b.data, static_cast<size_t>(a.nbytes)), 0) << what << ": bytes differ";
  };
  const ModelWeights &a = gguf.weights, &b = hf.weights;
  same(a.tok_embd, b.tok_embd, "tok_embd");
  same(a.pos_embd, b.pos_embd, "pos_embd");
  same(a.out_norm, b.out_norm, "out_norm");
  same(a.out_norm_b, b.out_norm_b, "out_norm_b");
  same(a.lm_head, b.lm_head, "lm_head");
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const LayerWeights &x = a.layers[l], &y = b.layers[l];
    const std::string at = " of layer " + std::to_string(l);
    same(x.attn_norm, y.attn_norm, "attn_norm" + at);
    same(x.attn_norm_b, y.attn_norm_b, "attn_norm_b" + at);
    same(x.wq, y.wq, "wq" + at);
    same(x.wk, y.wk, "wk" + at);
    same(x.wv, y.wv, "wv" + at);
    same(x.bq, y.bq, "bq" + at);
    same(x.bk, y.bk, "bk" + at);
    same(x.bv, y.bv, "bv" + at);
    same(x.q_norm, y.q_norm, "q_norm" + at);
    same(x.k_norm, y.k_norm, "k_norm" + at);
    same(x.wo, y.wo, "wo" + at);
    same(x.bo, y.bo, "bo" + at);
    same(x.attn_post_norm, y.attn_post_norm, "attn_post_norm" + at);
    same(x.ffn_norm, y.ffn_norm, "ffn_norm" + at);
    same(x.ffn_norm_b, y.ffn_norm_b, "ffn_norm_b" + at);
    same(x.w_gate, y.w_gate, "w_gate" + at);
    same(x.w_up, y.w_up, "w_up" + at);
    same(x.b_up, y.b_up, "b_up" + at);
    same(x.w_down, y.w_down, "w_down" + at);
    same(x.b_down, y.b_down, "b_down" + at);
    same(x.ffn_post_norm, y.ffn_post_norm, "ffn_post_norm" + at);
  }
}

// The config the HF directory reads is the one the GGUF reads, in every field these families use.
void expect_same_config(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.d_model, b.d_model);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.d_ff, b.d_ff);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.max_ctx, b.max_ctx);
  EXPECT_EQ(a.rms_eps, b.rms_eps);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.rope_dim, b.rope_dim);
  EXPECT_EQ(a.rope_layout, b.rope_layout);
  EXPECT_EQ(a.rope_freq_factors, b.rope_freq_factors);
  EXPECT_EQ(a.qkv_bias, b.qkv_bias);
  EXPECT_EQ(a.qk_norm, b.qk_norm);
  EXPECT_EQ(a.tie_embeddings, b.tie_embeddings);
  EXPECT_EQ(a.embedding_scale, b.embedding_scale);
  EXPECT_EQ(a.attn_scale(), b.attn_scale());
  EXPECT_EQ(a.nope_layers, b.nope_layers);
  EXPECT_EQ(a.ffn_act, b.ffn_act);
  EXPECT_EQ(a.post_norms, b.post_norms);
  EXPECT_EQ(a.sliding_window, b.sliding_window);
  EXPECT_EQ(a.swa_layers, b.swa_layers);
  EXPECT_EQ(a.rope_theta_swa, b.rope_theta_swa);
  EXPECT_EQ(a.layer_norm, b.layer_norm);
  EXPECT_EQ(a.gated_ffn, b.gated_ffn);
  EXPECT_EQ(a.learned_positions, b.learned_positions);
}

// Largest |HF - GGUF| logit over every teacher-forced position of llama.cpp's f32 path for `prompt`.
double logit_distance(Engine& a, Engine& b, const nlohmann::json& fx, const std::string& prompt) {
  std::vector<int> seq = fixture_prompt(fx, prompt);
  const auto gen = fx["generated"]["f32"][prompt].get<std::vector<int>>();
  seq.insert(seq.end(), gen.begin(), gen.end() - 1);
  const auto la = a.forward(seq, 0, /*all_logits=*/true);
  const std::vector<float> want(la.begin(), la.end());
  const auto lb = b.forward(seq, 0, /*all_logits=*/true);
  EXPECT_EQ(lb.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size() && i < lb.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(lb[i] - want[i])));
  return worst;
}

// The HF directory against the GGUF of the same weights: same config, bitwise the same weights,
// the GGUF's greedy ids (every fixture prompt, as many tokens as llama.cpp generated: >= 32) and
// logits; in f32 also llama.cpp's ids and logits within the family test's tolerance.
void expect_hf_equals_gguf(Arch arch, DType type) {
  const nlohmann::json& fx = fixture(arch);
  const std::string hf = made_hf(arch, type), gguf = made_gguf(arch, type);
  expect_same_weights(*load_model(gguf), *load_model(hf));
  auto a = load_engine(gguf), b = load_engine(hf);
  expect_same_config(a->config(), b->config());
  for (const auto& [name, expected] : fx["generated"]["f32"].items()) {
    const auto prompt = fixture_prompt(fx, name);
    const int n = static_cast<int>(expected.size());
    ASSERT_GE(n, 32) << name;
    EXPECT_EQ(greedy_ids(*b, prompt, n), greedy_ids(*a, prompt, n)) << dtype_name(type) << " prompt '" << name << "'";
    const double worst = logit_distance(*a, *b, fx, name);
    std::printf("[%s hf %s %s] max |HF - GGUF| teacher-forced logit %.3g\n", arch_name(arch), dtype_name(type), name.c_str(), worst);
    EXPECT_LE(worst, 1e-5) << name;
  }
  if (type == DType::kF32) expect_f32_equal(*b, fx, 4e-3f);  // llama.cpp's, as the GGUF tests
}

// An HF directory that loads must fail naming `what`.
void expect_refused(const std::string& dir, const std::string& what, const std::string& also = "") {
  try {
    load_model(dir);
    ADD_FAILURE() << "'" << dir << "' loaded; expected a refusal naming " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    if (!also.empty()) {
      EXPECT_NE(std::string(e.what()).find(also), std::string::npos) << e.what();
    }
  }
}

class HfEqualsGguf : public ::testing::TestWithParam<std::tuple<Arch, DType>> {};

TEST_P(HfEqualsGguf, SameWeightsIdsAndLogits) { expect_hf_equals_gguf(std::get<0>(GetParam()), std::get<1>(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Families, HfEqualsGguf,
                         ::testing::Combine(::testing::Values(Arch::kGemma3, Arch::kGpt2),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)),
                         [](const auto& info) {
                           return std::string(arch_name(std::get<0>(info.param))) + "_" + dtype_name(std::get<1>(info.param));
                         });

// ---- Gemma 3 ----

TEST(Gemma3Hf, ConfigAsTransformersReadsIt) {
  const ModelConfig c = load_model(made_hf(Arch::kGemma3, DType::kF32))->config;
  EXPECT_EQ(c.arch, Arch::kGemma3);
  EXPECT_EQ(c.swa_layers, (std::vector<bool>{true, true, true, true, true, false, true}));
  EXPECT_EQ(c.sliding_window, 64);
  EXPECT_EQ(c.rope_freq_factors, std::vector<float>(64, 8.0f));  // rope_scaling linear 8 (global layers)
  EXPECT_FLOAT_EQ(c.rope_theta_swa, 1e4f);                       // rope_local_base_freq
  EXPECT_FLOAT_EQ(c.attn_scale(), 1.0f / std::sqrt(128.0f));      // query_pre_attn_scalar 128
  EXPECT_FALSE(c.tie_embeddings);
}

// Gemma3ForConditionalGeneration's layout: the text model in text_config, its tensors under
// model.language_model. (and language_model.model. in older checkpoints): the same ids.
TEST(Gemma3Hf, ConditionalGenerationLayoutGivesTheSameIds) {
  const std::string src = made_hf(Arch::kGemma3, DType::kF32);
  const auto wrap = [](nlohmann::json& cfg) {
    nlohmann::json text = cfg;
    text.erase("architectures");
    cfg = {{"architectures", {"Gemma3ForConditionalGeneration"}}, {"model_type", "gemma3"},
           {"tie_word_embeddings", text["tie_word_embeddings"]}, {"text_config", text},
           {"vision_config", {{"model_type", "siglip_vision_model"}}}};
  };
  const nlohmann::json& fx = fixture(Arch::kGemma3);
  const auto want = fx["generated"]["f32"]["mid"].get<std::vector<int>>();
  for (const char* prefix : {"model.language_model.", "language_model.model."}) {
    const std::string dir = hf_variant(src, std::string("cond-") + prefix, wrap, [&](const SafetensorsEntry& e) -> std::optional<TensorEdit> {
      if (e.name.rfind("model.", 0) != 0) return TensorEdit{e.name, e.shape};
      return TensorEdit{prefix + e.name.substr(6), e.shape};
    });
    auto eng = load_engine(dir);
    EXPECT_EQ(greedy_ids(*eng, fixture_prompt(fx, "mid"), static_cast<int>(want.size())), want) << prefix;
  }
}

TEST(Gemma3Hf, UnsupportedConfigIsRefusedByName) {
  const std::string src = made_hf(Arch::kGemma3, DType::kF32);
  expect_refused(hf_variant(src, "g-softcap", [](nlohmann::json& c) { c["final_logit_softcapping"] = 30.0; }),
                 "final_logit_softcapping");
  expect_refused(hf_variant(src, "g-attn-softcap", [](nlohmann::json& c) { c["attn_logit_softcapping"] = 50.0; }),
                 "attn_logit_softcapping");
  expect_refused(hf_variant(src, "g-gelu", [](nlohmann::json& c) { c["hidden_activation"] = "gelu"; }), "hidden_activation",
                 "gelu_pytorch_tanh");
  expect_refused(hf_variant(src, "g-yarn", [](nlohmann::json& c) { c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4}}; }),
                 "rope scaling", "yarn");
  expect_refused(hf_variant(src, "g-layer-types", [](nlohmann::json& c) { c["layer_types"][3] = "chunked_attention"; }),
                 "layer_types[3]");
  expect_refused(hf_variant(src, "g-window", [](nlohmann::json& c) { c["sliding_window"] = -1; }), "sliding_window");
  expect_refused(hf_variant(src, "g-qpas", [](nlohmann::json& c) { c["query_pre_attn_scalar"] = 0; }), "query_pre_attn_scalar");
}

TEST(Gemma3Hf, MissingOrMisshapenTensorsAreRefusedByName) {
  const std::string src = made_hf(Arch::kGemma3, DType::kF32);
  int i = 0;  // directory names without the tensor's: the error must name it, not its path
  for (const char* t : {"model.layers.2.pre_feedforward_layernorm.weight", "model.layers.0.post_attention_layernorm.weight",
                        "model.layers.4.post_feedforward_layernorm.weight", "model.layers.1.self_attn.k_norm.weight"}) {
    expect_refused(hf_variant(src, "g-without-" + std::to_string(i++), same_config,
                              [&](const SafetensorsEntry& e) -> std::optional<TensorEdit> {
                                if (e.name == t) return std::nullopt;
                                return TensorEdit{e.name, e.shape};
                              }),
                   t, "missing");
  }
  // o_proj stored the other way round ([q_dim, d_model] = [512, 256] instead of [256, 512]).
  expect_refused(hf_variant(src, "g-oproj", same_config,
                            [](const SafetensorsEntry& e) -> std::optional<TensorEdit> {
                              if (e.name != "model.layers.1.self_attn.o_proj.weight") return TensorEdit{e.name, e.shape};
                              return TensorEdit{e.name, {e.shape[1], e.shape[0]}};
                            }),
                 "model.layers.1.self_attn.o_proj.weight", "[512, 256]");
}

// ---- GPT-2 ----

TEST(Gpt2Hf, ConfigAsTransformersReadsIt) {
  const ModelConfig c = load_model(made_hf(Arch::kGpt2, DType::kF32))->config;
  EXPECT_EQ(c.arch, Arch::kGpt2);
  EXPECT_EQ(c.max_ctx, 512);  // n_positions: wpe's rows
  EXPECT_EQ(c.d_ff, 1024);    // n_inner null: 4 * n_embd
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_TRUE(c.learned_positions);
}

// The Conv1D weights are repacked once into owned buffers (Q, K, V still one tensor's rows); the
// other tensors are views of the mapped file.
TEST(Gpt2Hf, Conv1dWeightsAreRepackedOnceAndTheRestMapped) {
  auto m = load_model(made_hf(Arch::kGpt2, DType::kF32));
  const ModelConfig& c = m->config;
  for (const LayerWeights& L : m->weights.layers) {
    EXPECT_EQ(L.wk.data, static_cast<const float*>(L.wq.data) + static_cast<int64_t>(c.q_dim()) * c.d_model);
    EXPECT_EQ(L.bk.data, static_cast<const float*>(L.bq.data) + c.q_dim());
    for (const TensorView* t : {&L.wo, &L.w_up, &L.w_down}) EXPECT_TRUE(t->name.ends_with(".weight (transposed)")) << t->name;
    EXPECT_TRUE(L.attn_norm.name.ends_with(".ln_1.weight")) << L.attn_norm.name;  // a view of the file
  }
  EXPECT_EQ(m->weights.lm_head.data, m->weights.tok_embd.data);
}

// Checkpoints saved by transformers name every tensor under `transformer.` (and may store the tied
// lm_head): the same ids.
TEST(Gpt2Hf, TransformerPrefixGivesTheSameIds) {
  const std::string dir = hf_variant(made_hf(Arch::kGpt2, DType::kF32), "gpt2-prefixed", same_config,
                                     [](const SafetensorsEntry& e) -> std::optional<TensorEdit> {
                                       return TensorEdit{"transformer." + e.name, e.shape};
                                     });
  const nlohmann::json& fx = fixture(Arch::kGpt2);
  const auto want = fx["generated"]["f32"]["mid"].get<std::vector<int>>();
  auto eng = load_engine(dir);
  EXPECT_EQ(greedy_ids(*eng, fixture_prompt(fx, "mid"), static_cast<int>(want.size())), want);
}

TEST(Gpt2Hf, UnsupportedConfigIsRefusedByName) {
  const std::string src = made_hf(Arch::kGpt2, DType::kF32);
  expect_refused(hf_variant(src, "p-relu", [](nlohmann::json& c) { c["activation_function"] = "relu"; }),
                 "activation_function", "gelu_new");
  expect_refused(hf_variant(src, "p-layer-idx", [](nlohmann::json& c) { c["scale_attn_by_inverse_layer_idx"] = true; }),
                 "scale_attn_by_inverse_layer_idx");
  expect_refused(hf_variant(src, "p-unscaled", [](nlohmann::json& c) { c["scale_attn_weights"] = false; }), "scale_attn_weights");
  expect_refused(hf_variant(src, "p-cross", [](nlohmann::json& c) { c["add_cross_attention"] = true; }), "add_cross_attention");
  expect_refused(hf_variant(src, "p-heads", [](nlohmann::json& c) { c["n_head"] = 3; }), "n_head");
  expect_refused(hf_variant(src, "p-positions", [](nlohmann::json& c) { c["n_positions"] = 0; }), "n_positions");
}

TEST(Gpt2Hf, MissingOrMisshapenTensorsAreRefusedByName) {
  const std::string src = made_hf(Arch::kGpt2, DType::kF32);
  int i = 0;  // directory names without the tensor's: the error must name it, not its path
  for (const char* t : {"h.1.attn.c_attn.weight", "h.0.attn.c_attn.bias", "h.2.ln_1.bias", "h.1.mlp.c_proj.weight", "wpe.weight",
                        "ln_f.bias"}) {
    expect_refused(hf_variant(src, "p-without-" + std::to_string(i++), same_config,
                              [&](const SafetensorsEntry& e) -> std::optional<TensorEdit> {
                                if (e.name == t) return std::nullopt;
                                return TensorEdit{e.name, e.shape};
                              }),
                   t, "missing");
  }
  // c_attn in nn.Linear's [out, in] layout instead of Conv1D's [in, out].
  expect_refused(hf_variant(src, "p-linear-layout", same_config,
                            [](const SafetensorsEntry& e) -> std::optional<TensorEdit> {
                              if (e.name != "h.0.attn.c_attn.weight") return TensorEdit{e.name, e.shape};
                              return TensorEdit{e.name, {e.shape[1], e.shape[0]}};
                            }),
                 "h.0.attn.c_attn.weight", "Conv1D [in, out] = [256, 768]");
  // A config whose n_inner does not describe the tensors: the FFN weights are named.
  expect_refused(hf_variant(src, "p-inner", [](nlohmann::json& c) { c["n_inner"] = 512; }), "mlp.c_fc.weight", "[256, 512]");
}

}  // namespace
}  // namespace anelm::engine
