// Integer ranges as digit grammars: split the range by digit count, then each equal-length range
// by its leading digit, the usual construction for numeric ranges in regular languages.
#include "grammar/json_int_range.h"

#include <algorithm>
#include <vector>

namespace anelm::grammar {
namespace {

std::string join_alts(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string s = "(";
  for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : "") + alts[i];
  return s + ")";
}

std::string digit_class(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

std::string seq(const std::string& a, const std::string& b) { return b.empty() ? a : a.empty() ? b : a + " " + b; }

// Digit strings of x.size() digits between x and y (inclusive); leading zeros are fine here
// because the callers fix the first digit.
std::string same_length(const std::string& x, const std::string& y) {
  size_t n = x.size();
  if (n == 0) return "";
  if (x == y) return "\"" + x + "\"";
  if (x[0] == y[0]) return seq(digit_class(x[0], x[0]), same_length(x.substr(1), y.substr(1)));
  std::string xr = x.substr(1), yr = y.substr(1);
  std::vector<std::string> alts;
  char lo_first = x[0], hi_first = y[0];
  if (xr.find_first_not_of('0') != std::string::npos) {
    alts.push_back(seq(digit_class(x[0], x[0]), same_length(xr, std::string(n - 1, '9'))));
    ++lo_first;
  }
  std::string tail;
  if (yr.find_first_not_of('9') != std::string::npos) {
    tail = seq(digit_class(y[0], y[0]), same_length(std::string(n - 1, '0'), yr));
    --hi_first;
  }
  if (lo_first <= hi_first) alts.push_back(seq(digit_class(lo_first, hi_first), any_digits(n - 1)));
  if (!tail.empty()) alts.push_back(tail);
  return join_alts(alts);
}

using Mag = unsigned __int128;

std::string text(Mag v) {
  std::string s;
  do s += static_cast<char>('0' + static_cast<int>(v % 10)), v /= 10;
  while (v);
  return std::string(s.rbegin(), s.rend());
}

Mag pow10(size_t n) {
  Mag p = 1;
  while (n--) p *= 10;
  return p;
}

// Magnitudes in [a, b]; b absent = any number of digits up to the cap.
std::vector<std::string> magnitude_alts(Mag a, std::optional<Mag> b) {
  std::vector<std::string> alts;
  size_t la = text(a).size();
  size_t lb = b ? text(*b).size() : std::max<size_t>(la, kMaxIntegerDigits);
  for (size_t len = la; len <= lb; ++len) {
    Mag lo = len == la ? a : pow10(len - 1);
    if (!b && len > la) {  // every longer number up to the cap, in one alternative
      alts.push_back(seq("[1-9]", "[0-9]{" + std::to_string(len - 1) + "," + std::to_string(lb - 1) + "}"));
      break;
    }
    std::string hi = b && len == lb ? text(*b) : std::string(len, '9');
    alts.push_back(same_length(text(lo), hi));
  }
  return alts;
}

Mag magnitude(IntBound v) { return v < 0 ? static_cast<Mag>(-v) : static_cast<Mag>(v); }

}  // namespace

std::string int_bound_text(IntBound v) { return (v < 0 ? "-" : "") + text(magnitude(v)); }

std::string int_range_gbnf(std::optional<IntBound> lo, std::optional<IntBound> hi) {
  std::vector<std::string> alts;
  if (!lo || *lo < 0) {  // negatives: "-" and a magnitude of at least 1
    Mag mag_lo = hi && *hi < 0 ? magnitude(*hi) : 1;
    std::optional<Mag> mag_hi;
    if (lo) mag_hi = magnitude(*lo);
    for (auto& a : magnitude_alts(mag_lo, mag_hi)) alts.push_back(seq("\"-\"", a));
  }
  if (!hi || *hi >= 0) {
    Mag from = lo && *lo > 0 ? static_cast<Mag>(*lo) : 0;
    std::optional<Mag> to;
    if (hi) to = static_cast<Mag>(*hi);
    for (auto& a : magnitude_alts(from, to)) alts.push_back(a);
  }
  std::string s = "(";
  for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : "") + alts[i];
  return s + ")";
}

}  // namespace anelm::grammar
