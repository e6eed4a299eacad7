// Internal: GBNF for decimal integers within bounds, for JSON Schema minimum / maximum.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace anelm::grammar {

// Digits allowed for an integer with no upper bound (matches the plain integer rule), so a model
// cannot emit digits forever.
inline constexpr int kMaxIntegerDigits = 16;

// Integer bounds, exact: JSON Schema bounds up to the 64-bit limits (int64 min .. uint64 max) and
// one past them, so that an exclusive bound never overflows. Never a double.
using IntBound = __int128;

// A GBNF expression (parenthesised) matching exactly the canonical decimal forms of the integers in
// [lo, hi] (absent bound = unbounded): no leading zeros, no "+", no "-0". Requires lo <= hi and
// |lo|, |hi| < 10^30.
std::string int_range_gbnf(std::optional<IntBound> lo, std::optional<IntBound> hi);

// Decimal text of v (std::to_string has no __int128 overload).
std::string int_bound_text(IntBound v);

}  // namespace anelm::grammar
