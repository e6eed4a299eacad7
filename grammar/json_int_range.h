// Internal: GBNF for decimal integers within bounds, for JSON Schema minimum / maximum.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace anelm::grammar {

// Digits allowed for an integer with no upper bound (matches the plain integer rule), so a model
// cannot emit digits forever.
inline constexpr int kMaxIntegerDigits = 16;

// A GBNF expression (parenthesised) matching exactly the canonical decimal forms of the integers in
// [lo, hi] (absent bound = unbounded): no leading zeros, no "+", no "-0". Requires lo <= hi.
std::string int_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace anelm::grammar
