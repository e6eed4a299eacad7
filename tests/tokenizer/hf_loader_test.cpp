// HF loader: tiny synthetic tokenizer files (both merges formats) and every error path.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/shared_data.h"
#include "tokenizer/hf_vocab.h"
#include "tokenizer/tokenizer.h"

namespace anelm::tok {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

// A byte-level vocabulary over "a", "b" and "Ġ" (the space byte).
std::string tiny_tokenizer_json(const std::string& merges, const std::string& extra = "") {
  return R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4},
             "merges": )" + merges + R"(},
             "added_tokens": [{"id": 5, "content": "<|end|>", "special": true}],
             "normalizer": {"type": "NFC"},
             "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})" +
         extra + "}";
}

// Expects `fn` to throw std::invalid_argument whose message contains every string of `parts`.
template <typename Fn>
void expect_error(Fn fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(HfLoader, TinyTokenizerJsonBothMergeFormats) {
  for (const std::string merges : {R"(["a b", "Ġ ab"])", R"([["a", "b"], ["Ġ", "ab"]])"}) {
    const fs::path dir = ::anelm::testing::make_temp_dir("tok_tiny");
    write(dir / "tokenizer.json", tiny_tokenizer_json(merges));
    const auto tok = Tokenizer::from_hf_dir(dir.string());
    EXPECT_EQ(tok->vocab().pre, PreTokenizer::kGpt2);
    EXPECT_EQ(tok->encode("ab ab", false), (std::vector<int>{2, 4}));
    EXPECT_EQ(tok->encode("ab<|end|>", true), (std::vector<int>{2, 5}));
    EXPECT_EQ(tok->decode({2, 4, 5}), "ab ab<|end|>");
    EXPECT_TRUE(tok->is_eog(5));  // <|end|> is an end-of-generation text, as in llama.cpp
  }
}

TEST(HfLoader, TinyVocabJsonMergesTxt) {
  const fs::path dir = ::anelm::testing::make_temp_dir("tok_vm");
  write(dir / "vocab.json", R"({"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4})");
  write(dir / "merges.txt", "#version: 0.2\na b\nĠ ab\n");
  write(dir / "added_tokens.json", R"({"<|im_end|>": 5})");
  write(dir / "tokenizer_config.json",
        R"({"tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|im_end|>", "bos_token": null,
            "add_bos_token": false, "chat_template": "{{ '<|im_start|>' }}"})");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  EXPECT_EQ(tok->vocab().pre, PreTokenizer::kQwen2);
  EXPECT_EQ(tok->vocab().eos_id, 5);
  EXPECT_TRUE(tok->is_special(5));  // named as eos_token, so special
  EXPECT_EQ(tok->vocab().chat_template, "{{ '<|im_start|>' }}");
  EXPECT_EQ(tok->encode("ab ab<|im_end|>", true), (std::vector<int>{2, 4, 5}));
}

TEST(HfLoader, MissingDirectoryAndFiles) {
  expect_error([] { Tokenizer::from_hf_dir("/nonexistent/anelm/dir"); }, {"/nonexistent/anelm/dir", "not a directory"});
  const fs::path dir = ::anelm::testing::make_temp_dir("tok_empty");
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {dir.string(), "tokenizer.json", "merges.txt"});
  write(dir / "vocab.json", R"({"a": 0})");  // merges.txt still missing
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"merges.txt"});
}

TEST(HfLoader, BadJson) {
  const fs::path dir = ::anelm::testing::make_temp_dir("tok_badjson");
  write(dir / "tokenizer.json", R"({"model": {"vocab": )");
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"tokenizer.json", "invalid JSON"});
  write(dir / "tokenizer.json", tiny_tokenizer_json(R"(["a b"])"));
  write(dir / "tokenizer_config.json", "{not json");
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"tokenizer_config.json", "invalid JSON"});
}

TEST(HfLoader, MissingOrWrongFields) {
  const fs::path dir = ::anelm::testing::make_temp_dir("tok_fields");
  write(dir / "tokenizer.json", R"({"model": {"type": "BPE", "merges": []}})");
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"tokenizer.json", "model.vocab"});
  write(dir / "tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}}})");
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"tokenizer.json", "model.merges"});
  write(dir / "tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})");
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"model.type", "WordPiece"});
  write(dir / "tokenizer.json", tiny_tokenizer_json(R"(["a b", 7])"));
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"model.merges[1]"});
  write(dir / "tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})");
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"model.vocab", "\"a\""});
}

TEST(HfLoader, MergesReferencingUnknownTokens) {
  const fs::path dir = ::anelm::testing::make_temp_dir("tok_merges");
  write(dir / "tokenizer.json", tiny_tokenizer_json(R"(["a b", "Ġ zz"])"));
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"tokenizer.json", "merges[1]", "unknown token \"zz\""});
  write(dir / "tokenizer.json", tiny_tokenizer_json(R"(["b a"])"));  // "ba" is not a token
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"merges[0]", "\"ba\""});

  const fs::path dir2 = ::anelm::testing::make_temp_dir("tok_merges_txt");
  write(dir2 / "vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  write(dir2 / "merges.txt", "#version: 0.2\na b c\n");
  expect_error([&] { Tokenizer::from_hf_dir(dir2.string()); }, {"merges.txt", "line 2"});
  write(dir2 / "merges.txt", "a q\n");
  expect_error([&] { Tokenizer::from_hf_dir(dir2.string()); }, {"merges[0]", "unknown token \"q\""});
}

TEST(HfLoader, ConfigNamesUnknownSpecialToken) {
  const fs::path dir = ::anelm::testing::make_temp_dir("tok_cfg");
  write(dir / "tokenizer.json", tiny_tokenizer_json(R"(["a b"])"));
  write(dir / "tokenizer_config.json", R"({"eos_token": "<|nope|>"})");
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"tokenizer_config.json", "eos_token", "<|nope|>"});
  write(dir / "tokenizer_config.json", R"({"added_tokens_decoder": {"x": {"content": "q"}}})");
  expect_error([&] { Tokenizer::from_hf_dir(dir.string()); }, {"added_tokens_decoder", "\"x\""});
}

TEST(HfLoader, ErrorsAreTokenizerErrors) {
  EXPECT_THROW(load_hf_vocab("/nonexistent/anelm/dir"), TokenizerError);
}

}  // namespace
}  // namespace anelm::tok
