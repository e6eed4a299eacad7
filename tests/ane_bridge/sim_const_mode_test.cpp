// ConstMode::kValidateOnly (what the macOS runtime's front end uses): the same programs pass and
// fail as with materialised consts, the same I/O comes out, and no weight is held as fp32.
#include <gtest/gtest.h>

#include "ane_bridge/mil_blocks.h"
#include "ane_bridge/sim/simulator.h"
#include "tests/ane_bridge/ane_test_util.h"

namespace anelm::ane {
namespace {

using testing::seeded_values;

// Program B of a small layer, fp16 or int8 (int8 adds constexpr_affine_dequantize consts).
BlockProgram ffn_block(WeightFormat fmt) {
  const LayerShapes sh{64, 4, 2, 16, 128, 1e-6};
  const std::vector<float> wo = seeded_values(64 * 64, 1, 0.1f), g = seeded_values(64, 2, 1.0f),
                           wg = seeded_values(128 * 64, 3, 0.1f),
                           wu = seeded_values(128 * 64, 4, 0.1f),
                           wd = seeded_values(64 * 128, 5, 0.1f);
  BlockOptions o;
  o.format = fmt;
  BlockProgram b;
  EXPECT_TRUE(build_ffn_block(sh, {{wo, {}}, g, {wg, {}}, {wu, {}}, {wd, {}}}, o, &b).ok());
  return b;
}

TEST(SimConstMode, ValidateOnlyHoldsNoWeightsButTheSameInterface) {
  for (WeightFormat fmt : {WeightFormat::kFp16, WeightFormat::kInt8}) {
    const BlockProgram b = ffn_block(fmt);
    const SimulatorOptions opts = testing::test_options();
    sim::CompiledProgram full, light;
    ASSERT_TRUE(sim::front_end(b.source, opts, &full).ok());
    ASSERT_TRUE(sim::front_end(b.source, opts, &light, sim::ConstMode::kValidateOnly).ok());
    // 64x64 + 3 x 128x64 weights = 28,672 values: materialised they are 4 bytes each.
    const std::int64_t weights = 64 * 64 + 3 * 128 * 64;
    EXPECT_GE(sim::const_bytes(full), weights * 4);
    // Left: scalars and shape vectors only (psc, eps, conv and slice parameters).
    EXPECT_LT(sim::const_bytes(light), 1024) << sim::const_bytes(light);
    EXPECT_EQ(light.weight_bytes, full.weight_bytes);
    ASSERT_EQ(light.functions.size(), 1u);
    const auto &lf = light.functions[0], &ff = full.functions[0];
    ASSERT_EQ(lf.inputs.size(), ff.inputs.size());
    EXPECT_EQ(lf.inputs[0].name, ff.inputs[0].name);
    EXPECT_EQ(lf.inputs[0].type, ff.inputs[0].type);
    EXPECT_EQ(lf.outputs[0].type, ff.outputs[0].type);
    EXPECT_EQ(lf.steps.size(), ff.steps.size());
    EXPECT_TRUE(ff.weights_materialized);
    EXPECT_FALSE(lf.weights_materialized);

    // Nothing to run with: evaluating is refused instead of reading missing weights.
    std::vector<std::uint8_t> in(static_cast<std::size_t>(b.inputs[0].layout().alloc_bytes())),
        out(static_cast<std::size_t>(b.outputs[0].layout().alloc_bytes()));
    const std::span<const std::uint8_t> ins[1] = {in};
    const std::span<std::uint8_t> outs[1] = {out};
    const Status s = sim::evaluate_function(lf, opts, ins, outs);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("without its weights"), std::string::npos) << s.message();
    EXPECT_TRUE(sim::evaluate_function(ff, opts, ins, outs).ok());
  }
}

TEST(SimConstMode, ValidateOnlyStillRejectsBadBlobs) {
  BlockProgram b = ffn_block(WeightFormat::kFp16);
  ASSERT_FALSE(b.source.weights.empty());
  b.source.weights[0].bytes[64] ^= 0xFF;  // the first record's sentinel
  sim::CompiledProgram light;
  const Status s = sim::front_end(b.source, testing::test_options(), &light,
                                  sim::ConstMode::kValidateOnly);
  EXPECT_EQ(s.code(), StatusCode::kCompileFailed);
  EXPECT_NE(s.message().find("bad blob record magic"), std::string::npos) << s.message();
  b = ffn_block(WeightFormat::kFp16);
  b.source.weights[0].bytes.resize(b.source.weights[0].bytes.size() - 2);  // payload cut short
  EXPECT_FALSE(sim::front_end(b.source, testing::test_options(), &light,
                              sim::ConstMode::kValidateOnly)
                   .ok());
}

}  // namespace
}  // namespace anelm::ane
