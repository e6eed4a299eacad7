// Template source -> a flat token stream: text chunks with jinja2's whitespace rules applied
// (trim_blocks, lstrip_blocks, "-" and "+" markers, raw blocks) and the tokens inside tags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace anelm::jinja {

struct Token {
  enum class Kind {
    kText,         // template data between tags
    kVarBegin,     // {{
    kVarEnd,       // }}
    kBlockBegin,   // {%
    kBlockEnd,     // %}
    kName,
    kString,       // text holds the decoded value
    kInteger,
    kFloat,
    kOperator,     // text holds the operator
    kEnd,
  };
  Kind kind;
  std::string text;
  int line = 1;
};

// Throws Error ("TemplateSyntaxError: ... (line N)") for unterminated tags, strings or comments.
std::vector<Token> tokenize(std::string_view source);

}  // namespace anelm::jinja
