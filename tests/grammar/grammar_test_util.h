// Helpers shared by the grammar tests: a one-byte-per-token vocabulary, whole-text matching, and
// the Qwen2.5 vocabulary decoded to bytes.
#pragma once

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"

namespace anelm::grammar::testing {

// Appends a member to an ordered_json object without the duplicate-key scan of operator[] (which
// makes building an object of n keys O(n^2)); the caller guarantees the key is new.
inline void append_member(nlohmann::ordered_json& object, std::string key, nlohmann::ordered_json value) {
  if (!object.is_object()) object = nlohmann::ordered_json::object();
  auto& members = static_cast<std::vector<std::pair<const std::string, nlohmann::ordered_json>>&>(
      object.get_ref<nlohmann::ordered_json::object_t&>());
  members.emplace_back(std::move(key), std::move(value));
}

// 256 tokens, token i = byte i; token 256 = end of generation.
std::shared_ptr<const Vocab> byte_vocab();

// Does the grammar accept exactly this text (fed at once, then required to be able to end)?
bool matches(const std::shared_ptr<const Grammar>& g, std::string_view text);
bool matches_gbnf(const std::string& gbnf, std::string_view text);

// The Qwen2.5-0.5B-Instruct vocabulary (151936 ids) with token bytes decoded from byte-level BPE;
// nullopt when the shared model files are absent.
struct QwenVocab {
  std::shared_ptr<const Vocab> vocab;
  std::vector<std::string> bytes;  // per id
  std::vector<int> eog;
};
std::optional<QwenVocab> load_qwen_vocab();

// A random text the matcher allows, sampled token by token among the tokens fill_mask allows
// (ids `eog` end it; they are allowed only where the grammar may end). Past half of max_steps the
// walk prefers end-of-generation and tokens holding a closing '"', ']' or '}', so most walks
// finish. nullopt: the matcher allowed no token (it died) or max_steps passed; `died` tells which.
std::optional<std::string> random_walk(Matcher m, const Vocab& vocab, const std::vector<int>& eog, std::mt19937_64& rng,
                                       int max_steps, bool* died = nullptr);

}  // namespace anelm::grammar::testing
