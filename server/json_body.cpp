// A SAX handler that builds ordered_json objects by appending, with a hash index once an object is
// large enough for a linear duplicate-key scan to matter.
#include "server/json_body.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "engine/json_depth.h"
#include "server/api_error.h"

namespace anelm::server {

namespace {

using json = nlohmann::ordered_json;
using Members = json::object_t::Container;  // ordered_map is a vector of (key, value) pairs

// Below this many keys a duplicate check scans the members; above it a hash index is built once.
constexpr size_t kIndexFrom = 16;

class LinearBuilder {
 public:
  explicit LinearBuilder(json& root) : root_(root) {}

  bool null() { place(nullptr); return true; }
  bool boolean(bool v) { place(v); return true; }
  bool number_integer(json::number_integer_t v) { place(v); return true; }
  bool number_unsigned(json::number_unsigned_t v) { place(v); return true; }
  bool number_float(json::number_float_t v, const std::string&) { place(v); return true; }
  bool string(std::string& v) { place(std::move(v)); return true; }
  bool binary(json::binary_t& v) { place(std::move(v)); return true; }

  bool start_object(std::size_t) {
    stack_.push_back({place(json::object()), {}});
    return true;
  }
  bool end_object() { stack_.pop_back(); return true; }
  bool start_array(std::size_t) {
    stack_.push_back({place(json::array()), {}});
    return true;
  }
  bool end_array() { stack_.pop_back(); return true; }

  bool key(std::string& k) {
    Frame& f = stack_.back();
    auto& members = static_cast<Members&>(f.value->get_ref<json::object_t&>());
    if (members.size() >= kIndexFrom && f.index.empty())
      for (size_t i = 0; i < members.size(); ++i) f.index.emplace(members[i].first, i);
    size_t at = members.size();
    if (!f.index.empty()) {
      if (auto it = f.index.find(k); it != f.index.end()) at = it->second;
    } else {
      for (size_t i = 0; i < members.size(); ++i)
        if (members[i].first == k) at = i;
    }
    if (at == members.size()) {
      if (!f.index.empty()) f.index.emplace(k, at);
      members.emplace_back(std::move(k), nullptr);
    }
    slot_ = &members[at].second;
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  struct Frame {
    json* value;  // stays valid: its parent does not grow while it is open
    std::unordered_map<std::string, size_t> index;
  };

  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json* top = stack_.back().value;
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    *slot_ = std::move(v);
    return slot_;
  }

  json& root_;
  std::vector<Frame> stack_;
  json* slot_ = nullptr;  // the member the last key() named
};

}  // namespace

bool parse_json_linear(std::string_view text, json& out) {
  LinearBuilder builder(out);
  if (json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true)) return true;
  out = json();
  return false;
}

json parse_json_body(std::string_view body, int max_depth) {
  // The handler and nlohmann's dump/copy recurse once per level: bound the depth first.
  if (engine::json_nesting_depth(body, max_depth) > max_depth)
    throw invalid_field("", "request body nests deeper than " + std::to_string(max_depth) + " levels");
  json j;
  if (!parse_json_linear(body, j)) throw invalid_field("", "request body is not valid JSON (or not UTF-8)");
  if (!j.is_object()) throw invalid_field("", "request body must be a JSON object");
  return j;
}

}  // namespace anelm::server
