// Test helpers for tests/grammar (see grammar_test_util.h).
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/grammar/grammar_test_util.h"
#include "tests/support/shared_data.h"

namespace anelm::grammar::testing {

std::shared_ptr<const Vocab> byte_vocab() {
  static const auto v = [] {
    std::vector<std::string> bytes(257);
    std::vector<bool> usable(257, true);
    for (int i = 0; i < 256; ++i) bytes[i] = std::string(1, static_cast<char>(i));
    usable[256] = false;
    return std::make_shared<const Vocab>(bytes, usable, std::vector<int>{256});
  }();
  return v;
}

bool matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g, byte_vocab());
  return m.accept_bytes(text) && m.can_end();
}

bool matches_gbnf(const std::string& gbnf, std::string_view text) { return matches(parse_gbnf(gbnf), text); }

namespace {

// GPT-2's byte-level BPE shows each byte as a printable code point; this inverts that map.
std::map<uint32_t, uint8_t> unicode_to_byte() {
  std::map<uint32_t, uint8_t> m;
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    m[printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + extra++)] = static_cast<uint8_t>(b);
  }
  return m;
}

std::optional<std::string> decode_token(const std::string& s, const std::map<uint32_t, uint8_t>& map) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp;
    int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    cp = len == 1 ? c : c & (0x7F >> len);
    for (int k = 1; k < len; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += len;
    auto it = map.find(cp);
    if (it == map.end()) return std::nullopt;
    out += static_cast<char>(it->second);
  }
  return out;
}

}  // namespace

std::optional<QwenVocab> load_qwen_vocab() {
  auto vocab_path = anelm::testing::shared_model("qwen2.5-0.5b-instruct/vocab.json");
  auto added_path = anelm::testing::shared_model("qwen2.5-0.5b-instruct/added_tokens.json");
  if (!vocab_path || !added_path) return std::nullopt;
  nlohmann::json vocab = nlohmann::json::parse(std::ifstream(*vocab_path));
  nlohmann::json added = nlohmann::json::parse(std::ifstream(*added_path));
  constexpr size_t kSize = 151936;  // config.json vocab_size (ids past the added tokens are padding)
  QwenVocab q;
  q.bytes.assign(kSize, "");
  std::vector<bool> usable(kSize, false);
  auto map = unicode_to_byte();
  for (const auto& [text, id] : vocab.items()) {
    auto bytes = decode_token(text, map);
    if (!bytes) continue;
    q.bytes[id.get<size_t>()] = *bytes;
    usable[id.get<size_t>()] = true;
  }
  for (const auto& [text, id] : added.items()) {
    if (text == "<|endoftext|>" || text == "<|im_end|>") q.eog.push_back(id.get<int>());
  }
  q.vocab = std::make_shared<const Vocab>(q.bytes, usable, q.eog);
  return q;
}

}  // namespace anelm::grammar::testing
