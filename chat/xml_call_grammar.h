// Constrained decoding of kQwenXml calls (chat_format.h): their arguments are <parameter=...>
// elements, not a JSON payload, so the grammar is built here rather than from
// tool_call_payload_schema(). Kept apart from chat_format.h so that only the server, which owns
// the grammar, sees grammar types.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace anelm::grammar {
class SchemaConverter;
struct SchemaOptions;
}  // namespace anelm::grammar

namespace anelm::chat {

// Adds to `conv` the rules of one call, as the Qwen3.5 / Qwen3-Coder templates render it:
//   <tool_call>\n<function=NAME>\n(<parameter=P>\nVALUE\n</parameter>\n)*</function>\n</tool_call>
// with one alternative per tool of the OpenAI `tools` array (only `only_name` when non-empty).
// Parameters are those of the tool's schema, in its order; the required ones must be written, the
// others may be. VALUE follows the parameter's schema when that allows no string (a JSON value:
// number, boolean, object, ...); otherwise it is free text that cannot contain "</parameter>",
// except that a string-only parameter's enum / const allows exactly those strings and its
// minLength / maxLength bound the length in characters ("pattern" and "format" are noted as not
// enforced, like any other dropped keyword). A tool whose schema lists no properties takes any
// parameter names with free-text values.
// Returns the rule to reference: one call, or with `parallel` one or more separated by "\n".
// Throws std::invalid_argument when no tool qualifies, and what SchemaConverter throws.
std::string add_xml_call_rules(grammar::SchemaConverter& conv, const nlohmann::ordered_json& tools,
                               const std::string& only_name, bool parallel,
                               const grammar::SchemaOptions& options);

}  // namespace anelm::chat
