// Status: the error type every ane_bridge call returns (no exception crosses the library boundary).
#pragma once

#include <string>
#include <utility>

namespace anelm::ane {

// Error kinds mirror what the real ANE reports (ane-programming-model.md §1.9, §7.3).
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // caller error (bad shapes, sizes, options)
  kInvalidMILProgram,  // parse or type error in the MIL text ("InvalidMILProgram")
  kCompileFailed,      // limit or whitelist violation, bad blob ("ANECCompile() FAILED")
  kBudgetExhausted,    // the per-process compile budget is spent (§1.10)
  kEvalFailed,         // evaluation error ("status=0x1d" surface/binding, "0x2" procedure index)
  kUnavailable,        // no ANE runtime on this machine / private classes missing
  kIoError,            // file system errors (cache, export)
  kReleased,           // the program was already released
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CompileFailed: conv input channels 20000 exceed the limit 16384".
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status invalid_mil(std::string m) { return {StatusCode::kInvalidMILProgram, std::move(m)}; }
inline Status compile_failed(std::string m) { return {StatusCode::kCompileFailed, std::move(m)}; }
inline Status eval_failed(std::string m) { return {StatusCode::kEvalFailed, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }

}  // namespace anelm::ane

// Propagates a non-ok Status to the caller.
#define ANE_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::anelm::ane::Status ane_status_ = (expr); \
    if (!ane_status_.ok()) return ane_status_; \
  } while (0)
