// `anelm compile --verify`: every program of the plan runs on the calibration prompt through the
// simulator (FTZ on) and is checked against an fp32 reference; the error stays within 2e-2 on a
// tiny model, on the massive-activation model and on stories260K, and grows past it when the
// numerics are broken on purpose (so the check can fail).
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/engine/massive_activation.h"
#include "tests/support/shared_data.h"
#include "tools/ane_compile.h"
#include "tools/model_maker.h"

namespace anelm::engine {
namespace {

using namespace anelm::tools;
namespace fs = std::filesystem;

constexpr double kMaxRelError = 2e-2;

std::string make_tiny(const std::string& tag) {
  MakeModelOptions mo;
  mo.shape = "tiny";
  return make_model(mo, (anelm::testing::make_temp_dir(tag) / "tiny.gguf").string()).path;
}

void expect_sound(const AneVerifyReport& r, std::size_t programs) {
  std::cout << ane_verify_text(r);
  EXPECT_EQ(r.programs.size(), programs);
  EXPECT_TRUE(r.ftz);
  EXPECT_EQ(r.tokens, 8);
  EXPECT_LE(r.live_programs, 60);
  EXPECT_LE(r.max_rel_error, kMaxRelError) << r.worst_program;
  // Not trivially zero: fp16 storage costs at least a few ulps (4.9e-4 each) somewhere.
  EXPECT_GT(r.max_rel_error, 1e-5);
  double mx = 0;
  for (const AneProgramCheck& c : r.programs) {
    EXPECT_GE(c.rel_error, 0) << c.name;
    EXPECT_EQ(c.device_rel_error, -1) << c.name;  // no device in this build
    mx = std::max(mx, c.rel_error);
  }
  EXPECT_EQ(mx, r.max_rel_error);
  EXPECT_NE(r.device.find("not available"), std::string::npos) << r.device;
}

TEST(AneVerify, TinyQwen2EveryProgramWithinTolerance) {
  const AneVerifyReport r = verify_ane_model(make_tiny("ane-verify-tiny"));
  // 2 layers x {A, B} x S {32, 128} + 1 LM-head chunk.
  expect_sound(r, 9);
  EXPECT_EQ(r.live_programs, 9);
  EXPECT_EQ(r.dispatches_per_token, 5);
  EXPECT_EQ(r.programs[0].name, "L00_attn_in_s32");
  EXPECT_EQ(r.programs[0].kind, "attn_in");
  EXPECT_EQ(r.programs[1].kind, "ffn");
  EXPECT_EQ(r.programs.back().kind, "lm_head");
}

TEST(AneVerify, MassiveActivationWithinToleranceWithFtz) {
  const auto m = anelm::testing::make_massive_activation_model(
      anelm::testing::make_temp_dir("ane-verify-massive"));
  const AneVerifyReport r = verify_ane_model(m.path);
  expect_sound(r, 9);
  AneBackendOptions o;
  o.fp32_residual = true;  // program B checked on the update alone, the harder measure
  expect_sound(verify_ane_model(m.path, o), 9);
}

// The measure catches broken numerics: a fixed prescale of 1024 overflows fp16 on the outlier token
// (1000 * 1024 > 65504) and flushes nothing else; the error must be O(1), not hidden.
TEST(AneVerify, BrokenPrescaleIsReported) {
  const auto m = anelm::testing::make_massive_activation_model(
      anelm::testing::make_temp_dir("ane-verify-broken"));
  AneBackendOptions o;
  o.rms_prescale = 1024;
  const AneVerifyReport r = verify_ane_model(m.path, o);
  std::cout << ane_verify_text(r);
  EXPECT_GT(r.max_rel_error, 0.5) << r.worst_program;
}

TEST(AneVerify, Stories260KWithinTolerance) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  const AneVerifyReport r = verify_ane_model(path.string());
  expect_sound(r, 21);  // 5 layers x 2 x 2 buckets + 1 chunk
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AneVerify, CliPrintsTheJsonFields) {
  const std::string model = make_tiny("ane-verify-cli");
  const fs::path dir = anelm::testing::make_temp_dir("ane-verify-cli-out");
  const std::string cmd = "'" + anelm::testing::anelm_binary().string() + "' compile --model '" +
                          model + "' --verify --json >'" + (dir / "out.json").string() + "' 2>'" +
                          (dir / "err.txt").string() + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir / "err.txt");
  const nlohmann::json j = nlohmann::json::parse(slurp(dir / "out.json"));
  ASSERT_EQ(j["programs"].size(), 9u);
  EXPECT_EQ(j["programs"][0]["name"], "L00_attn_in_s32");
  EXPECT_TRUE(j["programs"][0]["rel_error"].is_number());
  EXPECT_LE(j["max_rel_error"].get<double>(), kMaxRelError);
  EXPECT_TRUE(j["worst_program"].is_string());
  EXPECT_EQ(j["ftz"], true);
  EXPECT_EQ(j["live_programs"], 9);
  EXPECT_EQ(j["dispatches_per_token"], 5);

  const std::string bad = "'" + anelm::testing::anelm_binary().string() + "' compile --model '" +
                          model + "' --verify --plan >/dev/null 2>'" +
                          (dir / "err.txt").string() + "'";
  const int bad_status = std::system(bad.c_str());
  EXPECT_TRUE(WIFEXITED(bad_status) && WEXITSTATUS(bad_status) != 0);
  EXPECT_NE(slurp(dir / "err.txt").find("--verify takes neither --plan nor --out"),
            std::string::npos);
}

}  // namespace
}  // namespace anelm::engine
