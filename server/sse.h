// Server-sent events framing: "data: <json>\n\n" events, ": comment" keep-alives, [DONE].
#pragma once

#include <string>
#include <string_view>

namespace anelm::server {

class ApiError;

std::string sse_data(std::string_view payload);      // "data: payload\n\n"
std::string sse_event(std::string_view event, std::string_view payload);  // "event: E\ndata: payload\n\n"
std::string sse_done();                              // "data: [DONE]\n\n"
std::string sse_comment(std::string_view text);      // ": text\n\n" (ignored by SSE parsers)
std::string sse_error(const ApiError& e);            // data: {"error": {...}}\n\n

}  // namespace anelm::server
