// GPT-2 (llama.cpp arch gpt2: LayerNorms with biases, learned absolute positions, fused QKV with
// bias, output and FFN biases, an ungated tanh-GELU FFN, tied head): a random tiny file from `anelm
// make-model --arch gpt2` gives llama.cpp's greedy ids (recorded fixture: tests/data/engine/
// make_family_llamacpp_fixture.py --arch gpt2; prompts of 8, 60 and 440 tokens, the last prefilled
// near the end of the 512 learned positions) as f32, f16 and q8_0 (the last two up to llama.cpp's
// near ties) and its logits; each difference is load-bearing; the learned positions bound the
// context; bad files are refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/error.h"
#include "engine/families.h"
#include "engine/gguf.h"
#include "engine/generator.h"
#include "engine/gguf_writer.h"
#include "engine/kernels/kernels.h"
#include "engine/model_loader.h"
#include "engine/transformer.h"
#include "tests/engine/family_parity.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;

constexpr int kPositions = 512;  // the tiny file's gpt2.context_length (tools/model_maker_gpt2.cpp)

const nlohmann::json& fixture() {
  static const nlohmann::json fx = load_family_fixture("gpt2_tiny_llamacpp.json");
  return fx;
}

std::string tiny(DType type) { return made_tiny(Arch::kGpt2, type, fixture()["seed"].get<uint64_t>()); }

fs::path temp_dir() {
  static const fs::path dir = anelm::testing::make_temp_dir("gpt2-variants");
  return dir;
}

// A copy of the f32 tiny file whose tensors pass through `keep` (false: dropped) and whose f32
// tensors named by `fill` get the value it returns for them (nullopt: unchanged).
std::string tensor_variant(const std::string& name, const std::function<bool(const std::string&)>& keep,
                           const std::function<std::optional<float>(const std::string&)>& fill) {
  const std::string out = (temp_dir() / (name + ".gguf")).string();
  auto g = GgufFile::open(tiny(DType::kF32));
  GgufWriter w(static_cast<uint32_t>(g->alignment()));
  for (const std::string& k : g->keys()) w.add_raw(k, g->raw_value(k));
  std::vector<TensorView> views;
  std::vector<std::vector<float>> filled;
  filled.reserve(g->tensors().size());
  for (const GgufTensorInfo& info : g->tensors()) {
    if (!keep(info.name)) continue;
    TensorView v = g->tensor_view(info);
    if (const std::optional<float> value = fill(info.name)) {
      filled.emplace_back(static_cast<size_t>(v.numel()), *value);
      v.data = filled.back().data();
    }
    views.push_back(v);
    w.add_tensor(info.name, v.dtype, std::vector<int64_t>(v.shape.begin(), v.shape.begin() + v.ndim));
  }
  w.begin(out);
  for (const TensorView& v : views) w.write_data(v.data, static_cast<size_t>(v.nbytes));
  w.finish();
  return out;
}

std::vector<int> want(const char* prompt) { return fixture()["generated"]["f32"][prompt].get<std::vector<int>>(); }

std::vector<int> greedy(const std::string& path, const char* prompt) {
  auto eng = load_engine(path);
  return greedy_ids(*eng, fixture_prompt(fixture(), prompt), static_cast<int>(want(prompt).size()));
}

const auto keep_all = [](const std::string&) { return true; };

TEST(Gpt2, ReadsWhatLlamaCppReads) {
  auto eng = load_engine(tiny(DType::kF32));
  const ModelConfig& c = eng->config();
  EXPECT_EQ(c.arch, Arch::kGpt2);
  EXPECT_EQ(c.max_ctx, kPositions);
  EXPECT_EQ(c.n_kv_heads, c.n_heads);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);  // gpt2.attention.layer_norm_epsilon
  EXPECT_TRUE(c.layer_norm);
  EXPECT_FALSE(c.gated_ffn);
  EXPECT_EQ(c.ffn_act, FfnAct::kGeluTanh);
  EXPECT_TRUE(c.learned_positions);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.tie_embeddings);  // no output.weight: token_embd is the head
  for (int l = 0; l < c.n_layers; ++l) EXPECT_FALSE(c.rope(l)) << "layer " << l << " rotates";
  // The engine's context is clamped to the learned positions (load_engine asked for 4096).
  EXPECT_EQ(eng->ctx(), kPositions);
}

// Q, K, V and their biases are views of the fused attn_qkv tensors (no copy).
TEST(Gpt2, FusedQkvAndBiasAreViews) {
  auto m = load_model(tiny(DType::kF32));
  const ModelConfig& c = m->config;
  for (const LayerWeights& L : m->weights.layers) {
    const auto* q = static_cast<const float*>(L.wq.data);
    EXPECT_EQ(L.wk.data, q + static_cast<int64_t>(c.q_dim()) * c.d_model);
    EXPECT_EQ(L.wv.data, q + static_cast<int64_t>(c.q_dim() + c.kv_dim()) * c.d_model);
    EXPECT_EQ(L.bk.data, static_cast<const float*>(L.bq.data) + c.q_dim());
    EXPECT_EQ(L.bv.data, static_cast<const float*>(L.bq.data) + c.q_dim() + c.kv_dim());
    EXPECT_EQ(L.bv.numel(), c.kv_dim());
    EXPECT_TRUE(L.w_gate.empty());
  }
  EXPECT_EQ(m->weights.lm_head.data, m->weights.tok_embd.data);
  EXPECT_EQ(m->weights.pos_embd.rows(), kPositions);
}

// f32: every id and (teacher-forced) every top logit equal llama.cpp's.
TEST(Gpt2, F32IdsAndLogitsEqualLlamaCpp) {
  auto eng = load_engine(tiny(DType::kF32));
  expect_f32_equal(*eng, fixture(), 4e-3f);
}

class Gpt2Rounded : public ::testing::TestWithParam<DType> {};

TEST_P(Gpt2Rounded, MatchesLlamaCppUpToItsNearTies) {
  auto eng = load_engine(tiny(GetParam()));
  expect_rounded_parity(*eng, fixture(), dtype_name(GetParam()), 1.0f, "gpt2");
}

INSTANTIATE_TEST_SUITE_P(Types, Gpt2Rounded, ::testing::Values(DType::kF16, DType::kQ8_0));

// Each difference moves the ids: positions all zero (no learned positions), LayerNorm biases zero,
// projection biases zero.
TEST(Gpt2, EveryDifferenceIsLoadBearing) {
  const struct {
    const char* what;
    std::function<bool(const std::string&)> match;
  } cases[] = {
      {"position_embd", [](const std::string& n) { return n == "position_embd.weight"; }},
      {"norm biases", [](const std::string& n) { return n.find("norm.bias") != std::string::npos; }},
      {"attn_qkv.bias", [](const std::string& n) { return n.find("attn_qkv.bias") != std::string::npos; }},
      {"attn_output.bias", [](const std::string& n) { return n.find("attn_output.bias") != std::string::npos; }},
      {"ffn biases", [](const std::string& n) { return n.find("ffn_up.bias") != std::string::npos || n.find("ffn_down.bias") != std::string::npos; }},
  };
  for (const auto& c : cases) {
    const std::string out = tensor_variant(std::string("zero-") + c.what, keep_all, [&](const std::string& n) -> std::optional<float> {
      if (c.match(n)) return 0.0f;
      return std::nullopt;
    });
    EXPECT_NE(greedy(out, "mid"), want("mid")) << c.what << " set to 0";
  }
}

// Every tensor llama.cpp's gpt2 loader requires is required here, named when missing.
TEST(Gpt2, MissingTensorsAreRefusedByName) {
  for (const char* t : {"position_embd.weight", "output_norm.bias", "blk.1.attn_qkv.weight", "blk.0.attn_qkv.bias",
                        "blk.2.attn_norm.bias", "blk.1.attn_output.bias", "blk.0.ffn_up.bias", "blk.2.ffn_down.bias"}) {
    const std::string out = tensor_variant(std::string("without-") + t, [&](const std::string& n) { return n != t; },
                                           [](const std::string&) { return std::nullopt; });
    try {
      load_engine(out);
      ADD_FAILURE() << "a gpt2 file without " << t << " loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(t), std::string::npos) << e.what();
    }
  }
}

// gpt2.context_length sizes position_embd: it is required, and a table of another length is refused.
TEST(Gpt2, ContextLengthIsRequiredAndMustMatchThePositions) {
  const std::string no_key = (temp_dir() / "no-ctx.gguf").string();
  copy_gguf(tiny(DType::kF32), no_key, [](const std::string& k) -> std::optional<std::string> {
    if (k == "gpt2.context_length") return std::nullopt;
    return k;
  });
  try {
    load_engine(no_key);
    ADD_FAILURE() << "a gpt2 file without gpt2.context_length loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpt2.context_length"), std::string::npos) << e.what();
  }
  const std::string longer = (temp_dir() / "ctx-1024.gguf").string();
  // Rewrite the key's value: a 1024-position context over a 512-row table.
  auto g = GgufFile::open(tiny(DType::kF32));
  GgufWriter w(static_cast<uint32_t>(g->alignment()));
  for (const std::string& k : g->keys()) {
    if (k == "gpt2.context_length") {
      w.add_u32(k, 1024);
    } else {
      w.add_raw(k, g->raw_value(k));
    }
  }
  std::vector<TensorView> views;
  for (const GgufTensorInfo& info : g->tensors()) {
    views.push_back(g->tensor_view(info));
    w.add_tensor(info.name, views.back().dtype, std::vector<int64_t>(views.back().shape.begin(), views.back().shape.begin() + views.back().ndim));
  }
  w.begin(longer);
  for (const TensorView& v : views) w.write_data(v.data, static_cast<size_t>(v.nbytes));
  w.finish();
  try {
    load_engine(longer);
    ADD_FAILURE() << "a gpt2 file with context_length 1024 over 512 positions loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("position_embd.weight"), std::string::npos) << e.what();
  }
}

// The learned positions bound the context: the engine's ctx is clamped to them, a prompt that fits
// runs, one longer than them is refused with the context error (generate and forward).
TEST(Gpt2, PromptsBeyondTheLearnedPositionsAreRefused) {
  auto eng = load_engine(tiny(DType::kF32), Backend::kCpu, 4096);
  ASSERT_EQ(eng->ctx(), kPositions);
  std::vector<int> prompt(kPositions - 1);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int>((i * 31 + 7) % 512);
  EXPECT_EQ(greedy_ids(*eng, prompt, 1).size(), 1u);
  prompt.push_back(3);
  prompt.push_back(4);
  try {
    greedy_ids(*eng, prompt, 1);
    ADD_FAILURE() << "a " << prompt.size() << "-token prompt ran over " << kPositions << " positions";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the context (512 tokens)"), std::string::npos) << e.what();
  }
  try {
    eng->forward(prompt, 0, false);
    ADD_FAILURE() << "forward over " << prompt.size() << " positions ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the context of 512"), std::string::npos) << e.what();
  }
}

// Every compiled ISA's kernels (LayerNorm, GELU, the biases' adds) give llama.cpp's f32 ids; a
// Generator given more context than the learned positions (the engine never builds one) is refused
// by the transformer when a pass reaches past the table, not read beyond it.
TEST(Gpt2, EveryIsaGivesLlamaCppIdsAndThePositionTableIsBounded) {
  auto m = load_model(tiny(DType::kF32));
  const auto prompt = fixture_prompt(fixture(), "mid");
  for (kernels::Isa isa : kernels::supported_isas()) {
    ThreadPool pool(2);
    Transformer tf(m->config, m->weights, pool, *kernels::kernel_table(isa));
    Generator gen(tf, 2 * kPositions, 64, DType::kF16, 2);
    GenerateRequest r;
    r.prompt = prompt;
    r.max_tokens = static_cast<int>(want("mid").size());
    r.sampling.temperature = 0.0f;
    r.ignore_eos = true;
    EXPECT_EQ(gen.generate(r, {}).ids, want("mid")) << kernels::isa_name(isa);
    std::vector<int> beyond(kPositions + 1, 5);
    try {
      gen.forward(beyond, 0, false);
      ADD_FAILURE() << kernels::isa_name(isa) << ": a pass over " << beyond.size() << " positions ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("512 learned positions"), std::string::npos) << e.what();
    }
  }
}

// --backend ane runs GPT-2's own programs (engine/ane/ane_families.h) on the simulator; their
// parity with the CPU is tests/engine/ane_families_test.cpp's.
TEST(Gpt2, AneRunsItsProgramsOnTheSimulator) {
  auto eng = load_engine(tiny(DType::kF32), Backend::kAne);
  EXPECT_EQ(eng->stats().backend, "ane (simulator)");
}

}  // namespace
}  // namespace anelm::engine
