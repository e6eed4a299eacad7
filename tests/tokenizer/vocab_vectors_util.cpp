// Parser for llama.cpp's .inp/.out tokenizer vectors (format in shared/models/README.md).
#include "tests/tokenizer/vocab_vectors_util.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/support/shared_data.h"

namespace anelm::tok::testing {

std::string read_text_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + file.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ids_to_string(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

std::vector<VocabCase> read_vocab_cases(const std::filesystem::path& inp, const std::filesystem::path& out) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::string all = read_text_file(inp);
  std::vector<std::string> texts;
  for (size_t pos = 0;;) {
    const size_t next = all.find(sep, pos);
    if (next == std::string::npos) {
      // The file ends with a separator, so the remainder is empty.
      if (pos < all.size()) texts.push_back(all.substr(pos));
      break;
    }
    texts.push_back(all.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<std::vector<int>> expected;
  std::istringstream lines(read_text_file(out));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ls(line);
    std::vector<int> ids;
    for (int id; ls >> id;) ids.push_back(id);
    expected.push_back(ids);
  }
  if (texts.size() != expected.size()) {
    throw std::runtime_error(inp.string() + " has " + std::to_string(texts.size()) + " cases but " +
                             out.string() + " has " + std::to_string(expected.size()));
  }
  std::vector<VocabCase> cases;
  for (size_t i = 0; i < texts.size(); ++i) cases.push_back({texts[i], expected[i]});
  return cases;
}

}  // namespace anelm::tok::testing
