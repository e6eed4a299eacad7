// GPT-2's pre-tokenizer (tokenizer.ggml.pre = "gpt-2"): llama.cpp's ids for a few dozen varied strings
// (contractions, digit runs, spaces, newlines, Unicode scripts, emoji) over a byte-level BPE vocab
// under GPT-2's regex (fixture: tests/data/tokenizer/make_gpt2_pre_fixture.py; Qwen2's vocab, as
// shared/models holds no GPT-2 one). The test builds the same vocab file: qwen2's keys, pre "gpt-2".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/gguf.h"
#include "engine/gguf_writer.h"
#include "server/gguf_vocab.h"
#include "tests/support/shared_data.h"
#include "tests/tokenizer/vocab_vectors_util.h"
#include "tokenizer/tokenizer.h"

namespace anelm::tok {
namespace {

const std::filesystem::path kFixture =
    std::filesystem::path(__FILE__).parent_path().parent_path() / "data/tokenizer/gpt2_pre_llamacpp.json";

// `src`'s tokenizer keys with tokenizer.ggml.pre replaced by `pre`, as a vocab-only GGUF.
std::string with_pre(const std::filesystem::path& src, const std::string& pre) {
  const auto g = engine::GgufFile::open(src.string());
  const std::filesystem::path out = anelm::testing::make_temp_dir("gpt2-pre") / ("vocab-" + pre + ".gguf");
  engine::GgufWriter w;
  for (const std::string& k : g->keys()) {
    if (k != "tokenizer.ggml.pre") w.copy_key(*g, k);
  }
  w.add_string("tokenizer.ggml.pre", pre);
  w.begin(out.string());
  w.finish();
  return out.string();
}

TEST(Gpt2PreTokenizer, MatchesLlamaCpp) {
  ANELM_REQUIRE_SHARED_MODEL(models_dir, "README.md");
  const auto fx = nlohmann::json::parse(testing::read_text_file(kFixture));
  const auto vocab = models_dir.parent_path() / fx["vocab"].get<std::string>();
  const auto g = engine::GgufFile::open(with_pre(vocab, fx["pre"].get<std::string>()));
  VocabData d = server::vocab_from_gguf(*g);
  EXPECT_EQ(d.pre, PreTokenizer::kGpt2);
  const auto tok = Tokenizer::create(std::move(d));
  int checked = 0, differs_from_qwen2 = 0;
  const auto qwen2 = Tokenizer::create(server::vocab_from_gguf(*engine::GgufFile::open(vocab.string())));
  for (const auto& c : fx["cases"]) {
    const std::string text = c["text"];
    const std::vector<int> ids = c["ids"];
    EXPECT_EQ(testing::ids_to_string(tok->encode(text, false)), testing::ids_to_string(ids)) << "\"" << text << "\"";
    EXPECT_EQ(tok->decode(ids), text);
    differs_from_qwen2 += qwen2->encode(text, false) != ids;
    ++checked;
  }
  EXPECT_EQ(checked, 38);
  // The fixture exercises GPT-2's regex where it parts from Qwen2's (else it could not tell them apart).
  EXPECT_GE(differs_from_qwen2, 8);
}

}  // namespace
}  // namespace anelm::tok
