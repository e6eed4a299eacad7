// Error type thrown at load and request boundaries; the message names file, tensor, field and values.
#pragma once

#include <stdexcept>
#include <string>

namespace anelm {

enum class ErrorKind {
  kInvalidArgument,    // bad user input (flag, request field, value)
  kContextLength,      // a request does not fit the context (prompt + max_tokens)
  kNotFound,           // file, tensor or key missing
  kIo,                 // read/map/write failure
  kFormat,             // a file is malformed (bad magic, offsets past the end, shape mismatch)
  kUnsupported,        // valid but not handled (dtype, architecture)
  kResourceExhausted,  // budget or capacity exceeded (context, compile budget, queue)
  kCancelled,          // the caller asked to stop
  kInternal,           // a bug of ours
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace anelm
