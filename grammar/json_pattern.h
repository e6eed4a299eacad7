// Internal: JSON Schema `pattern` (an ECMA-262 regex subset) as GBNF for a JSON string literal.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "grammar/grammar.h"

namespace anelm::grammar {

// A regex feature the converter does not support, or a malformed regex; the message says which.
struct PatternError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A GBNF expression matching the JSON string literals (quotes included) whose decoded text the
// regex matches (JSON Schema semantics: unanchored unless ^ / $ are given). Supported: literals,
// escapes (\d \w \s \D \W \S \n \t \r \f \v \xHH \uHHHH and escaped metacharacters), [classes]
// with ranges and negation, `.`, groups ( ), (?: ), named groups, alternation |, quantifiers
// ? * + {m} {m,} {m,n} (lazy forms too), ^ and $ at the start / end of a top-level alternative.
// Not supported (PatternError): lookaround, backreferences, \b, anchors elsewhere.
// A generated string always needs escaping only as JSON requires; control characters other than
// \n \r \t are never produced.
std::string pattern_gbnf(SchemaConverter& out, std::string_view pattern);

}  // namespace anelm::grammar
