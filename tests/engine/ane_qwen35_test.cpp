// --backend ane for Qwen3.5 (hybrid: Gated DeltaNet layers + gated attention every 4th layer) on
// the ANE simulator against --backend cpu: both layer kinds' projections run as ANE programs (A:
// dn_in / attn_in, B: dn_ffn / ffn), the conv, delta rule, gates, q/k head norms, partial RoPE and
// attention stay on the CPU. Greedy ids and teacher-forced logits within the fp16 tolerance the
// Qwen2.5 ANE tests use, prefill across S buckets (the recurrent state carried across chunks),
// `compile --verify` per program, `compile --plan` on the real 0.8B shape within the budget, and
// the start-up self-check on programs of both kinds. The macOS runtime is not run here.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "engine/ane/ane_export.h"
#include "engine/ane/ane_executor.h"
#include "engine/ane/ane_programs.h"
#include "engine/ane/ane_selfcheck.h"
#include "engine/ane/ane_verify.h"
#include "engine/engine.h"
#include "engine/model_loader.h"
#include "tests/engine/ane_compare.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

using namespace anelm::engine::testing;  // greedy, all_logits, margin, compare_backends

namespace fs = std::filesystem;


// make-model's tiny Qwen3.5 (4 layers: DeltaNet 0-2, attention 3; 2 key / 4 value heads, so the
// tiled key-head order is exercised; head_dim 256 with 64 rotated dims), f32.
std::string make_tiny(DType dtype, const std::string& name) {
  tools::MakeModelOptions mo;
  mo.arch = Arch::kQwen35;
  mo.shape = "tiny";
  mo.dtype = dtype;
  mo.seed = 7;
  const fs::path dir = anelm::testing::make_temp_dir("ane-" + name);
  return tools::make_model(mo, (dir / (name + ".gguf")).string()).path;
}

const std::string& tiny_made() {
  static const std::string path = make_tiny(DType::kF32, "tiny-qwen35-f32");
  return path;
}

// The peer kit's tiny Qwen3.5 (make_random_qwen35_gguf.py --shape tiny --type f32), the file the
// llama.cpp parity tests use; empty when shared/ or python3 is missing.
std::string tiny_peer() {
  static const std::string path = [] {
    const auto shared = anelm::testing::shared_dir();
    if (!shared) return std::string();
    const fs::path out = anelm::testing::make_temp_dir("ane-qwen35-peer") / "tiny-f32.gguf";
    const std::string cmd = "python3 '" + (*shared / "peers/make_random_qwen35_gguf.py").string() +
                            "' --shape tiny --type f32 --out '" + out.string() + "' > /dev/null";
    return std::system(cmd.c_str()) == 0 ? out.string() : std::string();
  }();
  return path;
}

std::unique_ptr<Engine> load(const std::string& path, Backend backend,
                             std::function<void(AneBackendOptions&)> tweak = {}, int parallel = 1,
                             int max_batch = 0) {
  EngineOptions o;
  o.model_path = path;
  o.backend = backend;
  o.threads = 2;
  o.ctx = 512;
  o.parallel = parallel;
  o.max_batch = max_batch;
  o.ane_test_options = std::move(tweak);
  return Engine::load(o);
}

Comparison compare(Engine& cpu, Engine& ane, const std::vector<int>& prompt, int n) {
  return compare_backends(cpu, ane, prompt, n, "qwen35");
}

const std::vector<int> kPrompt = {1, 403, 407, 261, 378, 12, 99};

int head_chunks(const ModelConfig& c) { return (c.vocab_size + 16383) / 16384; }

TEST(AneQwen35, TinyGreedyAndLogitsMatchCpu) {
  auto cpu = load(tiny_made(), Backend::kCpu);
  auto ane = load(tiny_made(), Backend::kAne);
  ASSERT_EQ(cpu->config().arch, Arch::kQwen35);
  const Comparison c = compare(*cpu, *ane, kPrompt, 40);
  EXPECT_EQ(c.ane_stats.backend, "ane (simulator)");
  // 4 layers x 2 programs x S {32, 128} + the LM-head chunks: no layer left on the CPU.
  EXPECT_EQ(c.ane_stats.ane_programs, 4 * 2 * 2 + head_chunks(cpu->config()));
  EXPECT_LE(c.max_diff, c.tol);
  // Ids agree up to the first step where the CPU's top-2 margin is under twice the largest logit
  // difference measured (a near tie, where either id is legitimate); this prompt has none in its
  // first 13 steps (measured: all 40 ids agreed, max |dlogit| 0.13 of logits up to 44).
  EXPECT_GE(c.first_near_tie, 13);
  EXPECT_GE(c.first_mismatch, c.first_near_tie);
}

// A q8_0 file: the programs bake the dequantised weights as fp16 and take fp16 activations, so
// the ANE path follows the CPU's float path on the same weights (--weights f16), not the CPU's Q8
// activation path (on this file the latter moves a logit of step 7 by 0.9 and parts the ids there).
TEST(AneQwen35, Q8_0FileFollowsTheFloatPathOfItsWeights) {
  static const std::string path = make_tiny(DType::kQ8_0, "tiny-qwen35-q8_0");
  EngineOptions o;
  o.model_path = path;
  o.threads = 2;
  o.ctx = 512;
  o.weights = DType::kF16;  // the q8_0 values rounded to fp16, as the programs bake them
  auto cpu_f16 = Engine::load(o);
  auto ane = load(path, Backend::kAne);
  const Comparison c = compare(*cpu_f16, *ane, kPrompt, 16);
  EXPECT_LE(c.max_diff, c.tol);
  EXPECT_GE(c.first_mismatch, c.first_near_tie);
  EXPECT_GE(c.first_near_tie, 8);
}

// The peer kit's file (the one llama.cpp's ids are recorded for). Its 151,936-row head would cost
// the simulator ~1 s a token, so the head stays on the CPU here; every layer is on the ANE.
TEST(AneQwen35, PeerKitTinyFileMatchesCpu) {
  const std::string path = tiny_peer();
  if (path.empty()) GTEST_SKIP() << "shared/peers or python3 missing";
  auto cpu = load(path, Backend::kCpu);
  auto ane = load(path, Backend::kAne, [](AneBackendOptions& o) { o.lm_head_on_ane = false; });
  EXPECT_EQ(ane->stats().backend, "ane (simulator) + cpu (lm head)");
  const Comparison c = compare(*cpu, *ane, {9707, 11, 1879, 0, 576, 2272, 374}, 16);
  EXPECT_EQ(c.ane_stats.ane_programs, 4 * 2 * 2);
  EXPECT_LE(c.max_diff, c.tol);
  EXPECT_GE(c.first_mismatch, c.first_near_tie);
}

// A 150-token prompt runs as S=128 + S=32 chunks of every program, the DeltaNet core over all its
// rows in order; decode must then continue from the conv and delta-rule state the prefill left
// (a state reset at every pass gives the same prompt logits and fails the decode).
TEST(AneQwen35, PrefillAcrossBucketsCarriesTheRecurrentState) {
  auto cpu = load(tiny_made(), Backend::kCpu);
  auto ane = load(tiny_made(), Backend::kAne);
  std::vector<int> ids = kPrompt;
  for (int i = 0; ids.size() < 150; ++i) ids.push_back(3 + (i * 37) % 500);
  expect_ane_logits_close(*cpu, *ane, ids, "prefill 150");
  // Decode after the long prefill: the state the chunks left behind drives the next tokens.
  EXPECT_EQ(greedy(*ane, ids, 8), greedy(*cpu, ids, 8));
}

// Continuous batching on the ANE path: the rows of several sequences share program lanes and the
// DeltaNet core runs each sequence over its own state, so every sequence of a batch gives the ids
// it gives alone, also beside one cancelled mid-way; a reused slot starts its new prompt over.
TEST(AneQwen35, BatchedSequencesMatchTheirRunsAlone) {
  std::vector<std::vector<int>> prompts = {kPrompt, {1, 17, 4000, 90000}, {}};
  for (int i = 0; prompts[2].size() < 40; ++i) prompts[2].push_back(3 + (i * 7919) % 150000);
  auto request = [](const std::vector<int>& p) {
    GenerateRequest r;
    r.prompt = p;
    r.max_tokens = 8;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    return r;
  };
  std::vector<std::vector<int>> alone;
  {
    auto eng = load(tiny_made(), Backend::kAne);
    for (const auto& p : prompts) alone.push_back(eng->generate(request(p), {}).ids);
  }
  auto eng = load(tiny_made(), Backend::kAne, {}, 4, 64);
  ASSERT_EQ(eng->stats().backend, "ane (simulator)");
  std::vector<std::vector<int>> got(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i)
    ASSERT_TRUE(eng->start(request(prompts[i]),
                           [&, i](const TokenStep& s) {
                             got[i].push_back(s.id);
                             return true;
                           },
                           [](const GenerateResult&, const Error*) {}));
  std::atomic<bool> cancel{false};
  GenerateRequest doomed = request(prompts[2]);
  doomed.cancel = &cancel;
  int doomed_tokens = 0;
  ASSERT_TRUE(eng->start(doomed,
                         [&](const TokenStep&) {
                           if (++doomed_tokens == 3) cancel = true;
                           return true;
                         },
                         [](const GenerateResult&, const Error*) {}));
  while (eng->step()) {
  }
  for (std::size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], alone[i]) << "sequence " << i;
  EXPECT_LE(doomed_tokens, 4);
  EXPECT_EQ(eng->generate(request(prompts[1]), {}).ids, alone[1]);
}

// `anelm compile --verify`: every program of both kinds against its fp32 reference.
TEST(AneQwen35, VerifyChecksEveryProgramOfBothKinds) {
  auto model = load_model(tiny_made());
  const AneVerifyReport r = verify_ane_programs(model->config, model->weights, AneBackendOptions{});
  ASSERT_EQ(r.programs.size(), static_cast<std::size_t>(4 * 2 * 2 + head_chunks(model->config)));
  std::set<std::string> kinds;
  for (const AneProgramCheck& c : r.programs) {
    kinds.insert(c.kind);
    std::cout << "  " << c.name << " (" << c.kind << "): " << c.rel_error << "\n";
    EXPECT_LE(c.rel_error, 2e-2) << c.name;
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"dn_in", "dn_ffn", "attn_in", "ffn", "lm_head"}));
  EXPECT_EQ(r.programs[0].name, "L00_dn_in_s32");
  EXPECT_EQ(r.programs[1].name, "L00_dn_ffn_s32");
  EXPECT_EQ(r.programs[12].name, "L03_attn_in_s32");
  EXPECT_EQ(r.programs[13].name, "L03_ffn_s32");
  EXPECT_GT(r.max_rel_error, 0);  // fp16 programs against fp32: never exact
  EXPECT_LE(r.max_rel_error, 2e-2);
  EXPECT_EQ(r.dispatches_per_token, 4 * 2 + head_chunks(model->config));
}

// The plan of the real 0.8B shape (24 layers, 248,320-token vocabulary: 16 LM-head chunks): 64
// programs would be over the 60 live programs the simulator allows, so 22 layers (17 DeltaNet, 5
// attention) and the whole head go on the ANE, the last two layers on the CPU, labelled.
TEST(AneQwen35, PlanOfTheRealShapeStaysWithinTheBudget) {
  ModelConfig cfg;  // Qwen3.5-0.8B's text config (shared/docs/qwen35-architecture.md §2)
  cfg.arch = Arch::kQwen35;
  cfg.name = "qwen3.5-0.8b";
  cfg.n_layers = 24, cfg.d_model = 1024, cfg.d_ff = 3584, cfg.vocab_size = 248320;
  cfg.n_heads = 8, cfg.n_kv_heads = 2, cfg.head_dim = 256, cfg.rope_dim = 64;
  cfg.qk_norm = cfg.attn_output_gate = cfg.tie_embeddings = true;
  cfg.deltanet.n_k_heads = cfg.deltanet.n_v_heads = 16;
  cfg.deltanet.d_k = cfg.deltanet.d_v = 128;
  cfg.deltanet.conv_kernel = 4;
  for (int l = 0; l < cfg.n_layers; ++l)
    cfg.mixers.push_back((l + 1) % 4 ? Mixer::kDeltaNet : Mixer::kAttention);
  const AneCompileSummary s = plan_ane_programs(cfg);
  EXPECT_EQ(s.n_layers, 24);
  EXPECT_EQ(s.lm_head_chunks, 16);
  EXPECT_EQ(s.seq_buckets, (std::vector<int>{32}));
  EXPECT_EQ(s.ane_layers, 22);
  EXPECT_EQ(s.ane_deltanet_layers, 17);
  EXPECT_EQ(s.ane_attention_layers, 5);
  EXPECT_EQ(s.total_programs, 60);
  EXPECT_EQ(s.live_programs, 60);
  EXPECT_LE(s.total_programs, s.compile_budget);
  EXPECT_LE(s.live_programs, s.max_live_programs);
  EXPECT_FALSE(s.fits_budget);
  EXPECT_EQ(s.programs_per_decode_token, 60);
  ASSERT_EQ(s.program_names.size(), 60u);
  EXPECT_EQ(s.program_names[0], "L00_dn_in_s32");
  EXPECT_EQ(s.program_names[1], "L00_dn_ffn_s32");
  EXPECT_EQ(s.program_names[6], "L03_attn_in_s32");
  EXPECT_EQ(s.program_names[7], "L03_ffn_s32");
  EXPECT_EQ(s.program_names[43], "L21_dn_ffn_s32");
  EXPECT_EQ(s.program_names[44], "lm_head_00_s32");
  // fp16 weights: per DeltaNet layer A 8224 x 1024 and B (2048 + 3 x 3584) x 1024 values, per
  // attention layer A 5120 x 1024 (queries, gates, k, v) and B the same as a DeltaNet B, plus the
  // head's 248320 x 1024: ~1.33 GiB.
  const double mib = static_cast<double>(s.total_weight_bytes) / (1 << 20);
  const double want = 2.0 * (17 * (8224 + 2048 + 3 * 3584) + 5 * (5120 + 2048 + 3 * 3584) +
                             248320) * 1024 / (1 << 20);
  EXPECT_NEAR(mib, want, 1.0);

  // Without the head (the programs it frees hold every layer): all 24 layers on the ANE.
  AneBackendOptions no_head;
  no_head.lm_head_on_ane = false;
  const AneCompileSummary h = plan_ane_programs(cfg, no_head);
  EXPECT_EQ(h.ane_layers, 24);
  EXPECT_EQ(h.ane_deltanet_layers, 18);
  EXPECT_EQ(h.ane_attention_layers, 6);
  EXPECT_EQ(h.total_programs, 48);
}

// `anelm compile --plan --json` itself, on a Qwen3.5 GGUF and on a bare config.json of the 0.8B
// shape (a plan reads no weights).
TEST(AneQwen35, CompilePlanCliCountsBothShapes) {
  const fs::path bin = anelm::testing::anelm_binary();
  if (!fs::exists(bin)) GTEST_SKIP() << bin << " not built";
  auto plan = [&](const std::string& model) {
    const std::string cmd = "'" + bin.string() + "' compile --plan --json --model '" + model + "' 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << cmd;
    return nlohmann::json::parse(out.substr(out.rfind('{')));
  };
  const nlohmann::json tiny = plan(tiny_made());
  EXPECT_EQ(tiny["n_layers"], 4);
  EXPECT_EQ(tiny["ane_layers"], 4);
  EXPECT_EQ(tiny["fits_budget"], true);
  EXPECT_EQ(tiny["total_programs"], 4 * 2 * 2 + tiny["lm_head_chunks"].get<int>());

  const fs::path dir = anelm::testing::make_temp_dir("ane-qwen35-config");
  const nlohmann::json text = {
      {"num_hidden_layers", 24}, {"hidden_size", 1024}, {"intermediate_size", 3584},
      {"num_attention_heads", 8}, {"num_key_value_heads", 2}, {"head_dim", 256},
      {"vocab_size", 248320}, {"linear_num_key_heads", 16}, {"linear_num_value_heads", 16},
      {"linear_key_head_dim", 128}, {"linear_value_head_dim", 128}, {"linear_conv_kernel_dim", 4},
      {"full_attention_interval", 4}, {"partial_rotary_factor", 0.25}};
  std::ofstream(dir / "config.json")
      << nlohmann::json{{"architectures", {"Qwen3_5ForConditionalGeneration"}},
                        {"tie_word_embeddings", true},
                        {"text_config", text}}
             .dump();
  const nlohmann::json real = plan(dir.string());
  EXPECT_EQ(real["n_layers"], 24);
  EXPECT_EQ(real["ane_layers"], 22);
  EXPECT_EQ(real["lm_head_chunks"], 16);
  EXPECT_EQ(real["total_programs"], 60);
  EXPECT_EQ(real["live_programs"], 60);
  EXPECT_EQ(real["max_live_programs"], 60);
  EXPECT_EQ(real["fits_budget"], false);  // layers 22-23 on the CPU, labelled
}

// The export writes the programs the plan names, and the tiny model fits whole.
TEST(AneQwen35, ExportWritesThePlannedPrograms) {
  auto model = load_model(tiny_made());
  const AneCompileSummary plan = plan_ane_programs(model->config);
  EXPECT_TRUE(plan.fits_budget);
  EXPECT_EQ(plan.ane_deltanet_layers, 3);
  EXPECT_EQ(plan.ane_attention_layers, 1);
  const fs::path out = anelm::testing::make_temp_dir("ane-qwen35-export");
  const AneCompileSummary ex =
      export_ane_programs(model->config, model->weights, out.string());
  EXPECT_EQ(ex.program_names, plan.program_names);
  EXPECT_TRUE(fs::exists(out / "L00_dn_in_s128" / "model.mil"));
  EXPECT_TRUE(fs::exists(out / "L03_attn_in_s32" / "model.mil"));
  EXPECT_TRUE(fs::exists(out / "manifest.json"));
  // The estimate the plan prints is within the blob headers' rounding of the exact bytes.
  EXPECT_NEAR(static_cast<double>(plan.total_weight_bytes),
              static_cast<double>(ex.total_weight_bytes), 0.01 * ex.total_weight_bytes);
}

using Fault = std::function<void(const std::string&, std::vector<float>&)>;

Fault scale(const std::string& program, float rel) {
  return [program, rel](const std::string& name, std::vector<float>& y) {
    if (name != program) return;
    for (float& v : y) v *= 1.0f + rel;
  };
}

// The self-check runs programs of both kinds: an honest "device" agrees exactly; one that is 10%
// off on any of them makes the engine decline the ANE and serve the CPU's ids.
TEST(AneQwen35, SelfCheckCoversBothLayerKinds) {
  auto self_check = [](Fault f) {
    return [f](AneBackendOptions& o) {
      o.self_check = AneBackendOptions::SelfCheck::kAlways;
      o.self_check_device_fault = f;
    };
  };
  auto honest = load(tiny_made(), Backend::kAne, self_check({}));
  EXPECT_EQ(honest->stats().backend, "ane (simulator)");
  EXPECT_EQ(honest->stats().ane_self_check_rel_error, 0);
  auto cpu = load(tiny_made(), Backend::kCpu);
  const std::vector<int> want = greedy(*cpu, kPrompt, 12);
  for (const std::string program :
       {"L00_dn_in_s32", "L00_dn_ffn_s32", "L03_attn_in_s32", "L03_ffn_s32", "lm_head_00_s32"}) {
    SCOPED_TRACE(program);
    auto e = load(tiny_made(), Backend::kAne, self_check(scale(program, 0.1f)));
    EXPECT_EQ(e->stats().backend, "cpu (ane declined: device disagrees with the simulator on " +
                                      program + ": rel error 0.1)");
    EXPECT_EQ(greedy(*e, kPrompt, 12), want);
  }
}

}  // namespace
}  // namespace anelm::engine
