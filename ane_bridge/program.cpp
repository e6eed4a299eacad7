// Runtime factory: the ANE on Apple platforms when the private framework resolves, else the
// simulator.
#include "ane_bridge/program.h"

#if defined(ANELM_HAVE_ANE_RUNTIME)
#include "ane_bridge/program_darwin.h"
#endif

namespace anelm::ane {

bool ane_runtime_compiled_in() {
#if defined(ANELM_HAVE_ANE_RUNTIME)
  return true;
#else
  return false;
#endif
}

Status make_runtime(const RuntimeOptions& options, std::unique_ptr<Runtime>* out,
                    std::string* why_not_ane) {
  std::string reason;
  if (options.backend != Backend::kSimulator) {
#if defined(ANELM_HAVE_ANE_RUNTIME)
    const Status s = make_darwin_runtime(options, out);
    if (s.ok()) return s;
    if (options.backend == Backend::kAne) return s;
    reason = s.message();
#else
    reason = "this build has no ANE runtime (not an Apple platform)";
    if (options.backend == Backend::kAne) return Status(StatusCode::kUnavailable, reason);
#endif
  } else {
    reason = "the simulator was requested";
  }
  if (why_not_ane) *why_not_ane = reason;
  *out = make_simulator(options);
  return {};
}

}  // namespace anelm::ane
