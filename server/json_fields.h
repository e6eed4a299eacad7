// Typed reads of request-body fields, shared by the OpenAI, Responses and Anthropic parsers: each
// failure is a 400 naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace anelm::server {

// "where.key", or "key" at the top level.
std::string field_path(const std::string& where, const char* key);
// The field if present and not null.
const nlohmann::ordered_json* field(const nlohmann::ordered_json& j, const char* key);
// Empty when absent and not required.
std::string get_string(const nlohmann::ordered_json& j, const char* key, const std::string& where, bool required);
bool get_bool(const nlohmann::ordered_json& j, const char* key, bool dflt, const std::string& where = "");
// An integer (or a float with no fraction) in [lo, hi], exact over the whole int64 range.
std::optional<int64_t> get_int(const nlohmann::ordered_json& j, const char* key, int64_t lo, int64_t hi);
// A finite number in [lo, hi].
std::optional<float> get_number(const nlohmann::ordered_json& j, const char* key, double lo, double hi);

}  // namespace anelm::server
