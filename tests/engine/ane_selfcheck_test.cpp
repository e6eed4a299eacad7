// The --backend ane start-up self-check (engine/ane/ane_selfcheck.h). On Linux the runtime is the
// simulator, so the check is forced on (SelfCheck::kAlways) and the "device" is the backend's own
// simulator programs, made wrong by a fault hook on their outputs: a wrong device must make the
// engine decline the ANE and serve the CPU's ids; an honest one (or one within the limit) passes.
// The real device path (kDevice on a Mac) is UNTESTED.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "ane_bridge/program.h"
#include "engine/ane/ane_executor.h"
#include "engine/ane/ane_programs.h"
#include "engine/ane/ane_selfcheck.h"
#include "engine/engine.h"
#include "engine/model_loader.h"
#include "tests/support/shared_data.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

using Fault = std::function<void(const std::string&, std::vector<float>&)>;

std::string tiny_qwen2() {
  static const std::string path = [] {
    const auto dir = anelm::testing::make_temp_dir("ane-selfcheck");
    tools::MakeModelOptions mo;
    mo.shape = "tiny";
    return tools::make_model(mo, (dir / "tiny-qwen2.gguf").string()).path;
  }();
  return path;
}

std::unique_ptr<Engine> load(Backend b, AneBackendOptions::SelfCheck mode, Fault fault = {}) {
  EngineOptions o;
  o.model_path = tiny_qwen2();
  o.backend = b;
  o.threads = 2;
  o.ctx = 128;
  o.ane_test_options = [mode, fault](AneBackendOptions& a) {
    a.self_check = mode;
    a.self_check_device_fault = fault;
  };
  return Engine::load(o);
}

std::vector<int> greedy(Engine& e) {
  GenerateRequest r;
  r.prompt = {1, 403, 407, 261, 378};
  r.max_tokens = 24;
  r.ignore_eos = true;
  r.sampling.temperature = 0.0f;
  return e.generate(r, {}).ids;
}

// Scales one program's outputs by (1 + rel): a device error of exactly `rel` on that program.
Fault scale(const std::string& program, float rel) {
  return [program, rel](const std::string& name, std::vector<float>& y) {
    if (name != program) return;
    for (float& v : y) v *= 1.0f + rel;
  };
}

// Default (kDevice) on the simulator: the check does not run, so start-up costs nothing more.
TEST(AneSelfCheck, DoesNotRunOnTheSimulatorByDefault) {
  auto e = load(Backend::kAne, AneBackendOptions::SelfCheck::kDevice, scale("L00_ffn_s32", 1.0f));
  EXPECT_EQ(e->stats().backend, "ane (simulator)");
  EXPECT_EQ(e->stats().ane_self_check_rel_error, -1);
}

// The check's cases are the very programs the backend loaded: the rebuilt blocks compiled on a
// fresh simulator give bit-identical outputs.
TEST(AneSelfCheck, HonestDeviceAgreesExactly) {
  auto e = load(Backend::kAne, AneBackendOptions::SelfCheck::kAlways);
  const BackendStats s = e->stats();
  EXPECT_EQ(s.backend, "ane (simulator)");
  EXPECT_EQ(s.ane_self_check_rel_error, 0);
  EXPECT_GT(s.ane_programs, 0);
}

// A device 0.5% off (inside the honest fp16 spread's order of magnitude) is accepted.
TEST(AneSelfCheck, SmallDisagreementPasses) {
  auto e = load(Backend::kAne, AneBackendOptions::SelfCheck::kAlways, scale("lm_head_00_s32", 5e-3f));
  const BackendStats s = e->stats();
  EXPECT_EQ(s.backend, "ane (simulator)");
  EXPECT_NEAR(s.ane_self_check_rel_error, 5e-3, 1e-4);
}

// A wrong device on any checked program declines the ANE: labelled, and the CPU's ids served.
TEST(AneSelfCheck, WrongDeviceDeclinesTheAneAndServesCpuIds) {
  auto cpu = load(Backend::kCpu, AneBackendOptions::SelfCheck::kOff);
  const std::vector<int> want = greedy(*cpu);
  const int layers = cpu->config().n_layers;
  ASSERT_GT(layers, 1);
  char last_ffn[32];
  std::snprintf(last_ffn, sizeof last_ffn, "L%02d_ffn_s32", layers - 1);
  for (const std::string& program : {std::string("L00_attn_in_s32"), std::string("L00_ffn_s32"),
                                    std::string(last_ffn), std::string("lm_head_00_s32")}) {
    SCOPED_TRACE(program);
    auto e = load(Backend::kAne, AneBackendOptions::SelfCheck::kAlways, scale(program, 0.1f));
    const BackendStats s = e->stats();
    EXPECT_EQ(s.backend, "cpu (ane declined: device disagrees with the simulator on " + program +
                             ": rel error 0.1)");
    EXPECT_NEAR(s.ane_self_check_rel_error, 0.1, 1e-4);
    EXPECT_EQ(s.ane_programs, 0);
    EXPECT_EQ(greedy(*e), want);
    // Bit-identical logits: the CPU executors serve, not ANE programs within fp16 noise of them.
    const std::vector<int> seq = {1, 403, 407, 261};
    const auto a = e->forward(seq, 0, true), c = cpu->forward(seq, 0, true);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), c.begin(), c.end()));
  }
}

// The comparison alone, with a "device" that is the simulator running the same program from a
// corrupted weight blob (sign bits flipped in half the payload of the largest file): it fails,
// while the honest program agrees exactly.
TEST(AneSelfCheck, CorruptedWeightBlobFailsTheComparison) {
  auto model = load_model(tiny_qwen2());
  const ModelConfig& cfg = model->config;
  const AneRecorded r = record_ane_activations(cfg, model->weights);
  const ane_programs::LayerF32 lw(cfg, 0, model->weights.layers[0]);
  AneSelfCheckCase c;
  c.block = ane_programs::build_layer_block(cfg, lw, 0, true, 32, false,
                                            fixed_ane_prescales(cfg, 1.0 / 16));
  c.inputs = {{r.att[0].data(), cfg.q_dim()}, {r.x_in[0].data(), cfg.d_model}};
  ane::RuntimeOptions ro;
  ro.backend = ane::Backend::kSimulator;
  ro.sim.compile_budget = 1000;
  const std::unique_ptr<ane::Runtime> sim = ane::make_simulator(ro);
  ane::ProgramSource bad = c.block.source;
  auto& blob = std::max_element(bad.weights.begin(), bad.weights.end(), [](auto& x, auto& y) {
                 return x.bytes.size() < y.bytes.size();
               })->bytes;
  for (std::size_t i = 129; i < 128 + (blob.size() - 128) / 2; i += 2) blob[i] ^= 0x80;
  std::unique_ptr<ane::Program> honest, corrupted;
  ASSERT_TRUE(sim->compile(c.block.source, &honest).ok());
  ASSERT_TRUE(sim->compile(bad, &corrupted).ok());
  const AneCaseEvaluator reference = compiled_program_evaluator(*sim);
  c.loaded = corrupted.get();
  const AneSelfCheckResult wrong =
      run_ane_self_check({c}, r.n, loaded_program_evaluator(), reference);
  std::cout << "corrupted blob: rel error " << wrong.max_rel_error << "\n";
  EXPECT_FALSE(wrong.passed()) << wrong.max_rel_error;
  EXPECT_EQ(wrong.worst_program, "L00_ffn_s32");
  c.loaded = honest.get();
  const AneSelfCheckResult right =
      run_ane_self_check({c}, r.n, loaded_program_evaluator(), reference);
  EXPECT_TRUE(right.passed());
  EXPECT_EQ(right.max_rel_error, 0);
}

// Non-finite device output (e.g. an fp16 overflow the simulator does not see) is a failure too.
TEST(AneSelfCheck, NonFiniteDeviceOutputDeclines) {
  const Fault nan = [](const std::string& name, std::vector<float>& y) {
    if (name == "L00_attn_in_s32") y[0] = NAN;
  };
  auto e = load(Backend::kAne, AneBackendOptions::SelfCheck::kAlways, nan);
  EXPECT_TRUE(std::isinf(e->stats().ane_self_check_rel_error));
  EXPECT_EQ(e->stats().backend.rfind("cpu (ane declined: device disagrees", 0), 0u)
      << e->stats().backend;
}

}  // namespace
}  // namespace anelm::engine
