// ANE program planning and export: counts per decode token and per cold start against the compile
// budget (tiny qwen2 exported, full-size Qwen2.5-0.5B planned from its config.json), the written
// layout, and what happens when a model does not fit (CPU remainder, or a start-up error).
#include "tools/ane_compile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "engine/ane/ane_executor.h"
#include "engine/config_hf.h"
#include "engine/error.h"
#include "engine/generator.h"
#include "engine/kernels/kernels.h"
#include "engine/model_loader.h"
#include "tools/model_maker.h"
#include "engine/thread_pool.h"
#include "engine/transformer.h"
#include "tests/engine/cpu_ane_generators.h"
#include "tests/support/shared_data.h"

namespace anelm::engine {
namespace {

using namespace anelm::tools;

namespace fs = std::filesystem;

std::string make_tiny_qwen(const std::string& tag) {
  MakeModelOptions mo;
  mo.shape = "tiny";
  return make_model(mo, (anelm::testing::make_temp_dir(tag) / "tiny.gguf").string()).path;
}

std::int64_t dir_bytes(const fs::path& dir) {
  std::int64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += static_cast<std::int64_t>(e.file_size());
  return n;
}

TEST(AneCompile, TinyQwen2ExportWritesEveryProgram) {
  const std::string model = make_tiny_qwen("ane-export-model");
  const fs::path out = anelm::testing::make_temp_dir("ane-export");
  const AneCompileSummary s = compile_ane_programs(model, out.string());
  std::cout << ane_compile_summary_text(s) << ane_compile_summary_json(s) << "\n";
  // tiny: 2 layers, vocab 512 -> 1 LM-head chunk; S buckets 32 and 128.
  EXPECT_EQ(s.n_layers, 2);
  EXPECT_EQ(s.ane_layers, 2);
  EXPECT_EQ(s.seq_buckets, (std::vector<int>{32, 128}));
  EXPECT_EQ(s.lm_head_chunks, 1);
  EXPECT_EQ(s.programs_per_decode_token, 2 * 2 + 1);
  EXPECT_LE(s.programs_per_decode_token, 2 * s.n_layers + s.lm_head_chunks);
  EXPECT_EQ(s.total_programs, 2 * 2 * 2 + 1);
  EXPECT_LE(s.total_programs, s.compile_budget);
  EXPECT_TRUE(s.fits_budget);
  ASSERT_EQ(s.program_names.size(), 9u);
  EXPECT_EQ(s.program_names.front(), "L00_attn_in_s32");
  EXPECT_EQ(s.program_names.back(), "lm_head_00_s32");

  std::int64_t blob_bytes = 0;
  for (const std::string& name : s.program_names) {
    EXPECT_TRUE(fs::exists(out / name / "model.mil")) << name;
    ASSERT_TRUE(fs::is_directory(out / name / "weights")) << name;
    blob_bytes += dir_bytes(out / name / "weights");
  }
  EXPECT_TRUE(s.weight_bytes_exact);
  EXPECT_EQ(s.total_weight_bytes, blob_bytes);
  // The plan's estimate (no weights read) is the exact figure for fp16.
  EXPECT_EQ(plan_ane_programs(load_model(model)->config).total_weight_bytes, blob_bytes);

  nlohmann::json m;
  std::ifstream(out / "manifest.json") >> m;
  ASSERT_EQ(m["programs"].size(), 9u);
  const auto& a = m["programs"][0];
  EXPECT_EQ(a["name"], "L00_attn_in_s32");
  // qwen2 tiny: D 64, 4 heads x 16 + 2 x 2 kv heads x 16 -> QKV 128 channels, S 32.
  EXPECT_EQ(a["inputs"][0]["shape"], (std::vector<int>{1, 64, 1, 32}));
  EXPECT_EQ(a["outputs"][0]["shape"], (std::vector<int>{1, 128, 1, 32}));
  EXPECT_EQ(m["programs"][8]["outputs"][0]["segments"][0]["name"], "logits[0:512]");
}

TEST(AneCompile, Qwen25HalfBPlanFitsTheBudgetAndTheLiveCap) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct/config.json");
  const ModelConfig cfg = config_from_hf_dir(dir.parent_path().string());
  ASSERT_EQ(cfg.n_layers, 24);
  const AneCompileSummary s = plan_ane_programs(cfg);
  std::cout << ane_compile_summary_text(s);
  // 151,936 / 16,384 -> 10 chunks; 24 x 2 + 10 = 58 per token. S {32, 128} would keep 106
  // programs loaded, over the live cap of 60: the S = 128 bucket is dropped and prefill runs in
  // S = 32 chunks, so 58 programs are live and compiled.
  EXPECT_EQ(s.lm_head_chunks, 10);
  EXPECT_EQ(s.programs_per_decode_token, 58);
  EXPECT_EQ(s.max_live_programs, 60);
  EXPECT_EQ(s.seq_buckets, (std::vector<int>{32}));
  EXPECT_EQ(s.total_programs, 58);
  EXPECT_EQ(s.live_programs, 58);
  EXPECT_LE(s.live_programs, 60);
  EXPECT_LE(s.total_programs, s.compile_budget - 8);  // room to spare
  EXPECT_TRUE(s.fits_budget);
  EXPECT_FALSE(s.weight_bytes_exact);
  // fp16: 24 layers x 29.8 MB + 272 MB of LM head.
  EXPECT_GT(s.total_weight_bytes, 900'000'000);
  EXPECT_LT(s.total_weight_bytes, 1'100'000'000);

  // Without the cap both buckets fit the compile budget (the plan before issue 15).
  AneBackendOptions uncapped;
  uncapped.max_live_programs = 0;
  const AneCompileSummary u = plan_ane_programs(cfg, uncapped);
  EXPECT_EQ(u.seq_buckets, (std::vector<int>{32, 128}));
  EXPECT_EQ(u.total_programs, 106);
  EXPECT_EQ(u.live_programs, 106);
  EXPECT_EQ(u.programs_per_decode_token, 58);

  AneBackendOptions decode_only;
  decode_only.seq_buckets = {32};
  decode_only.int8_weights = true;
  const AneCompileSummary d = plan_ane_programs(cfg, decode_only);
  EXPECT_EQ(d.total_programs, 58);
  EXPECT_LT(d.total_weight_bytes, s.total_weight_bytes * 2 / 3);  // one byte per weight
  // A bucket that cannot fit next to the others is dropped, largest first.
  AneBackendOptions greedy = uncapped;
  greedy.seq_buckets = {32, 128, 512};
  EXPECT_EQ(plan_ane_programs(cfg, greedy).seq_buckets, (std::vector<int>{32, 128}));
}

// plan_ane_programs(cfg, o) refuses with kResourceExhausted and a message holding every part.
void expect_refused(const ModelConfig& cfg, const AneBackendOptions& o, std::initializer_list<const char*> parts) {
  try {
    plan_ane_programs(cfg, o);
    ADD_FAILURE() << "expected kResourceExhausted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kResourceExhausted);
    for (const char* part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// A cap below even the one-bucket plan: refused without cpu_remainder (naming the cap), else the
// layers that do not fit run on the CPU and the live count stays within the cap.
TEST(AneCompile, PlanOverTheLiveCapIsRefusedOrPlannedAround) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct/config.json");
  const ModelConfig cfg = config_from_hf_dir(dir.parent_path().string());
  AneBackendOptions o;
  o.max_live_programs = 30;
  o.cpu_remainder = false;
  expect_refused(cfg, o, {"needs 58 live programs", "at most 30 programs may be loaded at once"});
  o.cpu_remainder = true;
  const AneCompileSummary s = plan_ane_programs(cfg, o);
  EXPECT_EQ(s.seq_buckets, (std::vector<int>{32}));
  EXPECT_EQ(s.ane_layers, 10);  // (30 - 10 head chunks) / 2
  EXPECT_EQ(s.live_programs, 30);
  EXPECT_EQ(s.programs_per_decode_token, 30);
  EXPECT_FALSE(s.fits_budget);
  o.max_live_programs = -1;
  EXPECT_THROW(plan_ane_programs(cfg, o), Error);
}

TEST(AneCompile, ModelBeyondTheBudgetFailsOrKeepsARemainderOnCpu) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct/config.json");
  const ModelConfig cfg = config_from_hf_dir(dir.parent_path().string());
  AneBackendOptions o;
  o.compile_budget = 40;
  o.cpu_remainder = false;
  expect_refused(cfg, o, {"needs 58 compiles", "budget is 40"});
  o.cpu_remainder = true;
  const AneCompileSummary s = plan_ane_programs(cfg, o);
  EXPECT_EQ(s.seq_buckets, (std::vector<int>{32}));
  EXPECT_EQ(s.ane_layers, 15);  // (40 - 10 head chunks) / 2
  EXPECT_EQ(s.total_programs, 40);
  EXPECT_FALSE(s.fits_budget);
}

// The backend end to end under a cap below its two-bucket plan (21 programs): the planner drops
// S=128, the simulator (same cap) loads all 11 programs, and a 40-token prompt prefilled in S=32
// chunks still gives the CPU's ids. Were the cap ignored, the 16th load would fail and, without
// cpu_remainder, throw.
TEST(AneCompile, BackendStaysWithinTheLiveCap) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  auto model = load_model(path.string());
  ThreadPool pool(2);
  testing::CpuAneGenerators g(*model, pool);
  AneBackendOptions o;
  o.max_live_programs = 15;
  o.cpu_remainder = false;
  auto backend = make_ane_backend(model->config, model->weights, g.ane_tf, pool, o);
  const AneBackendStats& st = backend->stats();
  EXPECT_EQ(st.seq_buckets, (std::vector<int>{32}));
  EXPECT_EQ(st.programs, 11);  // 5 layers x 2 + 1 chunk
  EXPECT_EQ(st.programs_per_decode_token, 11);
  EXPECT_EQ(st.ane_layers, 5);
  GenerateRequest r;
  for (int i = 0; r.prompt.size() < 40; ++i) r.prompt.push_back(1 + (i * 37) % 500);
  r.max_tokens = 16;
  r.sampling.temperature = 0.0f;
  EXPECT_EQ(g.ane.generate(r, {}).ids, g.cpu.generate(r, {}).ids);
}

// stories260K with a budget of 7: layers 0-2 and the head on the ANE, layers 3-4 on the CPU; the
// output still matches the CPU, and the label says what ran where.
TEST(AneCompile, CpuRemainderRunsAndIsLabelled) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  auto model = load_model(path.string());
  ThreadPool pool(2);
  testing::CpuAneGenerators g(*model, pool);
  AneBackendOptions o;
  o.compile_budget = 7;
  {
    auto backend = make_ane_backend(model->config, model->weights, g.ane_tf, pool, o);
    const AneBackendStats& st = backend->stats();
    EXPECT_EQ(st.backend, "ane (simulator) + cpu (layers 3-4)");
    EXPECT_EQ(st.ane_layers, 3);
    EXPECT_TRUE(st.lm_head_on_ane);
    EXPECT_EQ(st.programs, 7);
    EXPECT_EQ(st.programs_per_decode_token, 7);
    EXPECT_EQ(std::string(g.ane_tf.layer_executor(2).name()), "ane");
    EXPECT_EQ(std::string(g.ane_tf.layer_executor(3).name()), "cpu");
    GenerateRequest r;
    r.prompt = {1, 403, 407, 261, 378};
    r.max_tokens = 20;
    r.sampling.temperature = 0.0f;
    EXPECT_EQ(g.ane.generate(r, {}).ids, g.cpu.generate(r, {}).ids);
  }
  // Destroying the backend hands every layer back to the CPU.
  EXPECT_EQ(std::string(g.ane_tf.layer_executor(0).name()), "cpu");

  o.cpu_remainder = false;
  EXPECT_THROW(make_ane_backend(model->config, model->weights, g.ane_tf, pool, o), Error);
}

}  // namespace
}  // namespace anelm::engine
