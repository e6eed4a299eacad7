// Internal: collects rules while a GBNF text is parsed, expands repetitions into rules, checks the
// result (undefined rules, left recursion, size) and lowers it to the flat Grammar.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grammar/rules.h"

namespace anelm::grammar {

// Limits that keep a hostile grammar from exhausting memory or time.
inline constexpr size_t kMaxGrammarBytes = 512 * 1024;
inline constexpr int kMaxRepetition = 10000;
inline constexpr int kMaxNesting = 64;
inline constexpr size_t kMaxRules = 200000;    // named and generated together
inline constexpr size_t kMaxElements = 2000000;

using Sequence = std::vector<Elem>;

class GrammarBuilder {
 public:
  // The id of a named rule, created undefined on first use; `where` is kept for error messages.
  uint32_t named_rule(const std::string& name, const std::string& where);
  void define(uint32_t rule, std::vector<Sequence> alts, const std::string& where);
  // A rule generated for a group or repetition inside rule `owner`.
  uint32_t generated_rule(const std::string& owner, const char* what, std::vector<Sequence> alts);
  uint32_t add_charset(CharSet set);
  // `unit` repeated min..max times (max < 0: unbounded), as a sequence of elements.
  Sequence repeat(const Sequence& unit, int min, int max, const std::string& owner);
  std::shared_ptr<Grammar> finish(const std::string& root);

 private:
  struct Rule {
    std::string name;
    std::vector<Sequence> alts;
    bool defined = false;
    std::string first_use;  // "line L:C in rule 'x'" of the first reference
  };
  uint32_t add_rule(std::string name);
  Elem as_element(const Sequence& unit, const std::string& owner);
  void count_elements(size_t n);
  void check_left_recursion() const;

  std::vector<Rule> rules_;
  std::map<std::string, uint32_t> by_name_;
  std::vector<CharSet> charsets_;
  size_t elements_ = 0;
};

}  // namespace anelm::grammar
