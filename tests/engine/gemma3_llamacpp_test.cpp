// Gemma 3 (llama.cpp arch gemma3: q/k norms, post-attention and post-FFN norms, GeGLU, embeddings
// times sqrt(d_model), 64-position sliding windows on 6 of the 7 tiny layers with their own RoPE
// base, linear RoPE scaling on the global layer): a random tiny file from `anelm make-model --arch
// gemma3` gives llama.cpp's greedy ids (recorded fixture: tests/data/engine/
// make_family_llamacpp_fixture.py; the 'mid' and 'long' prompts cross the window) as f32, f16 and
// q8_0 (the last two up to llama.cpp's near ties) and its logits; each difference is load-bearing;
// what llama.cpp would run and anelm does not is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/error.h"
#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "tests/engine/family_parity.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;

const nlohmann::json& fixture() {
  static const nlohmann::json fx = load_family_fixture("gemma3_tiny_llamacpp.json");
  return fx;
}

std::string tiny(DType type) { return made_tiny(Arch::kGemma3, type, fixture()["seed"].get<uint64_t>()); }

fs::path temp_dir() {
  static const fs::path dir = anelm::testing::make_temp_dir("gemma3-variants");
  return dir;
}

// A copy of the f32 tiny file with its metadata renamed or dropped by `key` (copy_gguf).
std::string variant(const std::string& name, const std::function<std::optional<std::string>(const std::string&)>& key) {
  const std::string out = (temp_dir() / (name + ".gguf")).string();
  copy_gguf(tiny(DType::kF32), out, key);
  return out;
}

// A copy of the f32 tiny file whose tensors pass through `keep` (false: dropped) and whose f32
// vectors named by `ones` are all 1.
std::string tensor_variant(const std::string& name, const std::function<bool(const std::string&)>& keep,
                           const std::function<bool(const std::string&)>& ones) {
  const std::string out = (temp_dir() / (name + ".gguf")).string();
  auto g = GgufFile::open(tiny(DType::kF32));
  GgufWriter w(static_cast<uint32_t>(g->alignment()));
  for (const std::string& k : g->keys()) w.add_raw(k, g->raw_value(k));
  std::vector<TensorView> views;
  std::vector<std::vector<float>> filled;
  for (const GgufTensorInfo& info : g->tensors()) {
    if (!keep(info.name)) continue;
    TensorView v = g->tensor_view(info);
    if (ones(info.name)) {
      filled.emplace_back(static_cast<size_t>(v.numel()), 1.0f);
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

TEST(Gemma3, ReadsWhatLlamaCppReads) {
  auto eng = load_engine(tiny(DType::kF32));
  const ModelConfig& c = eng->config();
  EXPECT_EQ(c.arch, Arch::kGemma3);
  EXPECT_EQ(c.swa_layers, (std::vector<bool>{true, true, true, true, true, false, true}));  // every 6th global
  EXPECT_EQ(c.sliding_window, 64);
  EXPECT_EQ(c.window(0), 64);
  EXPECT_EQ(c.window(5), 0);
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  EXPECT_FLOAT_EQ(c.rope_theta_swa, 1e4f);  // llama.cpp's default: the converter writes no freq_base_swa
  EXPECT_EQ(c.rope_freq_factors, std::vector<float>(64, 8.0f));  // linear factor 8 (global layers only)
  EXPECT_FLOAT_EQ(c.embedding_scale, 16.0f);                     // sqrt(256)
  EXPECT_FLOAT_EQ(c.attn_scale(), 1.0f / std::sqrt(128.0f));     // 1/sqrt(head_dim), not d_model / n_heads
  EXPECT_EQ(c.ffn_act, FfnAct::kGeluTanh);
  EXPECT_TRUE(c.post_norms);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.tie_embeddings);  // the tiny shape's own head (model_maker_gemma3.cpp)
  EXPECT_EQ(c.rope_layout, RopeLayout::kHalf);
}

// f32: every id and (teacher-forced) every top logit equal llama.cpp's, on prompts inside the window
// ('short') and across it ('mid': 60 + 32 tokens, 'long': 700 + 32, prefilled in two chunks).
TEST(Gemma3, F32IdsAndLogitsEqualLlamaCpp) {
  auto eng = load_engine(tiny(DType::kF32));
  expect_f32_equal(*eng, fixture(), 4e-3f);
}

// f16 and q8_0 round the activations (llama.cpp's f16 matmul rounds them to f16): ids up to
// llama.cpp's near ties, teacher-forced agreement as its own with flash attention on and off.
class Gemma3Rounded : public ::testing::TestWithParam<DType> {};

TEST_P(Gemma3Rounded, MatchesLlamaCppUpToItsNearTies) {
  auto eng = load_engine(tiny(GetParam()));
  expect_rounded_parity(*eng, fixture(), dtype_name(GetParam()), 1.0f, "gemma3");
}

INSTANTIATE_TEST_SUITE_P(Types, Gemma3Rounded, ::testing::Values(DType::kF16, DType::kQ8_0));

// The window is load-bearing and its size exact: without the key (llama.cpp: every layer global)
// or one position wider or narrower, the ids of the prompt that crosses it leave llama.cpp's.
TEST(Gemma3, TheSlidingWindowIsLoadBearingToThePosition) {
  EXPECT_NE(greedy(variant("no-window", [](const std::string& k) -> std::optional<std::string> {
              if (k == "gemma3.attention.sliding_window") return std::nullopt;
              return k;
            }),
                   "long"),
            want("long"));
  for (int w : {63, 65}) {
    const std::string out = (temp_dir() / ("window-" + std::to_string(w) + ".gguf")).string();
    auto g = GgufFile::open(tiny(DType::kF32));
    GgufWriter wr(static_cast<uint32_t>(g->alignment()));
    for (const std::string& k : g->keys()) {
      if (k == "gemma3.attention.sliding_window") {
        wr.add_u32(k, static_cast<uint32_t>(w));
      } else {
        wr.add_raw(k, g->raw_value(k));
      }
    }
    std::vector<TensorView> views;
    for (const GgufTensorInfo& info : g->tensors()) {
      views.push_back(g->tensor_view(info));
      wr.add_tensor(info.name, views.back().dtype,
                    std::vector<int64_t>(views.back().shape.begin(), views.back().shape.begin() + views.back().ndim));
    }
    wr.begin(out);
    for (const TensorView& v : views) wr.write_data(v.data, static_cast<size_t>(v.nbytes));
    wr.finish();
    // Teacher-forced on llama.cpp's path the logits move beyond the f32 tolerance (ids may survive
    // a one-position change on some prompts; the logits cannot).
    auto eng = load_engine(out);
    const nlohmann::json& tf = fixture()["teacher_forced_f32"]["long"];
    std::vector<int> seq = fixture_prompt(fixture(), "long");
    const auto gen = want("long");
    seq.insert(seq.end(), gen.begin(), gen.end() - 1);
    const auto logits = eng->forward(seq, 0, /*all_logits=*/true);
    const size_t vocab = logits.size() / seq.size(), first = fixture_prompt(fixture(), "long").size() - 1;
    double worst = 0;
    for (size_t i = 0; i < gen.size(); ++i) {
      const int top = tf["tf_top"][i].get<int>();
      worst = std::max(worst, std::abs(logits[(first + i) * vocab + static_cast<size_t>(top)] - tf["top_logit"][i].get<double>()));
    }
    EXPECT_GT(worst, 4e-2) << "window " << w << " computes llama.cpp's window-64 logits";
  }
}

// The global layers' linear RoPE scaling and the local layers' own base are load-bearing.
TEST(Gemma3, TheRopeBasesAreLoadBearing) {
  EXPECT_NE(greedy(variant("no-scaling", [](const std::string& k) -> std::optional<std::string> {
              if (k == "gemma3.rope.scaling.factor") return std::nullopt;
              return k;
            }),
                   "long"),
            want("long"));
  // rope.freq_base renamed freq_base_swa: the local layers rotate with 1e6 and the global ones with
  // llama.cpp's default base 10000.
  EXPECT_NE(greedy(variant("swapped-bases", [](const std::string& k) -> std::optional<std::string> {
              if (k == "gemma3.rope.freq_base") return "gemma3.rope.freq_base_swa";
              return k;
            }),
                   "long"),
            want("long"));
}

// The post-attention and post-FFN norms apply their weights (all 1 instead: other ids); the q/k
// norms and post norms are required, refused by name when missing.
TEST(Gemma3, PostNormsAreLoadBearingAndRequired) {
  const auto keep_all = [](const std::string&) { return true; };
  for (const char* norm : {"post_attention_norm", "post_ffw_norm"}) {
    const std::string out = tensor_variant(std::string("ones-") + norm, keep_all, [&](const std::string& n) {
      return n.find(norm) != std::string::npos;
    });
    EXPECT_NE(greedy(out, "mid"), want("mid")) << norm << " weights set to 1";
  }
  for (const char* t : {"blk.3.post_ffw_norm.weight", "blk.0.post_attention_norm.weight", "blk.2.attn_k_norm.weight"}) {
    const std::string out = tensor_variant(std::string("without-") + t, [&](const std::string& n) { return n != t; },
                                           [](const std::string&) { return false; });
    try {
      load_engine(out);
      ADD_FAILURE() << "a gemma3 file without " << t << " loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(t), std::string::npos) << e.what();
    }
  }
}

// What llama.cpp's gemma3 graph would also run is refused by name, never ignored: final logit
// soft-capping (here the scaling factor's value stored under that key).
TEST(Gemma3, SoftCappingIsRefusedByName) {
  const std::string out = variant("softcap", [](const std::string& k) -> std::optional<std::string> {
    if (k == "gemma3.rope.scaling.factor") return "gemma3.final_logit_softcapping";
    return k;
  });
  try {
    load_engine(out);
    ADD_FAILURE() << "a gemma3 file with final_logit_softcapping loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("final_logit_softcapping"), std::string::npos) << e.what();
  }
}

// A prompt continued from a cached prefix that ends past the window (the cache keeps every
// position, so the next chunk's local layers still see their window): llama.cpp's ids, whether the
// prefix is the slot's own rows or restored from the prompt cache after another prompt used the slot.
TEST(Gemma3, CachedPrefixesContinueAcrossTheWindow) {
  EngineOptions eo;
  eo.model_path = tiny(DType::kF32);
  eo.threads = 2;
  eo.ctx = 4096;
  eo.prompt_cache_bytes = 64 << 20;
  auto eng = Engine::load(eo);
  const auto prompt = fixture_prompt(fixture(), "long");
  auto run = [&](const std::vector<int>& p, int n) {
    GenerateRequest req;
    req.prompt = p;
    req.max_tokens = n;
    req.sampling.temperature = 0;
    req.ignore_eos = true;
    return eng->generate(req, {});
  };
  run(std::vector<int>(prompt.begin(), prompt.begin() + 300), 4);
  GenerateResult r = run(prompt, static_cast<int>(want("long").size()));
  EXPECT_EQ(r.ids, want("long"));
  EXPECT_GE(r.cached_tokens, 300) << "the slot's prefix";
  run(fixture_prompt(fixture(), "short"), 4);  // the slot now holds another prompt
  r = run(prompt, static_cast<int>(want("long").size()));
  EXPECT_EQ(r.ids, want("long"));
  EXPECT_GE(r.cached_tokens, 300) << "the prompt cache's entry";
  EXPECT_GE(eng->stats().prompt_cache_hits, 1);
}

}  // namespace

// --backend ane runs Gemma 3's own programs (engine/ane/ane_families.h) on the simulator; their
// parity with the CPU is tests/engine/ane_families_test.cpp's.
TEST(Gemma3, AneRunsItsProgramsOnTheSimulator) {
  auto eng = load_engine(tiny(DType::kF32), Backend::kAne);
  EXPECT_EQ(eng->stats().backend, "ane (simulator)");
}

}  // namespace anelm::engine
