// OpenAI-shaped API errors: the exception handlers throw, its HTTP status and JSON body.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace anelm::server {

// An error a client sees: HTTP status + OpenAI error object {message, type, param, code}.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = {},
           std::string code = {}, int retry_after_s = 0)
      : std::runtime_error(message), status_(status), type_(std::move(type)),
        param_(std::move(param)), code_(std::move(code)), retry_after_s_(retry_after_s) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }    // empty: null
  const std::string& code() const { return code_; }      // empty: null
  int retry_after_s() const { return retry_after_s_; }   // 0: no Retry-After header

 private:
  int status_;
  std::string type_, param_, code_;
  int retry_after_s_;
};

// 400 invalid_request_error naming the offending field.
ApiError invalid_field(const std::string& param, const std::string& message);
// 400 context_length_exceeded.
ApiError not_found(const std::string& what);
ApiError method_not_allowed(const std::string& method, const std::string& path);
ApiError unauthorized();
ApiError queue_full(int retry_after_s);
ApiError unavailable(const std::string& message, int retry_after_s);
ApiError internal_error(const std::string& message);

// Maps any exception (ApiError, anelm::Error, std::invalid_argument, other) to an ApiError.
ApiError to_api_error(std::exception_ptr e);

// {"error": {"message", "type", "param", "code"}} as JSON text.
std::string error_body(const ApiError& e);

}  // namespace anelm::server
