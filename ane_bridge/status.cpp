// Names for StatusCode values and Status::to_string.
#include "ane_bridge/status.h"

namespace anelm::ane {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kInvalidMILProgram:
      return "InvalidMILProgram";
    case StatusCode::kCompileFailed:
      return "ANECCompile() FAILED";
    case StatusCode::kBudgetExhausted:
      return "CompileBudgetExhausted";
    case StatusCode::kEvalFailed:
      return "EvaluateFailed";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kIoError:
      return "IoError";
    case StatusCode::kReleased:
      return "Released";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace anelm::ane
