// Grammar-constrained sampling: GBNF grammars, JSON Schema -> GBNF, and the per-step token mask.
//
// The engine keeps one Matcher per constrained generation. Each step it asks allows(sampled) (the
// fast path); only when that is refused does it call fill_mask() over the whole vocabulary, then
// accept_token(). fill_mask walks a byte trie of the vocabulary once, pruning a subtree as soon as
// a byte is refused, and memoises the byte transitions of grammar states, so a typical JSON state
// costs a few milliseconds for a 152k-token vocabulary.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace anelm::grammar {

// GBNF syntax error, undefined rule, left recursion, size bounds. The message says what and where
// (rule name, line:col).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Unsupported or invalid JSON Schema. The message names the keyword and its JSON pointer path.
struct SchemaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Grammar;  // compiled, immutable, shareable across threads (grammar/rules.h)

// Parses llama.cpp's GBNF dialect: `name ::= ...` rules, `|`, `( )`, "literals" with escapes,
// [char classes], `.`, * + ? {m} {m,} {m,n} {,n}, # comments. Throws Error.
std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, std::string_view root = "root");

// Builds one GBNF text from JSON schemas and hand-written rules, so a tool-call wrapper can embed
// several schemas in one grammar.
class SchemaConverter {
 public:
  // Adds the rules for `schema` under a rule named from `name`; returns the rule name to reference
  // (it may differ from `name` when that is taken or holds characters GBNF names cannot).
  // Throws SchemaError.
  std::string add_schema(const std::string& name, const nlohmann::ordered_json& schema);
  // Adds (or replaces) a rule with a raw GBNF body.
  void add_rule(const std::string& name, const std::string& body);
  // All rules; "root" must have been added by the caller (or by json_schema_to_gbnf).
  std::string gbnf() const;

  // Internal helpers for the schema walker (grammar/json_schema.cpp).
  std::string fresh_name(const std::string& base);          // a rule name not yet used
  bool has_rule(const std::string& name) const;
  void ensure_rule(const std::string& name, const std::string& body);  // adds only when absent

 private:
  std::vector<std::pair<std::string, std::string>> rules_;  // in insertion order
  std::map<std::string, size_t> index_;
};

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);  // root = the schema
std::string json_object_gbnf();                                         // any JSON object
std::string gbnf_literal(std::string_view text);  // text as a GBNF string literal, quotes included

struct VocabTrie;  // grammar/vocab_trie.h

// The vocabulary as the grammar sees it, built once per model (a byte trie over token bytes).
class Vocab {
 public:
  // token_bytes[i]: the exact bytes token i produces (empty for special/control tokens);
  // usable[i]: false for tokens never allowed under a grammar; eog: end-of-generation ids (allowed
  // exactly when the grammar can end).
  Vocab(std::vector<std::string> token_bytes, std::vector<bool> usable, std::vector<int> eog);
  int size() const { return static_cast<int>(bytes_.size()); }
  const std::string& token_bytes(int id) const { return bytes_[static_cast<size_t>(id)]; }  // id in [0, size())

 private:
  friend class Matcher;
  enum Kind : uint8_t { kNever = 0, kText = 1, kEog = 2 };
  std::vector<std::string> bytes_;
  std::vector<uint8_t> kind_;
  std::shared_ptr<const VocabTrie> trie_;
};

class StateStore;  // grammar/state_store.h

// The per-request state: which bytes may come next. Not thread-safe; one per generation. Copies
// are cheap and share a memo of grammar transitions, so a copy must stay on the same thread.
class Matcher {
 public:
  Matcher(std::shared_ptr<const Grammar> g, std::shared_ptr<const Vocab> v);

  bool allows(int token) const;                     // bytes keep the grammar alive (EOG: can end)
  int fill_mask(std::span<uint8_t> allowed) const;  // allowed[i] = 1/0 per token; returns count
  bool accept_token(int token);                     // false (state unchanged) if not allowed
  bool accept_bytes(std::string_view bytes);        // false (state unchanged) if refused
  bool can_end() const;                             // the grammar accepts the text so far
  bool done() const;                                // can_end and nothing else may come

 private:
  int32_t walk(std::string_view bytes) const;  // state after bytes, or -1 when refused
  void maybe_compact();

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const Vocab> vocab_;
  std::shared_ptr<StateStore> store_;
  int32_t state_ = -1;
};

}  // namespace anelm::grammar
