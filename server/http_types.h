// Library-neutral HTTP request/response types: handlers see these, never httplib.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace anelm::server {

// What a request did, filled by its handler and logged once when the response is complete.
struct RequestLog {
  int prompt_tokens = -1;          // -1: not a generation
  int completion_tokens = 0;
  int cached_tokens = 0;
  double ttft_ms = -1;             // time to first token (from arrival)
  double decode_tok_s = 0;
  std::string finish;              // finish reasons of the choices, comma-separated
  std::string error;               // why a 4xx/5xx was answered
};

struct HttpRequest {
  std::string method;                         // "GET", "POST", ...
  std::string path;                           // normalised: repeated slashes collapsed
  std::map<std::string, std::string> headers; // lower-cased names
  std::string body;
  // True once the client has hung up (polled while a non-streamed response is being generated).
  std::function<bool()> client_gone;
  std::string id;                             // x-request-id ("req-...")
  std::shared_ptr<RequestLog> log = std::make_shared<RequestLog>();

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Where a streamed body goes. write() returns false once the client is gone.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  virtual bool write(std::string_view data) = 0;
  virtual bool is_writable() = 0;  // false when the peer closed the connection
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is streamed (chunked): called once on the HTTP thread with the sink.
  std::function<void(StreamSink&)> stream;
};

}  // namespace anelm::server
