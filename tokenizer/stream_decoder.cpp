// Incremental UTF-8 assembly over token pieces.
#include "tokenizer/stream_decoder.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace anelm::tok {
namespace {

constexpr const char* kReplacementUtf8 = "\xEF\xBF\xBD";

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Length of the valid prefix of a sequence starting at s[i] that could still become a valid
// character (0 when s[i] cannot start one). Checks the second-byte ranges of RFC 3629, so
// overlong forms and surrogates are rejected early.
size_t viable_prefix(const std::string& s, size_t i, size_t need) {
  const unsigned char lead = static_cast<unsigned char>(s[i]);
  size_t k = 1;
  for (; k < need && i + k < s.size(); ++k) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if (!is_continuation(b)) return k;
    if (k == 1) {
      if (lead == 0xE0 && b < 0xA0) return k;
      if (lead == 0xED && b > 0x9F) return k;
      if (lead == 0xF0 && b < 0x90) return k;
      if (lead == 0xF4 && b > 0x8F) return k;
    }
  }
  return k;
}

}  // namespace

std::string take_complete_utf8(std::string& bytes) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    const unsigned char lead = static_cast<unsigned char>(bytes[i]);
    size_t need = unicode::sequence_length(lead);
    if (lead < 0x80) {
      out.push_back(static_cast<char>(lead));
      ++i;
      continue;
    }
    if (need == 1 || lead < 0xC2 || lead > 0xF4) {  // stray continuation or impossible lead byte
      out += kReplacementUtf8;
      ++i;
      continue;
    }
    const size_t ok = viable_prefix(bytes, i, need);
    if (ok == need) {
      out.append(bytes, i, need);
      i += need;
    } else if (i + ok == bytes.size()) {
      break;  // may still complete: hold back
    } else {
      out += kReplacementUtf8;  // broken sequence: one U+FFFD for its valid prefix
      i += ok;
    }
  }
  bytes.erase(0, i);
  return out;
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, const std::vector<int>& context, bool skip_special,
                             std::vector<int> keep)
    : tok_(tokenizer), skip_special_(skip_special), keep_(std::move(keep)) {
  strip_space_ = context.empty() && tokenizer.vocab().kind == VocabKind::kSentencePiece &&
                 tokenizer.vocab().add_space_prefix;
}

std::string StreamDecoder::push(int id) {
  // As Tokenizer::decode: only the very first id may lose its space, and not after a BOS that
  // skip_special removes.
  const VocabData& v = tok_.vocab();
  const bool strip = strip_space_ && !(skip_special_ && v.add_bos && v.bos_id >= 0 && id == v.bos_id);
  strip_space_ = false;
  if (skip_special_ && tok_.is_special(id) && std::find(keep_.begin(), keep_.end(), id) == keep_.end()) return {};
  std::string piece = tok_.token_bytes(id);
  if (strip && !piece.empty() && piece.front() == ' ') piece.erase(0, 1);
  pending_ += piece;
  std::string out = take_complete_utf8(pending_);
  text_ += out;
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = take_complete_utf8(pending_);
  if (!pending_.empty()) out += kReplacementUtf8;  // an incomplete tail is one invalid sequence
  pending_.clear();
  text_ += out;
  return out;
}

}  // namespace anelm::tok
