// vocab_from_gguf on synthetic GGUF files: defaults (SPM, BPE, BERT WordPiece), pre-tokenizer
// names, eog ids, fill-in-the-middle markers and error paths.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

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

// model "bert": WordPiece with llama.cpp's defaults ([CLS] 101 as BOS, [UNK] 100, [SEP] 102, [PAD]
// 0, lower-casing and accent stripping on), which the keys override.
void add_tiny_bert(engine::GgufWriter& w) {
  w.add_string("tokenizer.ggml.model", "bert");
  std::vector<std::string> tokens;
  for (int i = 0; i < 110; ++i) tokens.push_back("[unused" + std::to_string(i) + "]");
  tokens[0] = "[PAD]", tokens[100] = "[UNK]", tokens[101] = "[CLS]";
  tokens[102] = "[SEP]", tokens[103] = "[MASK]";
  tokens[104] = "▁hello", tokens[105] = "▁héllo", tokens[106] = "▁Hello";
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  std::vector<int32_t> types(110, 1);
  for (int id : {0, 100, 101, 102, 103}) types[id] = 3;
  w.add_i32_array("tokenizer.ggml.token_type", types);
}

TEST(GgufVocabSynthetic, BertDefaults) {
  const VocabData v = load(write_gguf("gv_bert", add_tiny_bert));
  EXPECT_EQ(v.kind, VocabKind::kWordPiece);
  EXPECT_EQ(v.bos_id, 101);
  EXPECT_EQ(v.unk_id, 100);
  EXPECT_EQ(v.sep_id, 102);
  EXPECT_EQ(v.pad_id, 0);
  EXPECT_EQ(v.eos_id, -1);
  EXPECT_TRUE(v.add_bos);
  EXPECT_FALSE(v.add_eos);
  EXPECT_TRUE(v.add_sep);
  EXPECT_FALSE(v.add_space_prefix);
  EXPECT_TRUE(v.clean_spaces);
  EXPECT_TRUE(v.normalize_lowercase);
  EXPECT_TRUE(v.normalize_strip_accents);
  const auto tok = Tokenizer::create(v);
  EXPECT_EQ(tok->encode("HÉLLO [SEP]", true), (std::vector<int>{104, 102}));
  EXPECT_EQ(add_special_tokens(tok->vocab(), tok->encode("hello", false)),
            (std::vector<int>{101, 104, 102}));
}

TEST(GgufVocabSynthetic, BertKeysOverrideDefaults) {
  // lowercase off: strip_accents follows it unless it has its own key (llama.cpp).
  const VocabData cased = load(write_gguf("gv_bert_cased", [](engine::GgufWriter& w) {
    add_tiny_bert(w);
    w.add_bool("tokenizer.ggml.normalizer.lowercase", false);
    w.add_u32("tokenizer.ggml.seperator_token_id", 103);  // sic: llama.cpp's key
    w.add_u32("tokenizer.ggml.bos_token_id", 0);
    w.add_bool("tokenizer.ggml.add_sep_token", false);
  }));
  EXPECT_FALSE(cased.normalize_lowercase);
  EXPECT_FALSE(cased.normalize_strip_accents);
  EXPECT_EQ(cased.sep_id, 103);
  EXPECT_EQ(cased.bos_id, 0);
  EXPECT_FALSE(cased.add_sep);
  const auto tok = Tokenizer::create(cased);
  EXPECT_EQ(tok->encode("Hello héllo hello", false), (std::vector<int>{106, 105, 104}));
  EXPECT_EQ(add_special_tokens(tok->vocab(), {104}), (std::vector<int>{0, 104, 103}));
  const VocabData keep_accents = load(write_gguf("gv_bert_acc", [](engine::GgufWriter& w) {
    add_tiny_bert(w);
    w.add_bool("tokenizer.ggml.normalizer.strip_accents", false);
  }));
  EXPECT_TRUE(keep_accents.normalize_lowercase);
  EXPECT_FALSE(keep_accents.normalize_strip_accents);
  EXPECT_EQ(Tokenizer::create(keep_accents)->encode("HÉLLO", false), (std::vector<int>{105}));
  // A vocabulary too small for the default ids: they are dropped, not errors.
  const VocabData small = load(write_gguf("gv_bert_small", [](engine::GgufWriter& w) {
    w.add_string("tokenizer.ggml.model", "bert");
    w.add_string_array("tokenizer.ggml.tokens", {"[PAD]", "▁a"});
  }));
  EXPECT_EQ(small.bos_id, -1);
  EXPECT_EQ(small.sep_id, -1);
  EXPECT_EQ(small.unk_id, -1);
  EXPECT_EQ(add_special_tokens(small, {1}), (std::vector<int>{1}));
  const auto bad_sep = write_gguf("gv_bert_bad", [](engine::GgufWriter& w) {
    add_tiny_bert(w);
    w.add_u32("tokenizer.ggml.seperator_token_id", 500);
  });
  expect_error([&] { load(bad_sep); }, {"tokenizer.ggml.seperator_token_id", "500"});
}

TEST(GgufVocabSynthetic, Errors) {
  const auto no_model = write_gguf("gv_e1", [](engine::GgufWriter& w) {
    w.add_string_array("tokenizer.ggml.tokens", {"a"});
  });
  expect_error([&] { load(no_model); }, {"vocab.gguf", "tokenizer.ggml.model"});
  const auto t5 = write_gguf("gv_e2", [](engine::GgufWriter& w) {
    w.add_string("tokenizer.ggml.model", "t5");
    w.add_string_array("tokenizer.ggml.tokens", {"a"});
  });
  expect_error([&] { load(t5); }, {"tokenizer.ggml.model", "\"t5\" is not supported", "\"bert\""});
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

void add_fim_bpe(engine::GgufWriter& w) {
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "qwen2");
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
                                               "<|endoftext|>", "<|x|>", "<|y|>", "<|z|>"});
  w.add_string_array("tokenizer.ggml.merges", {"a b"});
  w.add_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 3, 3, 3, 3, 3, 3, 3});
}

// Fill-in-the-middle markers: the GGUF keys llama.cpp's converter writes (the current and the
// older names), else the markers' texts. Qwen2.5's HF files: the ids its added_tokens.json gives.
TEST(FimTokens, QwenHfDirectoryByText) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  const auto added = nlohmann::json::parse(std::ifstream(dir_opt->string() + "/added_tokens.json"));
  const auto tk = Tokenizer::from_hf_dir(dir_opt->string());
  EXPECT_EQ(tk->vocab().fim_pre_id, added.at("<|fim_prefix|>").get<int>());
  EXPECT_EQ(tk->vocab().fim_suf_id, added.at("<|fim_suffix|>").get<int>());
  EXPECT_EQ(tk->vocab().fim_mid_id, added.at("<|fim_middle|>").get<int>());
}

TEST(FimTokens, GgufTextKeysAndOlderKeys) {
  const VocabData by_text = load(write_gguf("fim_text", add_fim_bpe));
  EXPECT_EQ(by_text.fim_pre_id, 3);
  EXPECT_EQ(by_text.fim_suf_id, 5);
  EXPECT_EQ(by_text.fim_mid_id, 4);
  const VocabData by_key = load(write_gguf("fim_key", [](engine::GgufWriter& w) {
    add_fim_bpe(w);
    w.add_u32("tokenizer.ggml.fim_pre_token_id", 7);
    w.add_u32("tokenizer.ggml.suffix_token_id", 8);  // the older names, as older conversions wrote
    w.add_u32("tokenizer.ggml.middle_token_id", 2);
    w.add_u32("tokenizer.ggml.fim_mid_token_id", 9);  // the current name wins
  }));
  EXPECT_EQ(by_key.fim_pre_id, 7);
  EXPECT_EQ(by_key.fim_suf_id, 8);
  EXPECT_EQ(by_key.fim_mid_id, 9);
  try {
    load(write_gguf("fim_bad", [](engine::GgufWriter& w) {
      add_fim_bpe(w);
      w.add_u32("tokenizer.ggml.fim_suf_token_id", 10);
    }));
    ADD_FAILURE() << "an id outside the vocabulary was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.fim_suf_token_id"), std::string::npos) << e.what();
  }
}

TEST(FimTokens, CodeLlamaSentencePieceMarkersAndNone) {
  VocabData d;
  d.kind = VocabKind::kSentencePiece;
  d.tokens = {"<unk>", "<s>", "</s>", "▁<PRE>", "▁<MID>", "▁<SUF>", "▁<EOT>", "▁a"};
  d.scores.assign(d.tokens.size(), 0.0f);
  finalize_vocab(d);
  EXPECT_EQ(d.fim_pre_id, 3);
  EXPECT_EQ(d.fim_suf_id, 5);
  EXPECT_EQ(d.fim_mid_id, 4);
  VocabData none;
  none.tokens = {"a", "b", "<|im_end|>"};
  finalize_vocab(none);
  EXPECT_EQ(none.fim_pre_id, -1);
  EXPECT_EQ(none.fim_suf_id, -1);
  EXPECT_EQ(none.fim_mid_id, -1);
}

}  // namespace
}  // namespace anelm::tok
