// Extra cases recorded from llama.cpp (tests/data/tokenizer/llamacpp_peer_cases.json): encode and decode.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "engine/gguf.h"
#include "server/gguf_vocab.h"
#include "tests/support/shared_data.h"
#include "tests/tokenizer/vocab_vectors_util.h"
#include "tokenizer/tokenizer.h"

namespace anelm::tok {
namespace {

// Located from this source file (CMake passes absolute paths), so no build-time define is needed.
const std::filesystem::path kFixture =
    std::filesystem::path(__FILE__).parent_path().parent_path() / "data/tokenizer/llamacpp_peer_cases.json";

TEST(PeerCases, MatchLlamaCpp) {
  ANELM_REQUIRE_SHARED_MODEL(models_dir, "README.md");
  const auto fixture = nlohmann::json::parse(testing::read_text_file(kFixture));
  std::map<std::string, std::unique_ptr<Tokenizer>> tokenizers;
  int checked = 0;
  for (const auto& c : fixture["cases"]) {
    const std::string model = c["model"];
    auto& tok = tokenizers[model];
    if (!tok) {
      const auto gguf = engine::GgufFile::open((models_dir.parent_path() / model).string());
      tok = Tokenizer::create(server::vocab_from_gguf(*gguf));
    }
    const std::string text = c["text"];
    const bool special = c["special"];
    const std::vector<int> ids = c["ids"];
    EXPECT_EQ(testing::ids_to_string(tok->encode(text, special)), testing::ids_to_string(ids))
        << model << " special=" << special << " \"" << text << "\"";
    // llama_detokenize(remove_special=false, unparse_special=true) == decode(ids, false).
    EXPECT_EQ(tok->decode(ids), c["detok"].get<std::string>()) << model << " \"" << text << "\"";
    ++checked;
  }
  EXPECT_EQ(checked, 20);
}

}  // namespace
}  // namespace anelm::tok
