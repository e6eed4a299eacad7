// TensorView helpers.
#include "engine/tensor.h"

#include <cctype>

namespace anelm::engine {

int64_t TensorView::numel() const {
  if (ndim <= 0) return 0;
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto t = static_cast<DType>(i);
    const std::string_view known = dtype_name(t);
    bool same = known.size() == name.size();
    for (size_t c = 0; same && c < name.size(); ++c) {
      same = std::tolower(static_cast<unsigned char>(name[c])) == std::tolower(static_cast<unsigned char>(known[c]));
    }
    if (same) return t;
  }
  return std::nullopt;
}

}  // namespace anelm::engine
