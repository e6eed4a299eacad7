// MIL value types shared by the emitter and the simulator: dtypes, tensor/scalar types, const
// values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace anelm::ane {

// Element types that occur in dialect-A MIL (ane-programming-model.md §2.2).
enum class DType : std::uint8_t { kFp16, kFp32, kInt8, kUint8, kInt32, kBool, kString, kUint64 };

std::string_view dtype_name(DType dtype);  // "fp16", "int32", ...
bool dtype_from_name(std::string_view name, DType* out);
int dtype_bytes(DType dtype);  // storage bytes per element; 0 for string

// A variable's type: a bare scalar (dialect A) or a tensor with a static shape.
struct MilType {
  DType dtype = DType::kFp16;
  bool scalar = false;
  std::vector<std::int64_t> shape;  // empty for scalars

  static MilType tensor(DType dtype, std::vector<std::int64_t> shape) {
    return MilType{dtype, false, std::move(shape)};
  }
  static MilType scalar_of(DType dtype) { return MilType{dtype, true, {}}; }

  int rank() const { return static_cast<int>(shape.size()); }
  std::int64_t numel() const;
  // Dialect-A spelling: "fp16" or "tensor<fp16, [1, 64, 1, 32]>".
  std::string str() const;
  bool operator==(const MilType&) const = default;
};

// "[1, 64, 1, 32]" with the ", " separator of ane_mil_gen.h / §2.8.
std::string dims_str(const std::vector<std::int64_t>& dims);

// Compile-time value of a const (numbers stored as double: ints, bools and fp16 values are exact).
struct ConstValue {
  std::vector<double> nums;  // row-major elements; one element for scalars
  std::string text;          // for string consts
};

// An op argument as seen by type inference: its type plus its value when it is a const.
struct Operand {
  MilType type;
  const ConstValue* value = nullptr;
};

}  // namespace anelm::ane
