// The MIL op catalog this project emits and simulates, with shape/dtype inference shared by both.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ane_bridge/mil_types.h"

namespace anelm::ane {

// One named argument of an op (§2.5). must_be_const: the compiler needs its value (axes, perm...).
struct OpArgSpec {
  std::string_view name;
  bool required = true;
  bool must_be_const = false;
  bool tuple = false;  // written "values = (a, b, c)"
};

// Ops proven to compile in the sources (§2.5 plus `identity` from §2.6).
// `constexpr_affine_dequantize` is separate because its parameters are attributes, not arguments.
struct OpSpec {
  std::string_view name;
  std::vector<OpArgSpec> args;  // in the order the emitter prints them
};

// nullptr when the op is outside the proven catalog.
const OpSpec* find_op(std::string_view name);
const std::vector<OpSpec>& op_catalog();

using OpArgs = std::map<std::string, std::vector<Operand>, std::less<>>;

// Infers the result type of `op` from its arguments. Returns "" on success, else a message that
// names the argument and the expected and actual values.
std::string infer_op_type(std::string_view op, const OpArgs& args, MilType* out);

// constexpr_affine_dequantize (CT iOS16): quantized_data int8/uint8 tensor, scale and zero_point
// scalars or 1-D vectors of length shape[axis]. Result: fp16 (scale's dtype) with data's shape.
std::string infer_affine_dequantize(const MilType& data, const MilType& scale,
                                    const MilType& zero_point, std::int64_t axis, MilType* out);

// Numpy broadcasting of two shapes; false when incompatible.
bool broadcast_shapes(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b,
                      std::vector<std::int64_t>* out);

}  // namespace anelm::ane
