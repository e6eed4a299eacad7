// The chat page at "/" (server/webui/): its files, compiled in by cmake/embed_webui.cmake, and the
// handler that serves them with their media type, a Content-Security-Policy and an ETag.
#pragma once

#include <span>
#include <string_view>

#include "server/http_types.h"
#include "server/server_context.h"

namespace anelm::server {

// One embedded file of server/webui/. Defined in the generated webui_files.cpp.
struct WebuiFile {
  std::string_view name;  // file name in server/webui/ ("index.html", "app.js")
  std::string_view body;  // its bytes
  std::string_view etag;  // quoted strong validator: "\"<sha256 prefix>\""
};
std::span<const WebuiFile> webui_files();

// The Content-Type of a web UI file from its extension ("application/octet-stream" when unknown).
std::string_view webui_content_type(std::string_view name);

// GET / (index.html) and GET /webui/NAME. 404 when --no-webui is set or NAME is not embedded;
// 304 when If-None-Match carries the file's ETag.
HttpResponse handle_webui(ServerContext& ctx, const HttpRequest& req);

}  // namespace anelm::server
