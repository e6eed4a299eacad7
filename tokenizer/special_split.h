// Splits text around added/special token strings before the BPE sees it (llama.cpp's tokenizer_st_partition).
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace anelm::tok {

struct Fragment {
  int id = -1;             // >= 0: a matched special token; -1: raw text
  std::string_view text;   // raw text (empty for tokens)
};

class SpecialSplitter {
 public:
  // Candidates: every kControl, kUserDefined and kUnknown token with non-empty text, longest first.
  explicit SpecialSplitter(const VocabData& vocab);

  // Control and unknown tokens are matched only with parse_special; user-defined tokens always
  // (llama.cpp, like HF's added vocabulary, pre-splits non-special added tokens regardless).
  // Each candidate, in order, splits every remaining raw fragment at all its occurrences.
  std::vector<Fragment> split(std::string_view text, bool parse_special) const;

 private:
  struct Candidate {
    int id;
    std::string_view text;
    bool needs_parse_special;
  };
  std::vector<Candidate> candidates_;
};

}  // namespace anelm::tok
