// A cheap pre-scan of JSON text that bounds nesting before a recursive parser or printer sees it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace anelm::engine {

// Deepest nesting of config, safetensors header and shard-index JSON we accept. Real files nest
// fewer than 8 levels; nlohmann::json's dump(), copy and comparison recurse once per level, so a
// 1 MB header of 100k levels would overflow the stack.
inline constexpr int kMaxJsonDepth = 64;

// Largest bracket depth of `text` (strings and escapes skipped; the text need not be valid JSON).
// Stops scanning and returns limit + 1 as soon as the depth exceeds `limit`.
int json_nesting_depth(std::string_view text, int limit = kMaxJsonDepth);

// Throws anelm::Error(kFormat) "'<source>': <what> nests deeper than 64 levels" when it does.
void check_json_depth(std::string_view text, const std::string& source, const char* what);

}  // namespace anelm::engine
