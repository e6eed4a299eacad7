// A TokenConstraint that allows the first `ok` tokens, then nothing: the sequence under it fails
// mid-decode (the engine finds no token to sample), for tests of failure isolation.
#pragma once

#include <cmath>
#include <span>

#include "engine/generation.h"

namespace anelm::testing {

struct FailingConstraint : engine::TokenConstraint {
  int ok = 0, seen = 0;
  bool allows(int) override { return seen < ok; }
  int mask(std::span<float> logits) override {
    for (float& x : logits) x = -INFINITY;
    return 0;
  }
  void accept(int) override { ++seen; }
};

}  // namespace anelm::testing
