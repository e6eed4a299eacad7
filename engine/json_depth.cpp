// Bracket-depth pre-scan of JSON text (see json_depth.h).
#include "engine/json_depth.h"

#include "engine/error.h"

namespace anelm::engine {

int json_nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > limit) return limit + 1;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

void check_json_depth(std::string_view text, const std::string& source, const char* what) {
  if (json_nesting_depth(text, kMaxJsonDepth) > kMaxJsonDepth) {
    throw Error(ErrorKind::kFormat, "'" + source + "': " + what + " nests deeper than " +
                                        std::to_string(kMaxJsonDepth) + " levels of arrays/objects");
  }
}

}  // namespace anelm::engine
