// Server-sent events framing used by the streaming endpoints.
#include "server/sse.h"

#include "server/api_error.h"

namespace anelm::server {

std::string sse_data(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  out += "data: ";
  out += payload;  // JSON payloads never contain raw newlines (dump() escapes them)
  out += "\n\n";
  return out;
}

std::string sse_event(std::string_view event, std::string_view payload) {
  std::string out = "event: ";
  out += event;  // a fixed name chosen by the serializer
  out += '\n';
  return out + sse_data(payload);
}

std::string sse_done() { return "data: [DONE]\n\n"; }

std::string sse_comment(std::string_view text) {
  std::string out = ": ";
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  out += "\n\n";
  return out;
}

std::string sse_error(const ApiError& e) { return sse_data(error_body(e)); }

}  // namespace anelm::server
