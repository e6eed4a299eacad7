// Reads llama.cpp's tokenizer test vectors (X.gguf.inp strings, X.gguf.out expected ids).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/shared_data.h"  // llama_vocab_file

namespace anelm::tok::testing {

struct VocabCase {
  std::string text;
  std::vector<int> ids;
};

// Cases from `inp` (separated by "\n__ggml_vocab_test__\n") and `out` (one line of ids per case).
// Throws std::runtime_error when the files disagree in count.
std::vector<VocabCase> read_vocab_cases(const std::filesystem::path& inp, const std::filesystem::path& out);

std::string read_text_file(const std::filesystem::path& file);
std::string ids_to_string(const std::vector<int>& ids);

}  // namespace anelm::tok::testing

// Skips the current test unless llama.cpp's models/<name> was extracted; binds `var` to its path.
#define ANELM_REQUIRE_LLAMA_VOCAB(var, name)                                  \
  std::string var##_why;                                                      \
  auto var##_opt = ::anelm::testing::llama_vocab_file(name, &var##_why); \
  if (!var##_opt) GTEST_SKIP() << var##_why;                                  \
  const std::filesystem::path var = *var##_opt
