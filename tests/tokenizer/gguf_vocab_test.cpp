// vocab_from_gguf on synthetic GGUF files: defaults, pre-tokenizer names, eog ids and error paths.
#include <gtest/gtest.h>

#include <functional>

#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "server/gguf_vocab.h"
#include "tests/support/shared_data.h"
#include "tokenizer/tokenizer.h"

namespace anelm::tok {
namespace {

// Writes a vocab-only GGUF; `fill` adds the tokenizer keys.
std::string write_gguf(const std::string& tag, const std::function<void(engine::GgufWriter&)>& fill) {
  const auto path = (::anelm::testing::make_temp_dir(tag) / "vocab.gguf").string();
  engine::GgufWriter w;
  w.add_string("general.architecture", "llama");
  fill(w);
  w.begin(path);
  w.finish();
  return path;
}

VocabData load(const std::string& path) { return server::vocab_from_gguf(*engine::GgufFile::open(path)); }

void add_tiny_spm(engine::GgufWriter& w) {
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<0x21>", "▁", "a", "b", "▁a", "ab", "▁ab"});
  w.add_f32_array("tokenizer.ggml.scores", {0, 0, 0, 0, -1, -2, -3, -4, -5, -6});
  w.add_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 6, 1, 1, 1, 1, 1, 1});
}

TEST(GgufVocabSynthetic, SpmDefaults) {
  const VocabData v = load(write_gguf("gv_spm", add_tiny_spm));
  EXPECT_EQ(v.kind, VocabKind::kSentencePiece);
  EXPECT_EQ(v.bos_id, 1);  // llama.cpp's SPM defaults when the id keys are absent
  EXPECT_EQ(v.eos_id, 2);
  EXPECT_EQ(v.unk_id, 0);
  EXPECT_TRUE(v.add_bos);
  EXPECT_TRUE(v.add_space_prefix);
  const auto tok = Tokenizer::create(v);
  // " ab!" -> "▁ab!": bigram "▁a" (-4) beats "ab" (-5), then "▁a"+"b" -> "▁ab"; "!" falls back
  // to the <0x21> byte token; "c" has neither a token nor a byte token -> <unk>.
  EXPECT_EQ(tok->encode("ab!", false), (std::vector<int>{9, 3}));
  EXPECT_EQ(tok->encode("c", false), (std::vector<int>{4, 0}));
  EXPECT_EQ(tok->decode({9, 3}), "ab!");
}

TEST(GgufVocabSynthetic, Llama3PreAndNoneIds) {
  const VocabData v = load(write_gguf("gv_l3", [](engine::GgufWriter& w) {
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "llama-bpe");
    w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "<|eot_id|>", "<|begin_of_text|>"});
    w.add_string_array("tokenizer.ggml.merges", {"a b"});
    w.add_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 3, 3});
    w.add_u32("tokenizer.ggml.bos_token_id", 4);
    w.add_u32("tokenizer.ggml.eos_token_id", 3);
    w.add_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
    w.add_string("tokenizer.chat_template", "<|start_header_id|>");
  }));
  EXPECT_EQ(v.pre, PreTokenizer::kLlama3);
  EXPECT_TRUE(v.ignore_merges);
  EXPECT_TRUE(v.add_bos);
  EXPECT_FALSE(v.add_space_prefix);
  EXPECT_EQ(v.pad_id, -1);
  EXPECT_EQ(v.eot_id, 3);
  EXPECT_EQ(v.eog_ids, (std::vector<int>{3}));
  EXPECT_EQ(v.chat_template, "<|start_header_id|>");
  const auto tok = Tokenizer::create(v);
  EXPECT_EQ(tok->encode("ab<|eot_id|>", true), (std::vector<int>{2, 3}));
}

TEST(GgufVocabSynthetic, AddBosAndSpacePrefixKeysOverrideDefaults) {
  const VocabData v = load(write_gguf("gv_flags", [](engine::GgufWriter& w) {
    add_tiny_spm(w);
    w.add_bool("tokenizer.ggml.add_bos_token", false);
    w.add_bool("tokenizer.ggml.add_space_prefix", false);
  }));
  EXPECT_FALSE(v.add_bos);
  EXPECT_FALSE(v.add_space_prefix);
  EXPECT_EQ(Tokenizer::create(v)->encode("ab", false), (std::vector<int>{8}));
}

template <typename Fn>
void expect_error(Fn fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const std::exception& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(GgufVocabSynthetic, Errors) {
  const auto no_model = write_gguf("gv_e1", [](engine::GgufWriter& w) {
    w.add_string_array("tokenizer.ggml.tokens", {"a"});
  });
  expect_error([&] { load(no_model); }, {"vocab.gguf", "tokenizer.ggml.model"});
  const auto bert = write_gguf("gv_e2", [](engine::GgufWriter& w) {
    w.add_string("tokenizer.ggml.model", "bert");
    w.add_string_array("tokenizer.ggml.tokens", {"a"});
  });
  expect_error([&] { load(bert); }, {"tokenizer.ggml.model", "bert"});
  const auto scores = write_gguf("gv_e3", [](engine::GgufWriter& w) {
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
    w.add_f32_array("tokenizer.ggml.scores", {0});
  });
  expect_error([&] { load(scores); }, {"tokenizer.ggml.scores", "1 entries for 2 tokens"});
  const auto no_merges = write_gguf("gv_e4", [](engine::GgufWriter& w) {
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string_array("tokenizer.ggml.tokens", {"a"});
  });
  expect_error([&] { load(no_merges); }, {"tokenizer.ggml.merges"});
  const auto bad_eos = write_gguf("gv_e5", [](engine::GgufWriter& w) {
    add_tiny_spm(w);
    w.add_u32("tokenizer.ggml.eos_token_id", 99);
  });
  expect_error([&] { load(bad_eos); }, {"tokenizer.ggml.eos_token_id", "99"});
  const auto bad_merge = write_gguf("gv_e6", [](engine::GgufWriter& w) {
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
    w.add_string_array("tokenizer.ggml.merges", {"a b"});
  });
  expect_error([&] { Tokenizer::create(load(bad_merge)); }, {"vocab.gguf", "merges[0]", "\"ab\""});
}

}  // namespace
}  // namespace anelm::tok
