// Test helpers for tests/grammar (see grammar_test_util.h).
#include <algorithm>
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

std::optional<std::string> random_walk(Matcher m, const Vocab& vocab, const std::vector<int>& eog, std::mt19937_64& rng,
                                       int max_steps, bool* died) {
  std::vector<uint8_t> mask(static_cast<size_t>(vocab.size()));
  std::vector<int> allowed, closing;
  std::string out;
  if (died) *died = false;
  auto is_eog = [&](int id) { return std::find(eog.begin(), eog.end(), id) != eog.end(); };
  for (int step = 0; step < max_steps; ++step) {
    if (m.fill_mask(mask) == 0) {
      if (died) *died = true;
      return std::nullopt;
    }
    allowed.clear(), closing.clear();
    bool can_stop = false;
    for (int id = 0; id < vocab.size(); ++id) {
      if (!mask[static_cast<size_t>(id)]) continue;
      if (is_eog(id)) {
        can_stop = true;
        continue;
      }
      allowed.push_back(id);
      if (vocab.token_bytes(id).find_first_of("\"]}") != std::string::npos) closing.push_back(id);
    }
    const bool late = step >= max_steps / 2;
    std::uniform_real_distribution<double> u(0, 1);
    if (can_stop && (allowed.empty() || u(rng) < (late ? 0.9 : 0.25))) return out;
    if (allowed.empty()) {
      if (died) *died = true;
      return std::nullopt;
    }
    const std::vector<int>& pool = late && !closing.empty() && u(rng) < 0.7 ? closing : allowed;
    const int id = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
    if (!m.accept_token(id)) {
      if (died) *died = true;
      return std::nullopt;
    }
    out += vocab.token_bytes(id);
  }
  return std::nullopt;
}

}  // namespace anelm::grammar::testing
