// Internal to the filters: the filter signature, argument helpers, and the text filters' table part.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "jinja/builtins.h"

namespace anelm::jinja {

using FilterFn = Value (*)(Context&, const Value&, Args&, Kwargs&);

// An integer argument (bool counts; None or absent: dflt); TypeError naming `what` otherwise.
int64_t int_arg(Context& ctx, const Value* v, int64_t dflt, const char* what);
bool bool_arg(const Value* v, bool dflt);

// escape/e/forceescape, indent, wordcount, center, truncate, format, striptags (filters_text.cpp).
void add_text_filters(std::map<std::string, FilterFn>& table);

}  // namespace anelm::jinja
