// MIL dtype names and type spelling.
#include "ane_bridge/mil_types.h"

namespace anelm::ane {

namespace {
struct DTypeName {
  DType dtype;
  std::string_view name;
  int bytes;
};
constexpr DTypeName kDTypes[] = {
    {DType::kFp16, "fp16", 2},     {DType::kFp32, "fp32", 4},     {DType::kInt8, "int8", 1},
    {DType::kUint8, "uint8", 1},   {DType::kInt32, "int32", 4},   {DType::kBool, "bool", 1},
    {DType::kString, "string", 0}, {DType::kUint64, "uint64", 8},
};
}  // namespace

std::string_view dtype_name(DType dtype) {
  for (const auto& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  return "?";
}

bool dtype_from_name(std::string_view name, DType* out) {
  for (const auto& d : kDTypes) {
    if (d.name == name) {
      *out = d.dtype;
      return true;
    }
  }
  return false;
}

int dtype_bytes(DType dtype) {
  for (const auto& d : kDTypes)
    if (d.dtype == dtype) return d.bytes;
  return 0;
}

std::int64_t MilType::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string dims_str(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

std::string MilType::str() const {
  if (scalar) return std::string(dtype_name(dtype));
  return "tensor<" + std::string(dtype_name(dtype)) + ", " + dims_str(shape) + ">";
}

}  // namespace anelm::ane
