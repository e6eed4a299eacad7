// Names of error kinds for logs and API error types.
#include "engine/error.h"

namespace anelm {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid_argument";
    case ErrorKind::kContextLength: return "context_length_exceeded";
    case ErrorKind::kNotFound: return "not_found";
    case ErrorKind::kIo: return "io_error";
    case ErrorKind::kFormat: return "format_error";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kResourceExhausted: return "resource_exhausted";
    case ErrorKind::kCancelled: return "cancelled";
    case ErrorKind::kInternal: return "internal_error";
  }
  return "unknown";
}

}  // namespace anelm
