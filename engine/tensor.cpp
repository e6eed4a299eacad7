// TensorView helpers.
#include "engine/tensor.h"

namespace anelm::engine {

int64_t TensorView::numel() const {
  if (ndim <= 0) return 0;
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

}  // namespace anelm::engine
