// Tokenizer facade: special-token splitting, normalisation, pre-tokenization, BPE/SPM/WordPiece.
#include "tokenizer/tokenizer.h"

#include <stdexcept>

#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_split.h"
#include "tokenizer/spm.h"
#include "tokenizer/token_index.h"
#include "tokenizer/unicode.h"
#include "tokenizer/wordpiece.h"

namespace anelm::tok {
namespace {

// Bytes a token stands for in output text (llama.cpp token_to_piece with special = true).
std::string token_piece(const VocabData& d, int id) {
  const std::string& text = d.tokens[id];
  switch (d.types[id]) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUserDefined:
      return text;  // added tokens are stored as plain text, not byte-level encoded
    case TokenType::kByte:
      if (d.kind == VocabKind::kSentencePiece && text.size() == 6) {
        return std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
      }
      break;
    case TokenType::kUnused:
      return {};
    case TokenType::kNormal:
      break;
  }
  if (d.kind == VocabKind::kByteLevelBpe) return byte_level::decode(text);
  std::string out;  // SPM and WordPiece: "▁" -> ' '
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
      out.push_back(' ');
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// llama.cpp's detokenize clean-up (clean_spaces; WordPiece by default), its three passes in order:
// (1) no space before ? ! . or , (2) " ' " becomes "'" (3) no space before 's 'm 're 've. The first
// byte always stays.
std::string clean_up_spaces(std::string s) {
  auto pass = [&s](auto&& step) {
    if (s.size() < 2) return;
    std::string out(1, s[0]);
    out.reserve(s.size());
    for (size_t i = 1; i < s.size(); ++i) step(out, i);
    s = std::move(out);
  };
  pass([&s](std::string& out, size_t i) {
    const char x = s[i];
    if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) out.pop_back();
    out.push_back(x);
  });
  bool after_dropped = false;  // a space just dropped cannot start another " ' " (llama.cpp's \0)
  pass([&s, &after_dropped](std::string& out, size_t& i) {
    const char x = s[i];
    if (x == '\'' && i + 1 < s.size() && s[i - 1] == ' ' && !after_dropped && s[i + 1] == ' ') {
      out.pop_back();
      ++i;  // the space after it goes too
      after_dropped = true;
    } else {
      after_dropped = false;
    }
    out.push_back(x);
  });
  pass([&s](std::string& out, size_t i) {
    const char x = s[i];
    if (s[i - 1] == ' ' && x == '\'' && i + 1 < s.size()) {
      const char x1 = s[i + 1];
      const char x2 = i + 2 < s.size() ? s[i + 2] : '\0';
      const bool glued =
          x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e');
      if (glued) out.pop_back();
    }
    out.push_back(x);
  });
  return s;
}

class TokenizerImpl final : public Tokenizer {
 public:
  explicit TokenizerImpl(VocabData data) : data_(std::move(data)) {
    finalize_vocab(data_);
    const std::string src = data_.source.empty() ? "vocab" : data_.source;
    if (data_.tokens.empty()) throw std::invalid_argument(src + ": the vocabulary has no tokens");
    index_.reserve(data_.tokens.size());
    for (int id = 0; id < static_cast<int>(data_.tokens.size()); ++id) {
      index_[data_.tokens[id]] = id;  // a later duplicate wins, as in llama.cpp
    }
    splitter_ = std::make_unique<SpecialSplitter>(data_);
    if (data_.kind == VocabKind::kByteLevelBpe) {
      bpe_ = std::make_unique<BytePairEncoder>(data_, index_, src);
    } else if (data_.kind == VocabKind::kWordPiece) {
      wpm_ = std::make_unique<WordPieceEncoder>(data_, index_);
    } else {
      spm_ = std::make_unique<SentencePieceEncoder>(data_, index_);
    }
    pieces_.reserve(data_.tokens.size());
    for (int id = 0; id < static_cast<int>(data_.tokens.size()); ++id) pieces_.push_back(token_piece(data_, id));
    eog_.assign(data_.tokens.size(), false);
    for (int id : data_.eog_ids) eog_[id] = true;
  }

  std::vector<int> encode(std::string_view text, bool parse_special) const override {
    std::vector<int> out;
    out.reserve(text.size() / 3 + 4);
    bool prev_special = true;  // SPM: the space prefix goes on the first raw fragment and after tokens
    for (const Fragment& f : splitter_->split(text, parse_special)) {
      if (f.id >= 0) {
        out.push_back(f.id);
        prev_special = true;
        continue;
      }
      const std::string normalized = data_.normalize_nfc ? unicode::nfc(f.text) : std::string(f.text);
      if (bpe_) {
        for (std::string_view word : pre_tokenize(normalized, data_.pre)) bpe_->encode_word(word, out);
      } else if (wpm_) {
        wpm_->encode(normalized, out);
      } else {
        std::string s = (data_.add_space_prefix && prev_special) ? " " : "";
        s += normalized;
        spm_->encode(escape_spaces(s), out);
      }
      prev_special = false;
    }
    return out;
  }

  // llama.cpp's llama_detokenize(remove_special = skip_special, unparse_special = !skip_special):
  // with an SPM space prefix, one leading space of the first piece is removed, except when a
  // leading BOS was removed as special (then the text keeps its space, as llama.cpp does); then
  // clean_spaces' clean-up (WordPiece).
  std::string decode(const std::vector<int>& ids, bool skip_special) const override {
    std::string out;
    bool remove_space = data_.kind == VocabKind::kSentencePiece && data_.add_space_prefix;
    size_t i = 0;
    if (skip_special && data_.add_bos && !ids.empty() && data_.bos_id >= 0 && ids[0] == data_.bos_id) {
      remove_space = false;
      i = 1;
    }
    for (; i < ids.size(); ++i) {
      check(ids[i]);
      const bool hidden = skip_special && is_special(ids[i]);
      std::string_view piece = hidden ? std::string_view() : std::string_view(pieces_[ids[i]]);
      if (remove_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
      remove_space = false;
      out.append(piece);
    }
    return data_.clean_spaces ? clean_up_spaces(std::move(out)) : out;
  }

  std::string token_bytes(int id) const override {
    check(id);
    return pieces_[id];
  }
  const VocabData& vocab() const override { return data_; }
  int vocab_size() const override { return static_cast<int>(data_.tokens.size()); }
  bool is_eog(int id) const override { return id >= 0 && id < vocab_size() && eog_[id]; }
  bool is_special(int id) const override {
    if (id < 0 || id >= vocab_size()) return false;
    return data_.types[id] == TokenType::kControl || data_.types[id] == TokenType::kUnknown;
  }

 private:
  void check(int id) const {
    if (id < 0 || id >= vocab_size()) {
      throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                                  std::to_string(vocab_size()) + ")");
    }
  }

  VocabData data_;
  TokenIndex index_;
  std::unique_ptr<SpecialSplitter> splitter_;
  std::unique_ptr<BytePairEncoder> bpe_;
  std::unique_ptr<SentencePieceEncoder> spm_;
  std::unique_ptr<WordPieceEncoder> wpm_;
  std::vector<std::string> pieces_;  // id -> output bytes
  std::vector<bool> eog_;
};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::create(VocabData data) {
  return std::make_unique<TokenizerImpl>(std::move(data));
}

}  // namespace anelm::tok
