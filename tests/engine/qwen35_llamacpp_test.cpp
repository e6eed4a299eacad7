// Qwen3.5 (hybrid: Gated DeltaNet layers with a recurrent state, gated attention every 4th layer,
// partial RoPE): random files from the peer kit's make_random_qwen35_gguf.py give llama.cpp's greedy
// ids (recorded fixture) as f32, f16 and q8_0; chunked prefill equals token-by-token prefill; every
// sequence of a batch gives the ids it gives alone, also beside a cancelled one; HF directories
// (written from a GGUF here, or by make-model) give the GGUF's ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/error.h"
#include "engine/generator.h"
#include "engine/gguf.h"
#include "engine/model_config.h"
#include "engine/safetensors.h"
#include "tests/engine/llamacpp_parity.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

namespace fs = std::filesystem;

nlohmann::json fixture() {
  std::ifstream in(fs::path(ANELM_SOURCE_DIR) / "tests/data/engine/qwen35_tiny_llamacpp.json");
  return nlohmann::json::parse(in);
}

std::vector<int> prompt_ids(const nlohmann::json& fx, const std::string& name) {
  const nlohmann::json& p = fx["prompts"][name];
  if (p.is_array()) return p.get<std::vector<int>>();
  std::vector<int> ids;
  for (int64_t i = 1; i <= p["count"].get<int64_t>(); ++i) {
    ids.push_back(static_cast<int>((i * p["mul"].get<int64_t>() + p["add"].get<int64_t>()) % p["mod"].get<int64_t>()));
  }
  return ids;
}

// The peer kit's generator writes the file (deterministic: same arguments, same bytes); one per type
// for the whole suite. Empty when shared/ or python3 is missing.
std::string tiny_model(const std::string& type) {
  static std::map<std::string, std::string> made;
  if (auto it = made.find(type); it != made.end()) return it->second;
  const auto shared = anelm::testing::shared_dir();
  if (!shared) return "";
  static const fs::path dir = anelm::testing::make_temp_dir("qwen35");
  const fs::path out = dir / ("tiny-" + type + ".gguf");
  const std::string cmd = "python3 '" + (*shared / "peers/make_random_qwen35_gguf.py").string() +
                          "' --shape tiny --type " + type + " --out '" + out.string() + "' > /dev/null";
  if (std::system(cmd.c_str()) != 0) return "";
  return made[type] = out.string();
}

std::unique_ptr<Engine> load(const std::string& path, int parallel = 1, int max_batch = 0, int64_t cache_bytes = 0) {
  EngineOptions eo;
  eo.prompt_cache_bytes = cache_bytes;
  eo.model_path = path;
  eo.threads = 2;
  eo.ctx = 4096;
  eo.parallel = parallel;
  eo.max_batch = max_batch;
  return Engine::load(eo);
}

GenerateRequest greedy_request(std::vector<int> prompt, int n) {
  GenerateRequest req;
  req.prompt = std::move(prompt);
  req.max_tokens = n;
  req.sampling.temperature = 0;
  req.ignore_eos = true;
  return req;
}

#define REQUIRE_TINY(var, type)                                                              \
  const std::string var = tiny_model(type);                                                  \
  if (var.empty()) GTEST_SKIP() << "needs ../shared (peers/make_random_qwen35_gguf.py) and python3"

// Float weights: llama.cpp multiplies f32 (or f16-rounded) activations, as anelm does, so every
// greedy id must agree, also over the 700-token prompt.
class Qwen35FloatGreedy : public ::testing::TestWithParam<const char*> {};

TEST_P(Qwen35FloatGreedy, IdsEqualLlamaCpp) {
  REQUIRE_TINY(path, GetParam());
  const nlohmann::json fx = fixture();
  auto eng = load(path);
  EXPECT_EQ(eng->config().arch, Arch::kQwen35);
  EXPECT_EQ(eng->config().n_attention_layers(), 1);
  for (const auto& [name, expected] : fx["generated"][GetParam()].items()) {
    const auto want = expected.get<std::vector<int>>();
    const auto got = eng->generate(greedy_request(prompt_ids(fx, name), static_cast<int>(want.size())), {}).ids;
    EXPECT_EQ(got, want) << GetParam() << " prompt '" << name << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Types, Qwen35FloatGreedy, ::testing::Values("f32", "f16"));

// Q8_0: both engines quantise activations to Q8_0 blocks, and this random model has near ties at
// most steps (llama.cpp's own lead is under 0.5 at two thirds of them), so greedy ids are compared up
// to llama.cpp's first near tie, and teacher-forced on llama.cpp's path anelm's top id must agree
// with llama.cpp's as often as llama.cpp with flash attention off agrees with itself with it on.
TEST(Qwen35, Q8_0MatchesLlamaCppUpToItsNearTies) {
  REQUIRE_TINY(path, "q8_0");
  const nlohmann::json fx = fixture();
  const ParityRules rules = load_parity_rules();
  auto eng = load(path);
  // Summed over the prompts: 32 steps of one prompt are too few to rank two engines by one step (a
  // change of summation order anywhere moves a near tie from one prompt to another).
  int agree = 0, floor = 0, steps = 0;
  for (const auto& [name, expected] : fx["generated"]["q8_0"].items()) {
    const nlohmann::json& tf = fx["teacher_forced_q8_0"][name];
    const LlamaCppPath p{prompt_ids(fx, name), expected.get<std::vector<int>>(), tf["tf_top"].get<std::vector<int>>(),
                         tf["top_logit"].get<std::vector<double>>(), tf["margin"].get<std::vector<double>>()};
    const ParityFigures f = expect_llamacpp_parity(*eng, p, rules, name);
    const int n = static_cast<int>(p.generated.size()), fa = tf["fa_off_agrees"].get<int>();
    agree += f.agree, floor += fa, steps += n;
    std::printf("[qwen35 q8_0 %s] free-running ids equal for %zu (llama.cpp's first near tie), teacher-forced top-1 "
                "agreement %d/%d (llama.cpp fa off vs on: %d/%d)\n", name.c_str(), f.clear, f.agree, n, fa, n);
  }
  EXPECT_GE(agree, floor) << "teacher-forced top-1 agreement over " << steps << " steps";
  std::printf("[qwen35 q8_0] teacher-forced top-1 agreement %d/%d (llama.cpp fa off vs on: %d/%d)\n", agree, steps, floor, steps);
}

// The recurrence over a prefill chunk equals the recurrence over short passes: a 2048-token prompt
// prefilled in chunks of 512 (and its prefixes ending mid-chunk, at `checkpoints`, multiples of
// `pass`) against passes of `pass` tokens. Returns the engine of the short passes.
std::unique_ptr<Engine> expect_chunked_equals_passes(const std::string& path, int pass, const std::vector<int>& checkpoints) {
  std::vector<int> prompt;
  for (int i = 0; i < 2048; ++i) prompt.push_back((i * 104729 + 7) % 151000);
  auto chunked = load(path, 1, 512);
  std::vector<std::vector<float>> want;
  for (int len : checkpoints) {
    const std::span<const float> l = chunked->forward(std::span<const int>(prompt.data(), static_cast<size_t>(len)), 0, false);
    want.emplace_back(l.begin(), l.end());
  }
  auto passes = load(path, 1, pass);
  size_t next = 0;
  for (size_t t = 0; t < prompt.size(); t += pass) {
    const auto run = std::span<const int>(&prompt[t], static_cast<size_t>(pass));
    const std::span<const float> got = passes->forward(run, static_cast<int>(t), false);
    if (static_cast<int>(t) + pass != checkpoints[next]) continue;
    float worst = 0;
    for (size_t v = 0; v < got.size(); ++v) worst = std::max(worst, std::abs(got[v] - want[next][v]));
    EXPECT_LT(worst, 1e-3f) << "max |logit difference| after " << t + pass << " tokens (passes of " << pass << ")";
    ++next;
  }
  EXPECT_EQ(next, checkpoints.size());
  return passes;
}

// Float weights: every matmul computes a token's row the same way whatever the pass size, so the
// only difference left is the recurrence's own chunking (delta rule, conv state): fp32 tolerance.
TEST(Qwen35, ChunkedPrefillEqualsTokenByToken) {
  REQUIRE_TINY(path, "f32");
  auto single = expect_chunked_equals_passes(path, 1, {1, 300, 1000, 2048});
  // A recurrent state cannot be cut back to a shorter prefix: refused by name.
  const int token = 7;
  EXPECT_THROW(single->forward(std::span<const int>(&token, 1), 5, false), Error);
}

// Q8_0 weights: passes of 8 or more tokens run the same many-token matmul kernels on every ISA (a row's
// result does not depend on how many tokens share the pass), while one-token passes use the decode
// kernels, whose float sums run in another order on the AVX-512 and AMX tables (the AVX2 table sums a
// token the same way in any pass): over 2048 tokens of this random model that alone moves logits by
// ~0.1-0.3. So the quantised file compares chunks of 512 with passes of 8.
TEST(Qwen35, Q8_0ChunkedPrefillEqualsShortPasses) {
  REQUIRE_TINY(path, "q8_0");
  expect_chunked_equals_passes(path, 8, {8, 296, 1000, 2048});
}

// Sequences sharing passes (decodes beside chunked prefills) give their ids alone; a cancelled one
// leaves the others unchanged. Float weights, so that a token's row is summed the same way in a pass
// of any size: with Q8_0 the AMX table runs passes of 2 or more tokens on the int8 tiles and one
// token on the AVX-512 GEMV, and on Sapphire Rapids (2026-12-02) a random model's near tie parted
// sequence 1 from its run alone at the ninth token.
TEST(Qwen35, BatchedSequencesMatchTheirRunsAlone) {
  REQUIRE_TINY(path, "f32");
  const nlohmann::json fx = fixture();
  std::vector<GenerateRequest> reqs;
  for (const char* name : {"fox", "chat_think", "long"}) reqs.push_back(greedy_request(prompt_ids(fx, name), 24));
  std::vector<std::vector<int>> alone;
  {
    auto eng = load(path);
    for (const auto& r : reqs) alone.push_back(eng->generate(r, {}).ids);
  }
  auto eng = load(path, 4, 64);
  std::vector<std::vector<int>> got(reqs.size());
  std::vector<int> done(reqs.size() + 1, 0);
  std::atomic<bool> cancel{false};
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(eng->start(reqs[i], [&, i](const TokenStep& s) { got[i].push_back(s.id); return true; },
                           [&, i](const GenerateResult&, const Error*) { done[i] = 1; }));
  }
  GenerateRequest doomed = greedy_request(prompt_ids(fx, "long"), 24);
  doomed.cancel = &cancel;
  int doomed_tokens = 0;
  ASSERT_TRUE(eng->start(doomed, [&](const TokenStep&) { if (++doomed_tokens == 3) cancel = true; return true; },
                         [&](const GenerateResult&, const Error*) { done.back() = 1; }));
  while (eng->step()) {
  }
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i], alone[i]) << "sequence " << i;
  EXPECT_EQ(done, std::vector<int>(reqs.size() + 1, 1));
  EXPECT_LE(doomed_tokens, 4);
  // The slot a sequence ran in continues from its end, and a new prompt in a used slot starts over.
  EXPECT_EQ(eng->generate(reqs[0], {}).ids, alone[0]);
  EXPECT_EQ(eng->generate(reqs[2], {}).ids, alone[2]);
}

// Prompt cache with recurrent state: two conversations sharing a 1000-token system prompt. The
// second resumes from the last checkpoint inside the shared prefix (768 tokens: checkpoints every
// Generator::kCheckpointEvery = 256), gives the ids a fresh engine gives, and prefills only the rest.
TEST(Qwen35, PromptCacheCheckpointSkipsASharedSystemPrompt) {
  REQUIRE_TINY(path, "q8_0");
  std::vector<int> system;
  for (int i = 0; i < 1000; ++i) system.push_back((i * 7723 + 11) % 150000);
  auto conversation = [&](int user) {
    std::vector<int> p = system;
    for (int i = 0; i < 40; ++i) p.push_back((user * 131 + i * 17) % 150000);
    return greedy_request(p, 16);
  };
  const GenerateRequest a = conversation(1), b = conversation(2);
  const GenerateResult fresh = load(path)->generate(b, {});
  EXPECT_EQ(fresh.cached_tokens, 0);

  auto eng = load(path, 1, 512, int64_t{512} << 20);
  const GenerateResult first = eng->generate(a, {});
  EXPECT_EQ(first.cached_tokens, 0);
  const GenerateResult second = eng->generate(b, {});
  EXPECT_EQ(second.ids, fresh.ids);
  EXPECT_EQ(second.cached_tokens, 3 * Generator::kCheckpointEvery);
  EXPECT_GT(eng->stats().prompt_cache_hits, 0);
  // The first conversation again: the checkpoint its own run stored at 1024 tokens serves it.
  const GenerateResult again = eng->generate(a, {});
  EXPECT_EQ(again.ids, first.ids);
  EXPECT_EQ(again.cached_tokens, 4 * Generator::kCheckpointEvery);
  std::printf("[qwen35 prompt cache] 1040-token prompt: prefill %.1f ms fresh, %.1f ms resuming from a %d-token "
              "checkpoint (%.1f ms for the first conversation)\n",
              fresh.prefill_ms, second.prefill_ms, second.cached_tokens, first.prefill_ms);
}

// The tiny f32 file written back as a HuggingFace Qwen3.5 directory, undoing llama.cpp's converter
// (shared/docs/qwen35-architecture.md §4.3-4.4): zero-centred norms (w - 1, except the DeltaNet
// gated norm), A_log = log(-ssm_a), conv1d [channels, 1, taps], and the value heads back in HF's
// grouped order (tiny has 2 key and 4 value heads, so the order matters). Returns the directory.
fs::path write_hf_from_gguf(const std::string& gguf_path, const ModelConfig& c, const fs::path& dir) {
  auto g = GgufFile::open(gguf_path);
  const DeltaNetDims& dn = c.deltanet;
  const int r = dn.n_v_heads / dn.n_k_heads;
  // HF value head h is the GGUF's head (h % r) * N_k + h / r: index of HF element `i` of a v-part
  // that starts at `at` with heads of `size` elements.
  auto gguf_index = [&](int64_t i, int64_t at, int64_t size) {
    if (i < at) return i;
    const int64_t h = (i - at) / size, within = (i - at) % size;
    return at + ((h % r) * dn.n_k_heads + h / r) * size + within;
  };
  struct Out {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> data;
  };
  std::vector<Out> outs;
  for (const GgufTensorInfo& info : g->tensors()) {
    const TensorView v = g->tensor_view(info);
    EXPECT_EQ(v.dtype, DType::kF32) << info.name;
    const auto* src = static_cast<const float*>(v.data);
    const int64_t rows = v.rows(), cols = v.cols();
    std::string name = info.name, hf;
    int layer = -1;
    if (name.rfind("blk.", 0) == 0) {
      layer = std::stoi(name.substr(4));
      name = name.substr(name.find('.', 4) + 1);
    }
    const bool delta = layer >= 0 && c.mixer(layer) == Mixer::kDeltaNet;
    int64_t perm_rows_at = -1, perm_size = 0;   // v-head rows to re-order
    bool perm_cols = false;                     // ssm_out: its input columns
    float offset = 0;
    bool a_log = false;
    std::vector<int64_t> shape = {rows, cols};
    if (v.ndim == 1) shape = {cols};
    static const std::map<std::string, std::string> common = {
        {"attn_norm.weight", "input_layernorm.weight"}, {"post_attention_norm.weight", "post_attention_layernorm.weight"},
        {"ffn_gate.weight", "mlp.gate_proj.weight"}, {"ffn_up.weight", "mlp.up_proj.weight"},
        {"ffn_down.weight", "mlp.down_proj.weight"}, {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_k.weight", "self_attn.k_proj.weight"}, {"attn_v.weight", "self_attn.v_proj.weight"},
        {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_q_norm.weight", "self_attn.q_norm.weight"},
        {"attn_k_norm.weight", "self_attn.k_norm.weight"}, {"attn_qkv.weight", "linear_attn.in_proj_qkv.weight"},
        {"attn_gate.weight", "linear_attn.in_proj_z.weight"}, {"ssm_beta.weight", "linear_attn.in_proj_b.weight"},
        {"ssm_alpha.weight", "linear_attn.in_proj_a.weight"}, {"ssm_conv1d.weight", "linear_attn.conv1d.weight"},
        {"ssm_dt.bias", "linear_attn.dt_bias"}, {"ssm_a", "linear_attn.A_log"}, {"ssm_norm.weight", "linear_attn.norm.weight"},
        {"ssm_out.weight", "linear_attn.out_proj.weight"}};
    if (layer < 0) {
      if (name == "token_embd.weight") hf = "model.language_model.embed_tokens.weight";
      if (name == "output_norm.weight") hf = "model.language_model.norm.weight", offset = -1;
      if (name == "output.weight") hf = "lm_head.weight";
    } else {
      hf = "model.language_model.layers." + std::to_string(layer) + "." + common.at(name);
      if (name.find("norm.weight") != std::string::npos && name != "ssm_norm.weight") offset = -1;
      if (delta) {
        if (name == "attn_qkv.weight") perm_rows_at = 2 * dn.key_dim(), perm_size = dn.d_v;
        if (name == "ssm_conv1d.weight") perm_rows_at = 2 * dn.key_dim(), perm_size = dn.d_v, shape = {rows, 1, cols};
        if (name == "attn_gate.weight") perm_rows_at = 0, perm_size = dn.d_v;
        if (name == "ssm_beta.weight" || name == "ssm_alpha.weight") perm_rows_at = 0, perm_size = 1;
        if (name == "ssm_dt.bias" || name == "ssm_a") perm_rows_at = 0, perm_size = 1;
        if (name == "ssm_out.weight") perm_cols = true;
        a_log = name == "ssm_a";
      }
    }
    EXPECT_FALSE(hf.empty()) << info.name;
    Out o{hf, shape, std::vector<float>(static_cast<size_t>(rows * cols))};
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        int64_t si = i, sj = j;
        if (v.ndim == 1 && perm_rows_at >= 0) sj = gguf_index(j, perm_rows_at, perm_size);
        if (v.ndim == 2 && perm_rows_at >= 0) si = gguf_index(i, perm_rows_at, perm_size);
        if (perm_cols) sj = gguf_index(j, 0, dn.d_v);
        float x = src[si * cols + sj] + offset;
        if (a_log) x = std::log(-x);
        o.data[static_cast<size_t>(i * cols + j)] = x;
      }
    }
    outs.push_back(std::move(o));
  }
  fs::create_directories(dir);
  std::vector<SafetensorsWriter::Decl> decls;
  for (const Out& o : outs) decls.push_back({o.name, DType::kF32, o.shape});
  SafetensorsWriter w((dir / "model.safetensors").string(), decls, {{"format", "pt"}});
  for (const Out& o : outs) w.append_data(o.data.data(), o.data.size() * sizeof(float));
  w.finish();
  nlohmann::json layer_types = nlohmann::json::array();
  for (int l = 0; l < c.n_layers; ++l) layer_types.push_back(c.mixer(l) == Mixer::kDeltaNet ? "linear_attention" : "full_attention");
  const nlohmann::json cfg = {
      {"architectures", {"Qwen3_5ForConditionalGeneration"}},
      {"model_type", "qwen3_5"},
      {"tie_word_embeddings", c.tie_embeddings},
      {"text_config",
       {{"hidden_size", c.d_model}, {"intermediate_size", c.d_ff}, {"num_hidden_layers", c.n_layers},
        {"num_attention_heads", c.n_heads}, {"num_key_value_heads", c.n_kv_heads}, {"head_dim", c.head_dim},
        {"vocab_size", c.vocab_size}, {"rms_norm_eps", c.rms_eps}, {"max_position_embeddings", c.max_ctx},
        {"rope_parameters", {{"rope_theta", c.rope_theta}, {"partial_rotary_factor", 0.25}}},
        {"linear_num_key_heads", dn.n_k_heads}, {"linear_num_value_heads", dn.n_v_heads},
        {"linear_key_head_dim", dn.d_k}, {"linear_value_head_dim", dn.d_v},
        {"linear_conv_kernel_dim", dn.conv_kernel}, {"layer_types", layer_types}, {"attn_output_gate", true}}}};
  std::ofstream(dir / "config.json") << cfg.dump(1);
  return dir;
}

// The same weights as an HF directory give the same greedy ids (f32: llama.cpp's, from the fixture).
TEST(Qwen35, HfDirectoryGivesTheSameIds) {
  REQUIRE_TINY(path, "f32");
  const nlohmann::json fx = fixture();
  auto gguf = load(path);
  const fs::path hf = write_hf_from_gguf(path, gguf->config(), anelm::testing::make_temp_dir("qwen35-hf") / "tiny-hf");
  gguf.reset();
  auto eng = load(hf.string());
  EXPECT_EQ(eng->config().arch, Arch::kQwen35);
  EXPECT_TRUE(eng->config().deltanet.grouped_heads);
  EXPECT_EQ(eng->config().rope_dim, 64);
  for (const char* name : {"fox", "long"}) {
    const auto want = fx["generated"]["f32"][name].get<std::vector<int>>();
    EXPECT_EQ(eng->generate(greedy_request(prompt_ids(fx, name), static_cast<int>(want.size())), {}).ids, want) << name;
  }
  // A config that does not describe the tensors is refused, naming them (not run on wrong shapes).
  std::ifstream in(hf / "config.json");
  nlohmann::json cfg = nlohmann::json::parse(in);
  in.close();
  cfg["text_config"]["linear_num_key_heads"] = 4;
  std::ofstream(hf / "config.json") << cfg.dump();
  try {
    load(hf.string());
    ADD_FAILURE() << "a mismatched config loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("linear_attn.in_proj_qkv.weight"), std::string::npos) << e.what();
  }
}

// `anelm make-model --arch qwen35` writes files llama.cpp runs: its greedy ids on a made tiny f32
// model (run now, through the peer kit) equal anelm's.
TEST(Qwen35, MadeModelRunsTheSameInLlamaCpp) {
  const auto shared = anelm::testing::shared_dir();
  const fs::path generate = shared ? *shared / "peers/bin/llamacpp-generate" : fs::path();
  if (!shared || !fs::exists(generate)) GTEST_SKIP() << "../shared/peers/bin/llamacpp-generate not found";
  ANELM_REQUIRE_SHARED_MODEL(vocab, "ggml-vocab-qwen35.gguf");
  const fs::path dir = anelm::testing::make_temp_dir("qwen35-made");
  tools::MakeModelOptions o;
  o.arch = Arch::kQwen35;
  o.shape = "tiny";
  o.dtype = DType::kF32;
  o.seed = 3;
  o.tokenizer = vocab.string();
  const tools::MadeModel made = tools::make_model(o, (dir / "made.gguf").string());
  EXPECT_EQ(made.config.n_attention_layers(), 1);
  const std::vector<int> prompt = {785, 3974, 13876, 38835, 34208, 916, 279};
  std::string ids;
  for (int id : prompt) ids += (ids.empty() ? "" : " ") + std::to_string(id);
  const fs::path out = dir / "llamacpp.json";
  const std::string cmd = "'" + generate.string() + "' '" + made.path + "' --prompt-ids '" + ids +
                          "' --n 24 --threads 2 2>/dev/null | tail -n 1 > '" + out.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  const nlohmann::json peer = nlohmann::json::parse(in);
  const auto want = peer.at("generated_ids").get<std::vector<int>>();
  ASSERT_EQ(want.size(), 24u);
  EXPECT_EQ(load(made.path)->generate(greedy_request(prompt, 24), {}).ids, want);
}

// `anelm make-model --arch qwen35 --format hf` writes the same weights as its GGUF, in the HF
// checkpoint's conventions (zero-centred norms, A_log, grouped value heads, Conv1d [channels, 1,
// taps]): both forms give the same greedy ids, and logits that differ only by the order the value
// heads are summed in (tiny: 2 key / 4 value heads, so a wrong head order would show).
class Qwen35MadeHf : public ::testing::TestWithParam<DType> {};

TEST_P(Qwen35MadeHf, SameIdsAndLogitsAsItsGguf) {
  ANELM_REQUIRE_SHARED_MODEL(vocab, "ggml-vocab-qwen35.gguf");
  const fs::path dir = anelm::testing::make_temp_dir("qwen35-made-hf");
  tools::MakeModelOptions o;
  o.arch = Arch::kQwen35;
  o.shape = "tiny";
  o.dtype = GetParam();
  o.seed = 5;
  o.tokenizer = vocab.string();
  const tools::MadeModel gguf = tools::make_model(o, (dir / "made.gguf").string());
  o.format = ModelFormat::kHf;
  const tools::MadeModel hf = tools::make_model(o, (dir / "made-hf").string());
  ASSERT_TRUE(fs::exists(fs::path(hf.path) / "config.json"));
  auto a = load(gguf.path), b = load(hf.path);
  EXPECT_FALSE(a->config().deltanet.grouped_heads);
  EXPECT_TRUE(b->config().deltanet.grouped_heads);
  EXPECT_EQ(b->config().n_attention_layers(), 1);
  EXPECT_EQ(b->config().rope_dim, 64);
  const nlohmann::json fx = fixture();
  for (const char* name : {"fox", "long"}) {
    const std::vector<int> prompt = prompt_ids(fx, name);
    const std::vector<int> ids = a->generate(greedy_request(prompt, 24), {}).ids;
    EXPECT_EQ(b->generate(greedy_request(prompt, 24), {}).ids, ids) << name;
    const std::span<const float> la = a->forward(prompt, 0, false);
    const std::vector<float> want(la.begin(), la.end());
    const std::span<const float> lb = b->forward(prompt, 0, false);
    ASSERT_EQ(lb.size(), want.size());
    float worst = 0;
    for (size_t v = 0; v < want.size(); ++v) worst = std::max(worst, std::abs(lb[v] - want[v]));
    EXPECT_LT(worst, 1e-3f) << name << ": max |logit difference| GGUF vs HF after the prompt";
  }
}

INSTANTIATE_TEST_SUITE_P(Types, Qwen35MadeHf, ::testing::Values(DType::kF32, DType::kF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace anelm::engine
