// Template source -> Program (lexer + parser). Throws Error ("TemplateSyntaxError: ... (line N)").
#pragma once

#include <string_view>

#include "jinja/ast.h"

namespace anelm::jinja {

// max_depth bounds the nesting of statements and expressions (the parser recurses on them).
Program parse_program(std::string_view source, int max_depth);

// Throws Error ("TemplateAssertionError: No filter named 'x'.") for an unknown filter or test
// outside an if statement or inline if, as jinja2's compiler (parser_check.cpp).
void check_filter_and_test_names(const Program& program);

}  // namespace anelm::jinja
