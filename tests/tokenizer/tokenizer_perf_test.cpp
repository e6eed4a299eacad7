// Encoding speed (a ~2k-token prompt must take milliseconds) and concurrent use of one tokenizer.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/gguf.h"
#include "server/gguf_vocab.h"
#include "tests/support/shared_data.h"
#include "tests/tokenizer/vocab_vectors_util.h"
#include "tokenizer/tokenizer.h"

namespace anelm::tok {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string long_prompt(const std::filesystem::path& inp) {
  std::string text = testing::read_text_file(inp);
  std::string prompt;
  while (prompt.size() < 8000) prompt += text;
  return prompt;
}

TEST(TokenizerPerf, TwoThousandTokenPromptInMilliseconds) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  ANELM_REQUIRE_SHARED_MODEL(inp, "ggml-vocab-qwen2.gguf.inp");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  const std::string prompt = long_prompt(inp);
  auto t0 = std::chrono::steady_clock::now();
  const auto ids = tok->encode(prompt, true);
  const double cold = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  const auto again = tok->encode(prompt, true);
  const double warm = ms_since(t0);
  EXPECT_EQ(ids, again);
  EXPECT_GT(ids.size(), 2000u);
  std::printf("[perf] %zu bytes -> %zu tokens: %.2f ms cold, %.2f ms warm (word cache)\n", prompt.size(),
              ids.size(), cold, warm);
  EXPECT_LT(cold, 200.0);  // generous for a loaded 2-core VM; typically a few ms
  EXPECT_EQ(tok->decode(ids), prompt);
}

// The GGUF vocab has 290 user-defined [PADn] tokens that the special splitter scans for.
TEST(TokenizerPerf, GgufQwenPrompt) {
  ANELM_REQUIRE_SHARED_MODEL(path, "ggml-vocab-qwen2.gguf");
  ANELM_REQUIRE_SHARED_MODEL(inp, "ggml-vocab-qwen2.gguf.inp");
  const auto tok = Tokenizer::create(server::vocab_from_gguf(*engine::GgufFile::open(path.string())));
  const std::string prompt = long_prompt(inp);
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = tok->encode(prompt, false);
  const double ms = ms_since(t0);
  std::printf("[perf] GGUF vocab: %zu tokens in %.2f ms\n", ids.size(), ms);
  EXPECT_LT(ms, 200.0);
}

TEST(TokenizerPerf, LongWordWithoutSpaces) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  std::string word;
  for (int i = 0; i < 5000; ++i) word += "abcdefghij"[i % 10];
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = tok->encode(word, false);
  const double ms = ms_since(t0);
  std::printf("[perf] 5000-letter word -> %zu tokens in %.2f ms\n", ids.size(), ms);
  EXPECT_LT(ms, 200.0);
  EXPECT_EQ(tok->decode(ids), word);
}

TEST(TokenizerThreads, ConcurrentEncodeGivesSameIds) {
  ANELM_REQUIRE_SHARED_MODEL(dir, "qwen2.5-0.5b-instruct");
  ANELM_REQUIRE_SHARED_MODEL(inp, "ggml-vocab-qwen2.gguf.inp");
  ANELM_REQUIRE_SHARED_MODEL(out, "ggml-vocab-qwen2.gguf.out");
  const auto tok = Tokenizer::from_hf_dir(dir.string());
  const auto cases = testing::read_vocab_cases(inp, out);
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (size_t i = 0; i < cases.size(); ++i) {
          const auto& c = cases[(i + t * 7) % cases.size()];
          failures[t] += tok->encode(c.text, false) != c.ids;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
}  // namespace anelm::tok
