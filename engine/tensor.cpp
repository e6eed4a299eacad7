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

TensorView row_view(const TensorView& t, int64_t begin, int64_t count, std::string name) {
  TensorView v = t;
  const int64_t row_bytes = dtype_row_bytes(t.dtype, t.cols());
  v.name = std::move(name);
  v.shape[0] = count;
  v.data = static_cast<const uint8_t*>(t.data) + begin * row_bytes;
  v.nbytes = count * row_bytes;
  return v;
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
