// StreamDecoder: never emits a broken UTF-8 sequence, and the streamed text equals decode().
#include <gtest/gtest.h>

#include "engine/gguf.h"
#include "server/gguf_vocab.h"
#include "tests/support/shared_data.h"
#include "tests/tokenizer/vocab_vectors_util.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace anelm::tok {
namespace {

std::unique_ptr<Tokenizer> load_gguf(const std::filesystem::path& path) {
  return Tokenizer::create(server::vocab_from_gguf(*engine::GgufFile::open(path.string())));
}

// Streams ids one by one; every piece must be valid UTF-8. Returns the streamed text.
std::string stream_all(const Tokenizer& tok, const std::vector<int>& ids, const std::vector<int>& context = {}) {
  StreamDecoder s(tok, context, /*skip_special=*/false);
  std::string all;
  for (int id : ids) {
    const std::string piece = s.push(id);
    EXPECT_TRUE(unicode::is_valid_utf8(piece)) << "broken piece after id " << id;
    EXPECT_LE(s.pending_bytes(), 3u);
    all += piece;
  }
  all += s.flush();
  EXPECT_EQ(all, s.text());
  return all;
}

TEST(TakeCompleteUtf8, HoldsBackOnlyIncompleteTails) {
  std::string b = "a\xE4\xBD";  // "a" + 2 of the 3 bytes of 你
  EXPECT_EQ(take_complete_utf8(b), "a");
  EXPECT_EQ(b, "\xE4\xBD");
  b += "\xA0";
  EXPECT_EQ(take_complete_utf8(b), "\xE4\xBD\xA0");
  EXPECT_EQ(b, "");
}

TEST(TakeCompleteUtf8, InvalidBytesBecomeReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";
  std::string b = "\xFF" "a";
  EXPECT_EQ(take_complete_utf8(b), r + "a");
  b = "\xC0\x80";  // overlong NUL: two invalid bytes
  EXPECT_EQ(take_complete_utf8(b), r + r);
  b = "\xED\xA0\x80";  // surrogate U+D800
  EXPECT_EQ(take_complete_utf8(b), r + r + r);
  b = "\xE4\xBD" "a";  // truncated sequence followed by ASCII
  EXPECT_EQ(take_complete_utf8(b), r + "a");
  b = "\xF4\x90";  // past U+10FFFF: invalid at once, not held back
  EXPECT_EQ(take_complete_utf8(b), r + r);
  EXPECT_EQ(b, "");
}

TEST(StreamDecoder, SpmByteFallbackCharactersAreHeldBack) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-llama-spm.gguf");
  const auto tok = load_gguf(path);
  // "𝕏 Ω≈ç√∫ 🦙 ﷺ" (ids from llama.cpp): 𝕏, 🦙 and ﷺ are <0xNN> byte-fallback tokens.
  const std::vector<int> ids = {29871, 243, 160, 152, 146, 29871, 30357, 30583, 30019, 30562, 31230,
                                29871, 243, 162, 169, 156, 29871, 242, 186, 189};
  StreamDecoder s(*tok);
  EXPECT_EQ(s.push(29871), "");  // the prefix space is stripped at the start of a text
  EXPECT_EQ(s.push(243), "");
  EXPECT_EQ(s.push(160), "");
  EXPECT_EQ(s.push(152), "");
  EXPECT_EQ(s.push(146), "\xF0\x9D\x95\x8F");  // 𝕏 complete
  EXPECT_EQ(stream_all(*tok, ids), "𝕏 Ω≈ç√∫ 🦙 ﷺ");
  EXPECT_EQ(stream_all(*tok, ids), tok->decode(ids));
  // After a prompt, the first piece keeps its space.
  EXPECT_EQ(stream_all(*tok, {15043}, {1}), " Hello");
  // Without a context, streaming agrees with decode() for both skip_special settings.
  for (const std::vector<int>& seq : {std::vector<int>{1, 15043, 3186, 2}, std::vector<int>{15043, 2, 3186}}) {
    for (bool skip : {false, true}) {
      StreamDecoder s2(*tok, {}, skip);
      std::string text;
      for (int id : seq) text += s2.push(id);
      text += s2.flush();
      EXPECT_EQ(text, tok->decode(seq, skip)) << "skip_special=" << skip;
    }
  }
}

TEST(StreamDecoder, SpmIncompleteTailFlushesAsReplacement) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-llama-spm.gguf");
  const auto tok = load_gguf(path);
  StreamDecoder s(*tok, {1});
  EXPECT_EQ(s.push(243), "");  // <0xF0>
  EXPECT_EQ(s.push(160), "");  // <0x9D>
  EXPECT_EQ(s.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(s.push(15043), " Hello");
  EXPECT_EQ(s.push(2), "");  // </s> is special: skipped by default
  EXPECT_EQ(s.text(), "\xEF\xBF\xBD Hello");
}

TEST(StreamDecoder, QwenVectorsStreamAsDecode) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  ANELM_REQUIRE_SHARED_MODEL(inp, "ggml-vocab-qwen2.gguf.inp");
  ANELM_REQUIRE_SHARED_MODEL(out, "ggml-vocab-qwen2.gguf.out");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  for (const auto& c : testing::read_vocab_cases(inp, out)) {
    EXPECT_EQ(stream_all(*tok, c.ids), c.text);  // emoji, CJK, Khmer split across byte-level tokens
  }
  // 😀 is split over two byte-level tokens here: nothing until the character completes.
  const auto ids = tok->encode("😀😀", false);
  ASSERT_GE(ids.size(), 2u);
  StreamDecoder s(*tok);
  std::string first = s.push(ids[0]);
  EXPECT_TRUE(unicode::is_valid_utf8(first));
}

TEST(StreamDecoder, QwenSpecialTokens) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  StreamDecoder skip(*tok);
  EXPECT_EQ(skip.push(9707), "Hello");
  EXPECT_EQ(skip.push(151645), "");  // <|im_end|>
  StreamDecoder keep(*tok, {}, /*skip_special=*/false);
  EXPECT_EQ(keep.push(151645), "<|im_end|>");
}

}  // namespace
}  // namespace anelm::tok
