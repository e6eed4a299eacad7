// Typed field reads with errors that name the field.
#include "server/json_fields.h"

#include <cmath>

#include "server/api_error.h"

namespace anelm::server {

using json = nlohmann::ordered_json;

std::string field_path(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }

const json* field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string get_string(const json& j, const char* key, const std::string& where, bool required) {
  const json* v = field(j, key);
  const std::string path = field_path(where, key);
  if (!v) {
    if (required) throw invalid_field(path, path + " is required");
    return {};
  }
  if (!v->is_string()) throw invalid_field(path, path + " must be a string");
  return v->get<std::string>();
}

bool get_bool(const json& j, const char* key, bool dflt, const std::string& where) {
  const json* v = field(j, key);
  if (!v) return dflt;
  if (!v->is_boolean()) throw invalid_field(field_path(where, key), field_path(where, key) + " must be a boolean");
  return v->get<bool>();
}

std::optional<int64_t> get_int(const json& j, const char* key, int64_t lo, int64_t hi) {
  const json* v = field(j, key);
  if (!v) return std::nullopt;
  const std::string name = key;
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d) || std::floor(d) != d) throw invalid_field(name, name + " must be an integer");
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) throw invalid_field(name, name + " must be in " + range);
    return static_cast<int64_t>(d);
  }
  if (!v->is_number_integer()) throw invalid_field(name, name + " must be an integer");
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
    throw invalid_field(name, name + " must be at most " + std::to_string(hi));
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) throw invalid_field(name, name + " must be in " + range + ", got " + std::to_string(x));
  return x;
}

std::optional<float> get_number(const json& j, const char* key, double lo, double hi) {
  const json* v = field(j, key);
  if (!v) return std::nullopt;
  const std::string name = key;
  if (!v->is_number()) throw invalid_field(name, name + " must be a number");
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    throw invalid_field(name, name + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<float>(d);
}

}  // namespace anelm::server
