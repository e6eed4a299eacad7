// Decimal ranges as digit grammars: the range is cut at zero (the negative side is the mirrored
// positive one), then by integer part: the bound's own integer parts constrain the fraction (a
// comparison of digit strings, one rule level per bound digit), those strictly between take any
// fraction, and the integer parts come from int_range_gbnf.
#include "grammar/json_number_range.h"

#include <vector>

namespace anelm::grammar {
namespace {

constexpr int kMaxFractionDigits = 16;  // as the plain number rule: a model cannot emit digits forever
const std::string kAnyDigits = "[0-9]{0," + std::to_string(kMaxFractionDigits - 1) + "}";

std::string alts(const std::vector<std::string>& a) {
  if (a.empty()) return "";
  if (a.size() == 1) return a[0];
  std::string s = "(";
  for (size_t i = 0; i < a.size(); ++i) s += (i ? " | " : "") + a[i];
  return s + ")";
}

std::string digit(char d) { return std::string("\"") + d + "\""; }
std::string digits(char lo, char hi) { return lo == hi ? digit(lo) : std::string("[") + lo + "-" + hi + "]"; }

enum class Op { kGe, kGt, kLe, kLt };

// Does the fraction 0 (no digits) satisfy `0 op 0.t`?
bool empty_ok(Op op, const std::string& t) {
  switch (op) {
    case Op::kGe: return t.empty();
    case Op::kGt: return false;
    case Op::kLe: return true;
    case Op::kLt: return !t.empty();
  }
  return false;
}

// Non-empty digit strings f with 0.f op 0.t ("" when there are none). t has no trailing zeros.
std::string one_side(Op op, const std::string& t) {
  if (t.empty()) {
    switch (op) {
      case Op::kGe: return "[0-9] " + kAnyDigits;
      case Op::kGt: return "\"0\"{0,15} [1-9] " + kAnyDigits;
      case Op::kLe: return "\"0\"{1,16}";
      case Op::kLt: return "";
    }
  }
  const char t1 = t[0];
  const std::string rest = t.substr(1);
  std::vector<std::string> a;
  const bool up = op == Op::kGe || op == Op::kGt;
  if (up && t1 < '9') a.push_back(digits(static_cast<char>(t1 + 1), '9') + " " + kAnyDigits);
  if (!up && t1 > '0') a.push_back(digits('0', static_cast<char>(t1 - 1)) + " " + kAnyDigits);
  // First digit equal: the rest decides (it may be empty when that satisfies the comparison).
  const std::string tail = one_side(op, rest);
  if (empty_ok(op, rest)) a.push_back(digit(t1) + (tail.empty() ? "" : " ( " + tail + " )?"));
  else if (!tail.empty()) a.push_back(digit(t1) + " " + tail);
  return alts(a);
}

// Non-empty digit strings f with 0.f lop 0.l and 0.f hop 0.h, where 0.l <= 0.h.
std::string between(Op lop, const std::string& l, Op hop, const std::string& h) {
  if (l.empty() && lop == Op::kGe) return one_side(hop, h);
  if (h.empty()) return "";  // f <= 0 leaves only zeros, which no lower bound left here admits
  const char l1 = l.empty() ? '0' : l[0], h1 = h[0];
  const std::string lr = l.empty() ? "" : l.substr(1), hr = h.substr(1);
  std::vector<std::string> a;
  auto with_tail = [&](char d, bool may_be_empty, const std::string& tail) {
    if (may_be_empty) a.push_back(digit(d) + (tail.empty() ? "" : " ( " + tail + " )?"));
    else if (!tail.empty()) a.push_back(digit(d) + " " + tail);
  };
  if (l1 == h1) {
    with_tail(l1, empty_ok(lop, lr) && empty_ok(hop, hr), between(lop, lr, hop, hr));
    return alts(a);
  }
  with_tail(l1, empty_ok(lop, lr), one_side(lop, lr));
  if (l1 + 1 <= h1 - 1) a.push_back(digits(static_cast<char>(l1 + 1), static_cast<char>(h1 - 1)) + " " + kAnyDigits);
  with_tail(h1, empty_ok(hop, hr), one_side(hop, hr));
  return alts(a);
}

// The fraction part ("" or "." digits) given the digit-string grammar and whether no fraction is allowed.
std::optional<std::string> fraction(const std::string& nonempty, bool none_ok) {
  if (nonempty.empty()) return none_ok ? std::optional<std::string>("") : std::nullopt;
  return none_ok ? "( \".\" " + nonempty + " )?" : "\".\" " + nonempty;
}

int cmp(const Decimal& a, const Decimal& b) {  // both non-negative
  if (a.integer != b.integer) return a.integer < b.integer ? -1 : 1;
  return a.fraction == b.fraction ? 0 : a.fraction < b.fraction ? -1 : 1;  // no trailing zeros: lexicographic
}

// Non-negative numbers x with lo <= x (or <) and, when hi is given, x <= hi (or <).
std::optional<std::string> non_negative(const DecimalBound& lo, const std::optional<DecimalBound>& hi) {
  const Op lop = lo.exclusive ? Op::kGt : Op::kGe;
  const Op hop = hi && hi->exclusive ? Op::kLt : Op::kLe;
  if (hi) {
    const int c = cmp(lo.value, hi->value);
    if (c > 0 || (c == 0 && (lo.exclusive || hi->exclusive))) return std::nullopt;
  }
  const IntBound a = lo.value.integer;
  std::vector<std::string> out;
  auto add = [&](const std::string& integer, const std::optional<std::string>& frac) {
    if (frac) out.push_back(integer + (frac->empty() ? "" : " " + *frac));
  };
  const std::string a_text = "\"" + int_bound_text(a) + "\"";
  if (hi && hi->value.integer == a) {
    add(a_text, fraction(between(lop, lo.value.fraction, hop, hi->value.fraction),
                         empty_ok(lop, lo.value.fraction) && empty_ok(hop, hi->value.fraction)));
    return alts(out);
  }
  add(a_text, fraction(one_side(lop, lo.value.fraction), empty_ok(lop, lo.value.fraction)));
  const std::optional<IntBound> top = hi ? std::optional<IntBound>(hi->value.integer - 1) : std::nullopt;
  if (!top || *top >= a + 1) add(int_range_gbnf(a + 1, top), fraction("[0-9] " + kAnyDigits, true));
  if (hi) add("\"" + int_bound_text(hi->value.integer) + "\"", fraction(one_side(hop, hi->value.fraction), empty_ok(hop, hi->value.fraction)));
  if (out.empty()) return std::nullopt;
  return alts(out);
}

}  // namespace

std::optional<Decimal> parse_decimal(const std::string& s) {
  size_t i = 0;
  Decimal d;
  const bool neg = i < s.size() && s[i] == '-';
  if (neg) ++i;
  std::string int_digits, frac_digits;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') int_digits += s[i++];
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') frac_digits += s[i++];
  }
  long exp = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    const bool eneg = i < s.size() && s[i] == '-';
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (i == s.size()) return std::nullopt;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      exp = exp * 10 + (s[i++] - '0');
      if (exp > 1000) return std::nullopt;
    }
    if (eneg) exp = -exp;
  }
  if (i != s.size() || int_digits.empty()) return std::nullopt;
  // Shift the decimal point by the exponent.
  std::string all = int_digits + frac_digits;
  long point = static_cast<long>(int_digits.size()) + exp;
  if (point < 0) all = std::string(static_cast<size_t>(-point), '0') + all, point = 0;
  if (point > static_cast<long>(all.size())) all += std::string(static_cast<size_t>(point) - all.size(), '0');
  std::string ip = all.substr(0, static_cast<size_t>(point)), fp = all.substr(static_cast<size_t>(point));
  ip.erase(0, std::min(ip.find_first_not_of('0'), ip.size()));
  while (!fp.empty() && fp.back() == '0') fp.pop_back();
  if (ip.size() >= 28 || fp.size() > 30) return std::nullopt;
  for (char c : ip) d.integer = d.integer * 10 + (c - '0');
  d.fraction = fp;
  d.negative = neg && (d.integer != 0 || !fp.empty());
  return d;
}

std::optional<std::string> number_range_gbnf(const std::optional<DecimalBound>& lo, const std::optional<DecimalBound>& hi) {
  const DecimalBound zero_in{Decimal{}, false}, zero_ex{Decimal{}, true};
  auto positive = [](const DecimalBound& b) { return DecimalBound{Decimal{false, b.value.integer, b.value.fraction}, b.exclusive}; };
  std::vector<std::string> out;
  // x >= 0: from lo (when lo >= 0) or 0, up to hi (when hi >= 0 ...; a negative hi leaves no room).
  const bool hi_negative = hi && hi->value.negative;
  const bool hi_zero_excl = hi && !hi->value.negative && hi->value.integer == 0 && hi->value.fraction.empty() && hi->exclusive;
  if (!hi_negative && !hi_zero_excl) {
    const DecimalBound from = lo && !lo->value.negative ? *lo : zero_in;
    if (auto g = non_negative(from, hi)) out.push_back(*g);
  }
  // x < 0: "-" then y = -x in (max(-hi, 0), -lo]; y > 0 always (zero belongs to the other side).
  if (!lo || lo->value.negative) {
    const DecimalBound from = hi_negative ? positive(*hi) : zero_ex;
    std::optional<DecimalBound> to;
    if (lo) to = positive(*lo);
    if (auto g = non_negative(from, to)) out.push_back("\"-\" " + *g);
  }
  if (out.empty()) return std::nullopt;
  std::string s = "(";
  for (size_t i = 0; i < out.size(); ++i) s += (i ? " | " : "") + out[i];
  return s + ")";
}

}  // namespace anelm::grammar
