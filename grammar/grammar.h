// Grammar-constrained sampling: GBNF grammars, JSON Schema -> GBNF, and the per-step token mask.
//
// The engine keeps one Matcher per constrained generation. Each step it asks allows(sampled) (the
// fast path); only when that is refused does it call fill_mask() over the whole vocabulary, then
// accept_token(). fill_mask walks a byte trie of the vocabulary once, pruning a subtree as soon as
// a byte is refused, and memoises the byte transitions of grammar states, so a typical JSON state
// costs a few milliseconds for a 152k-token vocabulary.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
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

// Compilation was stopped by its caller (the client hung up). Running past the deadline is a plain
// Error (a limit, reported to the client).
struct Cancelled : Error {
  using Error::Error;
};

// Limits on what one grammar may cost; every one is checked while the grammar is built, so a hostile
// input is refused as soon as it crosses one (the message names it), never after the work is done.
inline constexpr size_t kMaxGrammarBytes = 512 * 1024;        // a client's GBNF text
inline constexpr size_t kMaxSchemaGrammarBytes = 32u << 20;   // GBNF generated from schemas and tools
inline constexpr int kMaxRepetition = 10000;                  // {m,n} counts; minItems/maxItems/…Length
inline constexpr int kMaxNesting = 64;                        // ( ) groups inside one GBNF rule
inline constexpr size_t kMaxRules = 200000;                   // named and generated together
inline constexpr size_t kMaxElements = 2000000;               // after expanding repetitions
inline constexpr int kMaxSchemaDepth = 128;                   // nested schemas (objects, arrays, anyOf…)
inline constexpr size_t kMaxPatternBytes = 4096;              // one `pattern` regex

// Cancellation for compilation: work loops call tick(); every few milliseconds of work it asks
// `cancelled` (e.g. "has the client hung up?") and checks the deadline. Not thread-safe; one per
// compilation.
class CompileBudget {
 public:
  using Clock = std::chrono::steady_clock;
  CompileBudget() = default;
  CompileBudget(std::function<bool()> cancelled, Clock::duration max_time)
      : cancelled_(std::move(cancelled)), deadline_(Clock::now() + max_time), max_time_(max_time) {}
  void tick(size_t work = 1) {
    ticks_ += work;
    if (ticks_ >= 4096) poll();
  }
  void poll();  // checks now; throws Cancelled (cancelled) or Error (deadline)

 private:
  std::function<bool()> cancelled_;
  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::duration max_time_{};
  Clock::time_point last_ask_{};
  size_t ticks_ = 0;
};

class Grammar;  // compiled, immutable, shareable across threads (grammar/rules.h)

struct GbnfOptions {
  size_t max_bytes = kMaxGrammarBytes;
  CompileBudget* budget = nullptr;  // optional
};

// Parses llama.cpp's GBNF dialect: `name ::= ...` rules, `|`, `( )`, "literals" with escapes,
// [char classes], `.`, * + ? {m} {m,} {m,n} {,n}, # comments. Time and memory linear in the text
// (after repetitions are expanded). Alternatives that start with the same bytes are merged into a
// trie, so an alternation of many literals costs the matcher one parse stack, not one per literal.
// Throws Error (Cancelled when the budget says so).
std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, std::string_view root = "root",
                                          const GbnfOptions& options = {});

// How a schema keyword the converter cannot enforce is treated.
struct SchemaOptions {
  // true: SchemaError naming the keyword and its path. false: the keyword is dropped (the rest of
  // the schema still constrains the output) and a note is added to SchemaConverter::relaxed().
  bool strict = true;
  std::string where;  // prefix of every message and note, e.g. "tools[2].function.parameters"
};

// Builds one GBNF text from JSON schemas and hand-written rules, so a tool-call wrapper can embed
// several schemas in one grammar.
class SchemaConverter {
 public:
  // Adds the rules for `schema` under a rule named from `name`; returns the rule name to reference
  // (it may differ from `name` when that is taken or holds characters GBNF names cannot).
  // Throws SchemaError.
  std::string add_schema(const std::string& name, const nlohmann::ordered_json& schema,
                         const SchemaOptions& options = {});
  // Adds (or replaces) a rule with a raw GBNF body.
  void add_rule(const std::string& name, const std::string& body);
  // All rules; "root" must have been added by the caller (or by json_schema_to_gbnf).
  std::string gbnf() const;
  // What non-strict add_schema calls dropped, one note per keyword and path.
  const std::vector<std::string>& relaxed() const { return relaxed_; }
  // Optional: ticked while schemas are converted. Generated text is bounded by max_bytes.
  void set_budget(CompileBudget* budget) { budget_ = budget; }
  void set_max_bytes(size_t n) { max_bytes_ = n; }

  // Internal helpers for the schema walker (grammar/json_schema.cpp).
  std::string fresh_name(const std::string& base);          // a rule name not yet used
  bool has_rule(const std::string& name) const;
  void ensure_rule(const std::string& name, const std::string& body);  // adds only when absent
  void note_relaxed(std::string note) { relaxed_.push_back(std::move(note)); }
  CompileBudget* budget() const { return budget_; }

 private:
  void count_bytes(size_t n);

  std::vector<std::pair<std::string, std::string>> rules_;  // in insertion order
  std::unordered_map<std::string, size_t> index_;
  // Next numeric suffix to try per sanitised base name: fresh_name is O(1), not a scan of every
  // suffix taken so far (that scan made schemas with many properties quadratic).
  std::unordered_map<std::string, int> next_suffix_;
  std::vector<std::string> relaxed_;
  CompileBudget* budget_ = nullptr;
  size_t bytes_ = 0, max_bytes_ = kMaxSchemaGrammarBytes;
};

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const SchemaOptions& options = {});
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
