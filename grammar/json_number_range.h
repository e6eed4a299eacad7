// Internal: GBNF for JSON numbers within decimal bounds (JSON Schema minimum / maximum /
// exclusiveMinimum / exclusiveMaximum on type "number"), exact in decimal, never via double.
#pragma once

#include <optional>
#include <string>

#include "grammar/json_int_range.h"

namespace anelm::grammar {

// An exact decimal: (negative ? -1 : 1) * (integer + 0.fraction); fraction has no trailing zeros,
// and zero is never negative.
struct Decimal {
  bool negative = false;
  IntBound integer = 0;
  std::string fraction;
};

// The exact value of a JSON number's text ("12.5", "-3", "1e-3", "2.50E1"); nullopt when it has
// 28 or more integer digits or more than 30 fraction digits (the grammar would not be worth it).
std::optional<Decimal> parse_decimal(const std::string& json_number_text);

struct DecimalBound {
  Decimal value;
  bool exclusive = false;
};

// A GBNF expression (parenthesised) matching the JSON numbers in the range without an exponent:
// an integer part as JSON writes it, then optionally "." and 1-16 digits (trailing zeros allowed,
// "-0" not). nullopt when the range holds no number.
std::optional<std::string> number_range_gbnf(const std::optional<DecimalBound>& lo, const std::optional<DecimalBound>& hi);

}  // namespace anelm::grammar
