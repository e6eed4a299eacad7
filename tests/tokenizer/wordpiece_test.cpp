// BERT's WordPiece (VocabKind::kWordPiece): the pre-tokenizer's classes, greedy longest match,
// [UNK], special tokens, add_special_tokens and the detokenizer's clean-up on a small hand-made
// vocabulary; then llama.cpp's own ids and text over the real bge vocabulary (tests/data/tokenizer/
// wordpiece_llamacpp.json, made by make_wordpiece_fixture.py; the vocabulary comes from the peer
// kit's llama.cpp source bundle, so those tests skip without it).
#include "tokenizer/wordpiece.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/gguf.h"
#include "server/gguf_vocab.h"
#include "tests/tokenizer/vocab_vectors_util.h"
#include "tokenizer/tokenizer.h"

namespace anelm::tok {
namespace {

using Words = std::vector<std::string>;

// ---- Pre-tokenizer ------------------------------------------------------------------------------

TEST(WordPieceWords, SplitsOnWhitespacePunctuationAndAsciiSymbols) {
  EXPECT_EQ(wordpiece_words("Hello, World!", true, true), (Words{"hello", ",", "world", "!"}));
  EXPECT_EQ(wordpiece_words("a+b=c$  x_y", true, true),
            (Words{"a", "+", "b", "=", "c", "$", "x", "_", "y"}));
  // Non-ASCII symbols (Sc, So) stay inside words; emoji too.
  EXPECT_EQ(wordpiece_words("a€b ©x 🦙.cpp", false, false),
            (Words{"a€b", "©x", "🦙", ".", "cpp"}));
  EXPECT_EQ(wordpiece_words("Hello", false, false), (Words{"Hello"}));
}

TEST(WordPieceWords, EmptyAndWhitespaceOnly) {
  EXPECT_TRUE(wordpiece_words("", true, true).empty());
  // ASCII whitespace, NEL, NBSP, ideographic space, line separator.
  EXPECT_TRUE(
      wordpiece_words(" \t\n\r\x0B\x0C \xC2\x85\xC2\xA0\xE3\x80\x80\xE2\x80\xA8", true, true)
          .empty());
}

TEST(WordPieceWords, AccentsAreStrippedWithTheirBaseKept) {
  EXPECT_EQ(wordpiece_words("Café Äpfel naïve", true, true), (Words{"cafe", "apfel", "naive"}));
  // A combining accent (Mn) is dropped; "ế" (two accents) keeps its base only.
  EXPECT_EQ(wordpiece_words("e\xCC\x81"
                            "cole Tiếng",
                            true, true),
            (Words{"ecole", "tieng"}));
  // Without stripping: lower-cased, accents kept as written.
  EXPECT_EQ(wordpiece_words("Café e\xCC\x81", true, false), (Words{"café", "e\xCC\x81"}));
  EXPECT_EQ(wordpiece_words("Café", false, false), (Words{"Café"}));
  // llama.cpp's one-code-point NFD: a Hangul syllable becomes its leading jamo.
  EXPECT_EQ(wordpiece_words("한", true, true), (Words{"\xE1\x84\x92"}));
}

TEST(WordPieceWords, ChineseIdeographsAreOneCharacterWords) {
  EXPECT_EQ(wordpiece_words("中文abc東京2024年", true, true),
            (Words{"中", "文", "abc", "東", "京", "2024", "年"}));
  // Kana are letters, not ideographs: they stay together; "、" is punctuation.
  EXPECT_EQ(wordpiece_words("のテキスト、カナ", true, true), (Words{"のテキスト", "、", "カナ"}));
}

TEST(WordPieceWords, ControlsNulAndInvalidUtf8Vanish) {
  using namespace std::string_literals;
  EXPECT_EQ(wordpiece_words("a\x01"
                            "b\x7F"
                            "c\xE2\x80\x8B"
                            "d\xEF\xBB\xBF"
                            "e"s,
                            true, true),
            (Words{"abcde"}));
  EXPECT_EQ(wordpiece_words("nu\0l"s, true, true), (Words{"nul"}));
  EXPECT_EQ(wordpiece_words("\xEF\xBF\xBDok\xEF\xBF\xBD", true, true), (Words{"ok"}));
  // Invalid bytes decode as U+FFFD and vanish: a stray continuation, an impossible lead, a
  // truncated tail.
  EXPECT_EQ(wordpiece_words("a\x80"
                            "b\xFF"
                            "c\xE2\x82",
                            true, true),
            (Words{"abc"}));
  // As in llama.cpp's decoder, an overlong form decodes to its value ("\xC1\x81" is 'A').
  EXPECT_EQ(wordpiece_words("x\xC1\x81y", true, true), (Words{"xay"}));
}

// ---- Encoder on a hand-made vocabulary
// ------------------------------------------------------------

VocabData tiny_vocab() {
  VocabData v;
  v.kind = VocabKind::kWordPiece;
  v.pre = PreTokenizer::kNone;
  v.tokens = {"[PAD]",  "[UNK]",  "[CLS]", "[SEP]", "[MASK]",                               // 0..4
              "▁hello", "▁world", "▁un",   "aff",   "able",   "▁,",   "▁!",  "▁'",    "s",  // 5..13
              "▁it",    "▁a",     "a",     "▁[",    "▁]",     "▁cls", "▁中", "▁cafe", "▁x",
              "y"};  // 14..23
  v.types.assign(v.tokens.size(), TokenType::kNormal);
  for (int id = 0; id <= 4; ++id) v.types[id] = TokenType::kControl;
  v.unk_id = 1, v.bos_id = 2, v.sep_id = 3, v.pad_id = 0;
  v.add_bos = true;
  v.add_sep = true;
  v.add_space_prefix = false;
  v.clean_spaces = true;
  v.normalize_lowercase = v.normalize_strip_accents = true;
  return v;
}

TEST(WordPiece, GreedyLongestMatch) {
  const auto tok = Tokenizer::create(tiny_vocab());
  EXPECT_EQ(tok->encode("unaffable", false), (std::vector<int>{7, 8, 9}));
  EXPECT_EQ(tok->encode("Hello, WORLD!", false), (std::vector<int>{5, 10, 6, 11}));
  EXPECT_EQ(tok->encode("Café 中", false), (std::vector<int>{21, 20}));
  EXPECT_TRUE(tok->encode("", false).empty());
  EXPECT_TRUE(tok->encode(" \t\n ", false).empty());
}

TEST(WordPiece, UnknownWordIsOneUnkAndDiscardsItsPieces) {
  const auto tok = Tokenizer::create(tiny_vocab());
  EXPECT_EQ(tok->encode("hello zzz world", false), (std::vector<int>{5, 1, 6}));
  // "▁un" matches, then nothing starts at "q": the whole word is [UNK], not "▁un" + [UNK].
  EXPECT_EQ(tok->encode("unq", false), (std::vector<int>{1}));
  EXPECT_EQ(tok->encode("中文", false),
            (std::vector<int>{20, 1}));  // each ideograph is its own word
}

TEST(WordPiece, NoUnkTokenDropsTheWord) {
  VocabData v = tiny_vocab();
  v.unk_id = -1;
  v.types[1] = TokenType::kNormal;
  const auto tok = Tokenizer::create(v);
  EXPECT_EQ(tok->encode("hello zzz world", false), (std::vector<int>{5, 6}));
}

TEST(WordPiece, OverLongWordsAreTokenizedOrUnkWhole) {
  const auto tok = Tokenizer::create(tiny_vocab());
  // 100,000 letters: one "▁a" then "a" pieces (the search is bounded by the longest token).
  const std::vector<int> ids = tok->encode(std::string(100000, 'a'), false);
  ASSERT_EQ(ids.size(), 100000u);
  EXPECT_EQ(ids.front(), 15);
  EXPECT_EQ(ids.back(), 16);
  // A long word with no match at its end is a single [UNK].
  EXPECT_EQ(tok->encode(std::string(50000, 'a') + "q", false), (std::vector<int>{1}));
}

TEST(WordPiece, SpecialTokenTextNeedsParseSpecial) {
  const auto tok = Tokenizer::create(tiny_vocab());
  EXPECT_EQ(tok->encode("[CLS] hello [SEP]world[MASK]", true), (std::vector<int>{2, 5, 3, 6, 4}));
  EXPECT_EQ(tok->encode("[CLS]", false), (std::vector<int>{17, 19, 18}));  // "[", "cls", "]"
}

TEST(WordPiece, NormalizerFlags) {
  VocabData v = tiny_vocab();
  v.normalize_lowercase = v.normalize_strip_accents = false;
  const auto tok = Tokenizer::create(v);
  EXPECT_EQ(tok->encode("Hello hello", false), (std::vector<int>{1, 5}));
  EXPECT_EQ(tok->encode("café cafe", false), (std::vector<int>{1, 21}));
}

TEST(WordPiece, AddSpecialTokensIsClsTextSep) {
  const VocabData v = tiny_vocab();
  EXPECT_EQ(add_special_tokens(v, {5, 6}), (std::vector<int>{2, 5, 6, 3}));
  EXPECT_EQ(add_special_tokens(v, {}), (std::vector<int>{2, 3}));
  // llama.cpp's WPM path adds both whatever add_bos / add_sep say, and does not deduplicate.
  VocabData off = v;
  off.add_bos = off.add_sep = false;
  EXPECT_EQ(add_special_tokens(off, {2, 5}), (std::vector<int>{2, 2, 5, 3}));
}

TEST(AddSpecialTokens, OtherKindsFollowAddBosAndAddEos) {
  VocabData v;
  v.kind = VocabKind::kSentencePiece;
  v.bos_id = 1, v.eos_id = 2, v.sep_id = 3;
  v.add_bos = true;
  EXPECT_EQ(add_special_tokens(v, {7}), (std::vector<int>{1, 7}));
  v.add_eos = true;
  EXPECT_EQ(add_special_tokens(v, {7}), (std::vector<int>{1, 7, 2}));
  v.kind = VocabKind::kByteLevelBpe;
  v.add_bos = false;
  EXPECT_EQ(add_special_tokens(v, {7}), (std::vector<int>{7, 2}));
  v.eos_id = -1;
  EXPECT_EQ(add_special_tokens(v, {7}), (std::vector<int>{7}));
}

TEST(WordPiece, DecodeUnescapesAndCleansSpaces) {
  const auto tok = Tokenizer::create(tiny_vocab());
  // Word-initial pieces carry their space, so the text starts with one (llama.cpp keeps it).
  EXPECT_EQ(tok->decode({5, 6}), " hello world");
  EXPECT_EQ(tok->decode(tok->encode("unaffable", false)), " unaffable");
  // " ," -> ","; " ' " -> "'"; control tokens shown unless skipped.
  EXPECT_EQ(tok->decode({2, 5, 10, 6, 11, 3}), "[CLS] hello, world![SEP]");
  EXPECT_EQ(tok->decode({2, 5, 10, 6, 11, 3}, /*skip_special=*/true), " hello, world!");
  EXPECT_EQ(tok->decode({14, 12, 13}), " it's");
  EXPECT_EQ(tok->decode({1}, true), "");
  EXPECT_EQ(tok->token_bytes(5), " hello");
}

// ---- llama.cpp over the real bge vocabulary
// -------------------------------------------------------

const std::filesystem::path kFixture = std::filesystem::path(__FILE__).parent_path().parent_path() /
                                       "data/tokenizer/wordpiece_llamacpp.json";

std::unique_ptr<Tokenizer> load_gguf(const std::filesystem::path& path) {
  return Tokenizer::create(server::vocab_from_gguf(*engine::GgufFile::open(path.string())));
}

TEST(WordPieceBge, MatchesLlamaCpp) {
  ANELM_REQUIRE_LLAMA_VOCAB(path, "ggml-vocab-bert-bge.gguf");
  const auto tok = load_gguf(path);
  const auto fixture = nlohmann::json::parse(testing::read_text_file(kFixture));
  int checked = 0;
  for (const auto& c : fixture["cases"]) {
    const std::string text = c["text"];
    const bool special = c["special"];
    const std::vector<int> ids = c["ids"];
    EXPECT_EQ(testing::ids_to_string(tok->encode(text, special)), testing::ids_to_string(ids))
        << "special=" << special << " \"" << text << "\"";
    // llama_detokenize(remove_special=false, unparse_special=special): control tokens ([UNK] here
    // too) are hidden without special; a leading [CLS] cannot occur, so skip_special matches.
    EXPECT_EQ(tok->decode(ids, /*skip_special=*/!special), c["detok"].get<std::string>())
        << "\"" << text << "\"";
    ++checked;
  }
  EXPECT_EQ(checked, 29);
}

TEST(WordPieceBge, Metadata) {
  ANELM_REQUIRE_LLAMA_VOCAB(path, "ggml-vocab-bert-bge.gguf");
  const auto tok = load_gguf(path);
  const VocabData& v = tok->vocab();
  EXPECT_EQ(v.kind, VocabKind::kWordPiece);
  EXPECT_EQ(tok->vocab_size(), 30522);
  EXPECT_EQ(v.bos_id, 101);
  EXPECT_EQ(v.sep_id, 102);
  EXPECT_EQ(v.unk_id, 100);
  EXPECT_EQ(v.pad_id, 0);
  EXPECT_EQ(v.eos_id, -1);
  EXPECT_TRUE(v.add_bos);
  EXPECT_TRUE(v.add_sep);
  EXPECT_FALSE(v.add_eos);
  // No tokenizer.ggml.normalizer.* keys in this file: llama.cpp's defaults.
  EXPECT_TRUE(v.normalize_lowercase);
  EXPECT_TRUE(v.normalize_strip_accents);
  EXPECT_TRUE(v.clean_spaces);
  EXPECT_TRUE(v.eog_ids.empty());
  EXPECT_TRUE(tok->is_special(101));
  EXPECT_TRUE(tok->is_special(100));
  // llama_tokenize(add_special = true) as libllama gives it (checked against the peer's libllama):
  // [CLS] ... [SEP], and [CLS] [SEP] for an empty text.
  EXPECT_EQ(add_special_tokens(v, tok->encode("Hello, world!", true)),
            (std::vector<int>{101, 7592, 1010, 2088, 999, 102}));
  EXPECT_EQ(add_special_tokens(v, tok->encode("", true)), (std::vector<int>{101, 102}));
}

}  // namespace
}  // namespace anelm::tok
