// OpenAI-shaped API errors: constructors for each status and the one JSON error serialiser.
#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include "engine/error.h"

namespace anelm::server {

using nlohmann::json;

ApiError invalid_field(const std::string& param, const std::string& message) {
  return ApiError(400, "invalid_request_error", message, param);
}

ApiError not_found(const std::string& what) {
  return ApiError(404, "not_found_error", what + " not found");
}

ApiError method_not_allowed(const std::string& method, const std::string& path) {
  return ApiError(405, "invalid_request_error", "method " + method + " not allowed on " + path);
}

ApiError unauthorized() {
  return ApiError(401, "authentication_error", "invalid or missing API key", {}, "invalid_api_key");
}

ApiError queue_full(int retry_after_s) {
  return ApiError(429, "rate_limit_error", "the request queue is full; retry later", {}, {},
                  retry_after_s);
}

ApiError unavailable(const std::string& message, int retry_after_s) {
  return ApiError(503, "unavailable_error", message, {}, {}, retry_after_s);
}

ApiError internal_error(const std::string& message) {
  return ApiError(500, "server_error", message);
}

static ApiError from_anelm_error(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kUnsupported:
      return ApiError(400, "invalid_request_error", e.what());
    case ErrorKind::kContextLength:
      return ApiError(400, "invalid_request_error", e.what(), "max_tokens", "context_length_exceeded");
    case ErrorKind::kNotFound:
      return ApiError(404, "not_found_error", e.what());
    case ErrorKind::kResourceExhausted:
      return ApiError(503, "unavailable_error", e.what(), {}, {}, 1);
    case ErrorKind::kCancelled:
      return ApiError(503, "unavailable_error", e.what(), {}, {}, 1);
    default:
      return internal_error(e.what());
  }
}

ApiError to_api_error(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const ApiError& a) {
    return a;
  } catch (const Error& a) {
    return from_anelm_error(a);
  } catch (const std::invalid_argument& a) {
    return ApiError(400, "invalid_request_error", a.what());
  } catch (const std::exception& a) {
    return internal_error(std::string("internal error: ") + a.what());
  } catch (...) {
    return internal_error("internal error: unknown exception");
  }
}

std::string error_body(const ApiError& e) {
  json err = {{"message", e.what()},
              {"type", e.type()},
              {"param", e.param().empty() ? json(nullptr) : json(e.param())},
              {"code", e.code().empty() ? json(nullptr) : json(e.code())}};
  return json{{"error", err}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace anelm::server
