// Derived VocabData fields (token types, end-of-generation ids) filled the way llama.cpp does.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <string_view>

namespace anelm::tok {
namespace {

// llama.cpp (llama-vocab.cpp) picks eot and eog tokens by their text; the order here is the
// preference for eot_id.
constexpr std::array<std::string_view, 9> kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
constexpr std::array<std::string_view, 12> kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>"};
// FIM pad / repo / file-separator tokens are also end-of-generation in llama.cpp.
constexpr std::array<std::string_view, 3> kFimEogTexts = {"<|fim_pad|>", "<|repo_name|>",
                                                          "<|file_sep|>"};

// Fill-in-the-middle markers by text when the file names none (llama.cpp's list: Qwen, StarCoder /
// Granite, DeepSeek, CodeLlama, GLM-4.5, Falcon-H1 coders).
constexpr std::array<std::string_view, 8> kFimPreTexts = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
                                                          "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"};
constexpr std::array<std::string_view, 8> kFimSufTexts = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
                                                          "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"};
constexpr std::array<std::string_view, 8> kFimMidTexts = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
                                                          "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"};

constexpr std::array<std::string_view, 5> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                                          "<reponame>"};
constexpr std::array<std::string_view, 1> kFimSepTexts = {"<|file_sep|>"};

bool is_byte_token(const std::string& t) {
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::isxdigit(t[3]) &&
         std::isxdigit(t[4]);
}

void check_id(const VocabData& d, int id, const char* field) {
  if (id < -1 || id >= static_cast<int>(d.tokens.size())) {
    throw std::invalid_argument(d.source + ": " + field + " = " + std::to_string(id) +
                                " is outside the vocabulary (size " + std::to_string(d.tokens.size()) + ")");
  }
}

}  // namespace

void finalize_vocab(VocabData& d) {
  const int n = static_cast<int>(d.tokens.size());
  if (d.types.empty()) {
    d.types.assign(n, TokenType::kNormal);
    if (d.kind == VocabKind::kSentencePiece) {
      for (int i = 0; i < n; ++i) {
        if (is_byte_token(d.tokens[i])) d.types[i] = TokenType::kByte;
      }
    }
  } else if (static_cast<int>(d.types.size()) != n) {
    throw std::invalid_argument(d.source + ": token types has " + std::to_string(d.types.size()) +
                                " entries but there are " + std::to_string(n) + " tokens");
  }
  if (d.kind == VocabKind::kSentencePiece && !d.scores.empty() && static_cast<int>(d.scores.size()) != n) {
    throw std::invalid_argument(d.source + ": scores has " + std::to_string(d.scores.size()) +
                                " entries but there are " + std::to_string(n) + " tokens");
  }
  for (const auto& a : d.added) {
    check_id(d, a.id, "added token id");
    if (a.id < 0) throw std::invalid_argument(d.source + ": added token \"" + a.content + "\" has no id");
    if (d.types[a.id] == TokenType::kNormal) {
      d.types[a.id] = a.special ? TokenType::kControl : TokenType::kUserDefined;
    }
  }
  check_id(d, d.bos_id, "bos_id");
  check_id(d, d.eos_id, "eos_id");
  check_id(d, d.eot_id, "eot_id");
  check_id(d, d.unk_id, "unk_id");
  check_id(d, d.pad_id, "pad_id");
  check_id(d, d.sep_id, "sep_id");
  check_id(d, d.fim_pre_id, "fim_pre_id");
  check_id(d, d.fim_suf_id, "fim_suf_id");
  check_id(d, d.fim_mid_id, "fim_mid_id");
  check_id(d, d.fim_rep_id, "fim_rep_id");
  check_id(d, d.fim_sep_id, "fim_sep_id");

  auto find_text = [&](std::string_view t) {
    for (int i = n - 1; i >= 0; --i) {  // added tokens sit at the end of the vocabulary
      if (d.tokens[i] == t) return i;
    }
    return -1;
  };
  if (d.eot_id < 0) {
    for (auto t : kEotTexts) {
      if (int id = find_text(t); id >= 0) {
        d.eot_id = id;
        break;
      }
    }
  }
  auto first_of = [&](int& id, const auto& texts) {
    for (auto t : texts) {
      if (id >= 0) break;
      id = find_text(t);
    }
  };
  first_of(d.fim_pre_id, kFimPreTexts);
  first_of(d.fim_suf_id, kFimSufTexts);
  first_of(d.fim_mid_id, kFimMidTexts);
  first_of(d.fim_rep_id, kFimRepTexts);
  first_of(d.fim_sep_id, kFimSepTexts);
  std::vector<int> eog = d.eog_ids;
  for (int id : eog) check_id(d, id, "eog id");
  auto add_eog = [&](std::string_view t) {
    if (int id = find_text(t); id >= 0) {
      eog.push_back(id);
      d.types[id] = TokenType::kControl;  // llama.cpp forces EOG tokens to be control tokens
    }
  };
  for (auto t : kEogTexts) add_eog(t);
  for (auto t : kFimEogTexts) add_eog(t);
  if (d.eos_id >= 0) eog.push_back(d.eos_id);
  if (d.eot_id >= 0) eog.push_back(d.eot_id);
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  d.eog_ids = std::move(eog);
}

std::vector<int> add_special_tokens(const VocabData& d, std::vector<int> ids) {
  const bool wordpiece = d.kind == VocabKind::kWordPiece;
  const int first = (wordpiece || d.add_bos) ? d.bos_id : -1;
  const int last = wordpiece ? d.sep_id : (d.add_eos ? d.eos_id : -1);
  if (first >= 0) ids.insert(ids.begin(), first);
  if (last >= 0) ids.push_back(last);
  return ids;
}

}  // namespace anelm::tok
