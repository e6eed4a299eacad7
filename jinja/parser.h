// Template source -> Program (lexer + parser). Throws Error ("TemplateSyntaxError: ... (line N)").
#pragma once

#include <string_view>

#include "jinja/ast.h"

namespace anelm::jinja {

// max_depth bounds the nesting of statements and expressions (the parser recurses on them).
Program parse_program(std::string_view source, int max_depth);

}  // namespace anelm::jinja
