// Internal: the macOS runtime's factory (defined in program_darwin.mm, built only on Apple).
#pragma once

#include <memory>

#include "ane_bridge/program.h"

namespace anelm::ane {

// Loads AppleNeuralEngine.framework, resolves the private classes and returns a runtime, or
// kUnavailable with the reason (framework missing, class missing, not Apple silicon).
Status make_darwin_runtime(const RuntimeOptions& options, std::unique_ptr<Runtime>* out);

}  // namespace anelm::ane
