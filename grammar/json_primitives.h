// Internal: the fixed GBNF rules for JSON texts (whitespace, strings, numbers, any value, formats).
#pragma once

#include <string>

#include "grammar/grammar.h"

namespace anelm::grammar {

// Adds the rule `name` (one of "ws", "json-value", "json-string", "json-char", "json-number",
// "json-integer", "json-boolean", "json-null", "json-object", "json-array", "json-date",
// "json-time", "json-date-time", "json-uuid", "json-email", "json-uri") and the rules it uses, if absent. Returns name.
std::string need_primitive(SchemaConverter& out, const std::string& name);

}  // namespace anelm::grammar
