// SentencePiece BPE, following llama.cpp's llm_tokenizer_spm_session step for step so ids match:
// split into UTF-8 characters, repeatedly merge the adjacent pair whose concatenation is the
// highest-scoring token (ties: leftmost), then re-segment any symbol that is not a token through
// the recorded merges, and emit <0xNN> byte tokens for what is left.
#include "tokenizer/spm.h"

#include <map>
#include <queue>
#include <string>

#include "tokenizer/unicode.h"

namespace anelm::tok {
namespace {

struct Symbol {
  const char* text;
  size_t n;        // 0 once merged into its left neighbour
  int prev, next;  // -1 at the ends
};

struct Bigram {
  int left, right;
  float score;
  size_t size;
  // Max-heap order: higher score first, then the leftmost pair.
  bool operator<(const Bigram& o) const {
    return score < o.score || (score == o.score && left > o.left);
  }
};

}  // namespace

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == ' ') out += "\xE2\x96\x81";
    else out.push_back(c);
  }
  return out;
}

SentencePieceEncoder::SentencePieceEncoder(const VocabData& vocab, const TokenIndex& index)
    : vocab_(vocab), index_(index) {}

int SentencePieceEncoder::byte_token(uint8_t b) const {
  static const char* kHex = "0123456789ABCDEF";
  const char buf[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
  int id = find_token(index_, std::string_view(buf, 6));
  if (id < 0) id = find_token(index_, std::string_view(reinterpret_cast<const char*>(&b), 1));
  return id < 0 ? vocab_.unk_id : id;
}

void SentencePieceEncoder::encode(std::string_view text, std::vector<int>& out) const {
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offs = 0; offs < text.size();) {
    const size_t n = std::min(unicode::sequence_length(static_cast<uint8_t>(text[offs])), text.size() - offs);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({text.data() + offs, n, index - 1, offs + n == text.size() ? -1 : index + 1});
    offs += n;
  }
  if (symbols.empty()) return;

  std::priority_queue<Bigram> queue;
  std::map<std::string, std::pair<int, int>, std::less<>> rev_merge;  // merged text -> its two parts
  auto try_add_bigram = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    std::string text2(symbols[left].text, symbols[left].n + symbols[right].n);
    const int id = find_token(index_, text2);
    if (id < 0 || static_cast<size_t>(id) >= vocab_.scores.size()) return;
    queue.push({left, right, vocab_.scores[id], text2.size()});
    rev_merge[std::move(text2)] = {left, right};
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add_bigram(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_add_bigram(l.prev, b.left);
    try_add_bigram(b.left, l.next);
  }

  // Recursive re-segmentation through rev_merge (a symbol text that is not itself a token).
  auto resegment = [&](auto&& self, const Symbol& s) -> void {
    const std::string_view t(s.text, s.n);
    const int id = find_token(index_, t);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    const auto it = rev_merge.find(t);
    if (it == rev_merge.end()) {
      for (size_t j = 0; j < s.n; ++j) out.push_back(byte_token(static_cast<uint8_t>(s.text[j])));
      return;
    }
    self(self, symbols[it->second.first]);
    self(self, symbols[it->second.second]);
  };
  for (int i = 0; i != -1; i = symbols[i].next) resegment(resegment, symbols[i]);
}

}  // namespace anelm::tok
