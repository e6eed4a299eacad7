// Locates ../shared (test data) and the built anelm binary; tests skip with a clear message when absent.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace anelm::testing {

// The shared data folder: $ANELM_SHARED_DIR, else the first `shared/` found walking up from the
// source tree (the checkout sits beside it). nullopt when none exists.
std::optional<std::filesystem::path> shared_dir();

// Path of a file under shared/models, or nullopt when shared/ or the file is absent.
std::optional<std::filesystem::path> shared_model(const std::string& relative);

// The anelm executable of this build tree.
std::filesystem::path anelm_binary();

// The whole file as bytes ("" when it cannot be read).
std::string read_file(const std::filesystem::path& p);

// Writes `bytes` as the whole file, creating its parent directories.
void write_file(const std::filesystem::path& p, const std::string& bytes);

// `s` in single quotes for a shell command line (a ' inside becomes '\'').
std::string shell_quote(const std::string& s);

// A fresh empty temporary directory for one test, removed with its contents when the test process exits
// (ANELM_KEEP_TEST_DIRS=1 keeps it).
std::filesystem::path make_temp_dir(const std::string& tag);

// One of llama.cpp's models/ files that ../shared/models lacks (ggml-vocab-bert-bge.gguf, its .inp
// and .out, ggml-vocab-gpt-2.gguf...), extracted from the peer kit's llama.cpp source bundle into
// <build>/llama-vocab by tests/tokenizer/llama_vocab_files.sh: ctest's LlamaVocabFiles fixture runs
// it first, and a test binary run alone runs it here. nullopt, with *why set, when it cannot be had.
std::optional<std::filesystem::path> llama_vocab_file(const std::string& name, std::string* why);

}  // namespace anelm::testing

// Skips the current test unless shared/models/<rel> exists; binds `var` to its path.
#define ANELM_REQUIRE_SHARED_MODEL(var, rel)                                             \
  auto var##_opt = ::anelm::testing::shared_model(rel);                                  \
  if (!var##_opt) GTEST_SKIP() << "shared test data not found: ../shared/models/" << rel \
                               << " (set ANELM_SHARED_DIR to the shared/ folder)";       \
  const std::filesystem::path var = *var##_opt
