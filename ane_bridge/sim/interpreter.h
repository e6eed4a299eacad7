// Reference interpreter of every emitted MIL op with the ANE numerics of §7.2.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ane_bridge/mil_types.h"
#include "ane_bridge/simulator_options.h"
#include "ane_bridge/status.h"

namespace anelm::ane::sim {

// A value during simulation. Elements are stored row-major as float: fp16 values are exact in fp32,
// and so are int8/int32 (|v| < 2^24) and bool (0/1). Strings use `text`.
struct SimTensor {
  MilType type;
  std::vector<float> data;
  std::string text;
};

// Numerics knobs the interpreter reads.
struct Numerics {
  bool ftz = false;              // flush fp16 subnormals after each op
  bool fp16_accumulate = false;  // round the running sum to fp16 after each add (pessimistic)
};

using SimArgs = std::map<std::string, std::vector<const SimTensor*>, std::less<>>;

// Runs one op (not const / constexpr_*). `out->type` must already hold the validated result type.
// fp16 results are rounded to nearest even once, after the op; conv/matmul/reduce_sum/softmax
// accumulate in fp32 (unless fp16_accumulate).
Status run_op(const std::string& op, const SimArgs& args, const Numerics& num, SimTensor* out);

// Rounds every element to the tensor's dtype (fp16: RNE + optional FTZ; fp32: no-op).
void round_to_dtype(SimTensor* t, const Numerics& num);

// constexpr_affine_dequantize: scale * (q - zero_point) in fp32, rounded once to fp16 (§7.1 item
// 4). scale/zero_point hold one value (per tensor) or data.shape[axis] values.
void affine_dequantize(const SimTensor& q, const std::vector<float>& scale,
                       const std::vector<float>& zero_point, int axis, const Numerics& num,
                       SimTensor* out);

}  // namespace anelm::ane::sim
