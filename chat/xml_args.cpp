// Typing of Qwen XML argument values by the tools' JSON schemas (xml_args.h).
#include "chat/xml_args.h"

#include "chat/chat_format.h"
#include "chat/json_text.h"

namespace anelm::chat::detail {
namespace {

using json = nlohmann::ordered_json;

// Bounds the walk through nested anyOf / oneOf (a schema is request input).
constexpr int kMaxSchemaDepth = 8;

unsigned type_bit(std::string_view name) {
  if (name == "string") return kXmlString;
  if (name == "number" || name == "integer") return kXmlNumber;
  if (name == "boolean") return kXmlBool;
  if (name == "null") return kXmlNull;
  if (name == "object") return kXmlObject;
  if (name == "array") return kXmlArray;
  return 0;
}

unsigned value_bit(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return kXmlString;
    case json::value_t::boolean:
      return kXmlBool;
    case json::value_t::null:
      return kXmlNull;
    case json::value_t::object:
      return kXmlObject;
    case json::value_t::array:
      return kXmlArray;
    default:
      return kXmlNumber;
  }
}

unsigned schema_types(const json& schema, int depth) {
  if (!schema.is_object() || depth > kMaxSchemaDepth) return 0;
  if (auto t = schema.find("type"); t != schema.end()) {
    unsigned bits = 0;
    if (t->is_string()) bits = type_bit(t->get_ref<const std::string&>());
    if (t->is_array())
      for (const json& n : *t)
        if (n.is_string()) bits |= type_bit(n.get_ref<const std::string&>());
    if (bits != 0) return bits;
  }
  unsigned bits = 0;
  for (const char* key : {"anyOf", "oneOf"}) {
    auto alts = schema.find(key);
    if (alts == schema.end() || !alts->is_array()) continue;
    for (const json& alt : *alts) {
      const unsigned b = schema_types(alt, depth + 1);
      if (b == 0) return 0;  // one untyped alternative: anything goes
      bits |= b;
    }
  }
  if (bits != 0) return bits;
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array())
    for (const json& v : *e) bits |= value_bit(v);
  if (auto c = schema.find("const"); c != schema.end()) bits |= value_bit(*c);
  return bits;
}

// The JSON type of valid JSON text (first byte after whitespace).
unsigned json_text_bit(std::string_view t) {
  switch (t.front()) {
    case '{':
      return kXmlObject;
    case '[':
      return kXmlArray;
    case '"':
      return kXmlString;
    case 't':
    case 'f':
      return kXmlBool;
    case 'n':
      return kXmlNull;
    default:
      return kXmlNumber;
  }
}

std::string_view trim_ws(std::string_view s) {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

const json* xml_function_properties(const json* tools, std::string_view name) {
  if (!tools || !tools->is_array()) return nullptr;
  for (const json& tool : *tools) {
    if (!tool.is_object()) continue;
    auto f = tool.find("function");
    const json& fn = (f != tool.end() && f->is_object()) ? *f : tool;
    auto n = fn.find("name");
    if (n == fn.end() || !n->is_string() || n->get_ref<const std::string&>() != name) continue;
    auto params = fn.find("parameters");
    if (params == fn.end() || !params->is_object()) return nullptr;
    auto props = params->find("properties");
    return props != params->end() && props->is_object() ? &*props : nullptr;
  }
  return nullptr;
}

unsigned xml_param_types(const json* properties, std::string_view param) {
  if (!properties) return 0;
  auto it = properties->find(std::string(param));
  return it == properties->end() ? 0 : schema_types(*it, 0);
}

unsigned xml_schema_types(const json& schema) { return schema_types(schema, 0); }

std::string xml_value_json(std::string_view raw, unsigned types) {
  if (xml_string_only(types)) return json_quoted(raw);
  const std::string_view t = trim_ws(raw);
  if (t.empty()) return json_quoted(raw);
  // The templates render a Python True / False / None with `| string`; models copy that.
  if ((types & kXmlBool) && (t == "True" || t == "False")) return t == "True" ? "true" : "false";
  if ((types & kXmlNull) && t == "None") return "null";
  if (is_json_text(t, kMaxJsonDepth + 1)) {
    const unsigned kind = json_text_bit(t);
    // With string among the allowed types, a JSON string literal is still the raw text: only the
    // other types are tried first (the text "\"a\"" for a string|null parameter keeps its quotes).
    const bool string_literal_ok = types == 0;
    if ((kind == kXmlString && string_literal_ok) || (kind != kXmlString && (types == 0 || (types & kind))))
      return std::string(t);
  }
  return json_quoted(raw);
}

void append_json_escaped(std::string& out, std::string_view raw) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char ch : raw) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
}

std::string json_quoted(std::string_view raw) {
  std::string out = "\"";
  append_json_escaped(out, raw);
  out += '"';
  return out;
}

}  // namespace anelm::chat::detail
