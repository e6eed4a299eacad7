// Reads llama.cpp's tokenizer test vectors (X.gguf.inp strings, X.gguf.out expected ids).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

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
