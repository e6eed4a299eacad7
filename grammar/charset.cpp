// UTF-8 matching of code point sets, one byte at a time.
#include <algorithm>

#include "grammar/rules.h"

namespace anelm::grammar {
namespace {

// The code points a UTF-8 sequence of `len` bytes may encode (shorter forms would be overlong).
constexpr uint32_t kLenLo[5] = {0, 0, 0x80, 0x800, 0x10000};
constexpr uint32_t kLenHi[5] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

// Partial state layout: decoded bits << 4 | total length << 2 | bytes still due (1..3, so the
// state is never 0).
uint32_t pack(uint32_t bits, uint32_t len, uint32_t due) { return bits << 4 | len << 2 | due; }

}  // namespace

CharSet::CharSet(std::vector<CodeRange> ranges) {
  std::vector<CodeRange> split;
  for (auto r : ranges) {  // surrogates are not scalar values; UTF-8 cannot carry them
    if (r.lo > r.hi) continue;
    r.hi = std::min<uint32_t>(r.hi, 0x10FFFF);
    if (r.lo < 0xD800 && r.hi > 0xDFFF) {
      split.push_back({r.lo, 0xD7FF});
      split.push_back({0xE000, r.hi});
    } else if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      split.push_back(r);
    } else if (r.lo < 0xD800) {
      split.push_back({r.lo, 0xD7FF});
    } else if (r.hi > 0xDFFF) {
      split.push_back({0xE000, r.hi});
    }
  }
  std::sort(split.begin(), split.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
  for (auto r : split) {
    if (!ranges_.empty() && r.lo <= ranges_.back().hi + 1) {
      ranges_.back().hi = std::max(ranges_.back().hi, r.hi);
    } else {
      ranges_.push_back(r);
    }
  }
}

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), lo,
                             [](CodeRange r, uint32_t v) { return r.hi < v; });
  return it != ranges_.end() && it->lo <= hi;
}

uint32_t CharSet::step(uint32_t state, uint8_t byte) const {
  uint32_t bits, len, due;
  if (state == 0) {
    if (byte < 0x80) return contains(byte) ? 0 : kReject;
    if (byte < 0xC2 || byte > 0xF4) return kReject;  // continuation, overlong lead, or too large
    len = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2;
    bits = byte & (0x7F >> len);
    due = len - 1;
  } else {
    if ((byte & 0xC0) != 0x80) return kReject;
    bits = (state >> 4) << 6 | (byte & 0x3F);
    len = (state >> 2) & 3;
    len = len == 0 ? 4 : len;  // 4 does not fit two bits; stored as 0
    due = (state & 3) - 1;
  }
  // The code points still reachable from this prefix must meet the set.
  uint32_t lo = bits << (6 * due), hi = lo | ((1u << (6 * due)) - 1);
  lo = std::max(lo, kLenLo[len]);
  hi = std::min(hi, kLenHi[len]);
  if (lo > hi || !intersects(lo, hi)) return kReject;
  return due == 0 ? 0 : pack(bits, len & 3, due);
}

}  // namespace anelm::grammar
