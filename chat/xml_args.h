// Argument values of the Qwen XML tool-call syntax (chat_format.h, "kQwenXml arguments"): which
// JSON types a parameter's schema allows, and a raw value written between <parameter=...> tags as
// JSON text. The model writes values as bare text, so the type can only come from the tool's
// schema. Internal: not part of the public API.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace anelm::chat::detail {

// Bits of the JSON types a schema allows; 0 means unknown (no schema, or none that names a type).
enum XmlTypeBits : unsigned {
  kXmlString = 1,
  kXmlNumber = 2,  // "number" and "integer"
  kXmlBool = 4,
  kXmlNull = 8,
  kXmlObject = 16,
  kXmlArray = 32,
};

// The "properties" object of function `name` in an OpenAI tools array (entries
// {"type":"function","function":{...}} or bare function objects), or null.
const nlohmann::ordered_json* xml_function_properties(const nlohmann::ordered_json* tools,
                                                      std::string_view name);

// The types parameter `param` may take per `properties` (null: unknown).
unsigned xml_param_types(const nlohmann::ordered_json* properties, std::string_view param);

// The types of one schema: "type" (a name or a list), else the union over anyOf / oneOf members,
// else the types of its enum / const values. 0 when none of these says.
unsigned xml_schema_types(const nlohmann::ordered_json& schema);

// A value of these types is the raw text as a JSON string, whatever it looks like.
inline bool xml_string_only(unsigned types) { return types == kXmlString; }

// A complete raw value (its framing newlines already trimmed) as JSON text: the trimmed text when
// it is JSON of an allowed type (any type when `types` is 0; True/False/None accepted for boolean
// and null), else the raw text as a JSON string.
std::string xml_value_json(std::string_view raw, unsigned types);

// `raw` escaped as the inside of a JSON string (no quotes added).
void append_json_escaped(std::string& out, std::string_view raw);
std::string json_quoted(std::string_view raw);

}  // namespace anelm::chat::detail
