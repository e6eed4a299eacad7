// Text -> id lookup shared by the tokenizer models; heterogeneous so string_view keys need no copy.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace anelm::tok {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using TokenIndex = std::unordered_map<std::string, int, StringHash, std::equal_to<>>;

inline int find_token(const TokenIndex& index, std::string_view text) {
  const auto it = index.find(text);
  return it == index.end() ? -1 : it->second;
}

}  // namespace anelm::tok
