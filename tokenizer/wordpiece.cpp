// WordPiece following llama.cpp's llm_tokenizer_wpm_session step for step so ids match: per word,
// from each byte position take the longest vocabulary piece; if some position has none, the whole
// word becomes [UNK].
#include "tokenizer/wordpiece.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace anelm::tok {
namespace {

constexpr std::string_view kWordPrefix = "\xE2\x96\x81";  // "▁"

}  // namespace

std::vector<std::string> wordpiece_words(std::string_view text, bool lowercase,
                                         bool strip_accents) {
  std::vector<std::string> words(1);
  auto end_word = [&] {
    if (!words.back().empty()) words.emplace_back();
  };
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 1;
    uint32_t cp = unicode::decode_lenient_at(text, pos, &len);
    pos += len;
    // llama.cpp throws on values past U+10FFFF when re-encoding them; here they vanish as U+FFFD.
    if (cp > 0x10FFFF) continue;
    if (strip_accents) cp = unicode::nfd_first(cp);
    const uint8_t flags = unicode::category_flags(cp);
    if (flags & unicode::kIsWhitespace) {
      end_word();
      continue;
    }
    if (cp == 0 || cp == unicode::kReplacement || (flags & unicode::kIsControl)) continue;
    if (strip_accents && (flags & unicode::kIsAccentMark)) continue;
    const uint32_t out = lowercase ? unicode::to_lower(cp) : cp;
    if ((flags & unicode::kIsPunctuation) || (cp < 0x7F && (flags & unicode::kIsSymbol)) ||
        unicode::is_cjk_ideograph(cp)) {
      end_word();
      unicode::append_utf8(words.back(), out);
      words.emplace_back();
    } else {
      unicode::append_utf8(words.back(), out);
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

WordPieceEncoder::WordPieceEncoder(const VocabData& vocab, const TokenIndex& index)
    : index_(index),
      unk_id_(vocab.unk_id),
      max_token_len_(0),
      lowercase_(vocab.normalize_lowercase),
      strip_accents_(vocab.normalize_strip_accents) {
  for (const std::string& t : vocab.tokens) max_token_len_ = std::max(max_token_len_, t.size());
}

void WordPieceEncoder::encode(std::string_view text, std::vector<int>& out) const {
  std::string buf;
  for (const std::string& word : wordpiece_words(text, lowercase_, strip_accents_)) {
    encode_word(word, buf, out);
  }
}

void WordPieceEncoder::encode_word(std::string_view word, std::string& buf,
                                   std::vector<int>& out) const {
  if (word.empty()) return;
  buf.assign(kWordPrefix);
  buf.append(word);
  const std::string_view w(buf);
  const size_t start = out.size();
  // Bounded: n positions times at most max_token_len_ lookups each.
  for (size_t i = 0; i < w.size();) {
    size_t j = std::min(w.size(), i + max_token_len_);
    int id = -1;
    for (; j > i; --j) {
      id = find_token(index_, w.substr(i, j - i));
      if (id >= 0) break;
    }
    if (id < 0) {  // a position nothing matches: the word's pieces so far are discarded
      out.resize(start);
      break;
    }
    out.push_back(id);
    i = j;
  }
  // llama.cpp pushes its null token when the vocabulary has no [UNK]; -1 is never returned here.
  if (out.size() == start && unk_id_ >= 0) out.push_back(unk_id_);
}

}  // namespace anelm::tok
