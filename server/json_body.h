// Parses an untrusted JSON request body: bounded nesting, time linear in its size.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace anelm::server {

// The body as an ordered_json object (keys in the client's order: templates print tools and
// arguments as written). nlohmann's own parser inserts each key with a linear scan of the object's
// earlier keys, so a 16k-property schema cost 2 s and 64k keys 47 s; this one indexes large objects
// and stays linear. A repeated key keeps its first position and its last value, as nlohmann and
// Python do. Throws invalid_field (param "") when the body nests deeper than `max_depth`, is not
// valid UTF-8 JSON, or is not an object.
nlohmann::ordered_json parse_json_body(std::string_view body, int max_depth);

// The same parse for any JSON text we stored ourselves; false when it is not valid JSON.
bool parse_json_linear(std::string_view text, nlohmann::ordered_json& out);

}  // namespace anelm::server
