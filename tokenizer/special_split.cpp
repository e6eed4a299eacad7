// Special-token partitioning in llama.cpp's order: tokens by decreasing length, each splitting all
// raw fragments left to right, so a longer token always wins over a shorter one it contains.
#include "tokenizer/special_split.h"

#include <algorithm>
#include <list>

namespace anelm::tok {

SpecialSplitter::SpecialSplitter(const VocabData& vocab) {
  for (int id = 0; id < static_cast<int>(vocab.tokens.size()); ++id) {
    const TokenType t = vocab.types[id];
    if (vocab.tokens[id].empty()) continue;
    if (t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUserDefined) {
      candidates_.push_back({id, vocab.tokens[id], t != TokenType::kUserDefined});
    }
  }
  std::stable_sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
    return a.text.size() > b.text.size();
  });
}

std::vector<Fragment> SpecialSplitter::split(std::string_view text, bool parse_special) const {
  std::list<Fragment> frags;
  if (!text.empty()) frags.push_back({-1, text});
  for (const Candidate& c : candidates_) {
    if (c.needs_parse_special && !parse_special) continue;
    for (auto it = frags.begin(); it != frags.end(); ++it) {
      if (it->id >= 0) continue;
      const std::string_view raw = it->text;
      size_t pos = raw.find(c.text);
      if (pos == std::string_view::npos) continue;
      size_t start = 0;
      auto insert_at = std::next(it);
      while (pos != std::string_view::npos) {
        if (pos > start) frags.insert(insert_at, {-1, raw.substr(start, pos - start)});
        frags.insert(insert_at, {c.id, {}});
        start = pos + c.text.size();
        pos = raw.find(c.text, start);
      }
      if (start < raw.size()) frags.insert(insert_at, {-1, raw.substr(start)});
      const auto last = std::prev(insert_at);  // the pieces inserted after `it` replace it
      frags.erase(it);
      it = last;
    }
  }
  return {frags.begin(), frags.end()};
}

}  // namespace anelm::tok
