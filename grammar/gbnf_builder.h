// Internal: collects rules while a GBNF text is parsed, expands repetitions into rules, checks the
// result (undefined rules, left recursion, size), merges alternatives that share leading bytes, and
// lowers it to the flat Grammar. Every step is linear in the rules and elements it is given.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/rules.h"

namespace anelm::grammar {

using Sequence = std::vector<Elem>;

class GrammarBuilder {
 public:
  // `where(offset, rule)` formats a source position for a message; called only on errors, so
  // positions cost nothing while parsing.
  using Where = std::function<std::string(size_t offset, std::string_view rule)>;
  GrammarBuilder(Where where, CompileBudget* budget) : where_(std::move(where)), budget_(budget) {}

  // The id of a named rule, created undefined on first use at `offset` inside rule `in_rule` (a
  // view of the grammar text, which outlives the builder).
  uint32_t named_rule(std::string_view name, size_t offset, std::string_view in_rule);
  void define(uint32_t rule, std::vector<Sequence> alts, size_t offset);
  // A rule generated for a group or repetition inside rule `owner`.
  uint32_t generated_rule(std::string_view owner, const char* what, std::vector<Sequence> alts);
  uint32_t add_charset(CharSet set);
  // `unit` repeated min..max times (max < 0: unbounded), as a sequence of elements.
  Sequence repeat(const Sequence& unit, int min, int max, std::string_view owner);
  std::shared_ptr<Grammar> finish(const std::string& root);

 private:
  struct Rule {
    std::string name;
    std::vector<Sequence> alts;
    bool defined = false;
    size_t first_use = 0;    // source offset of the first reference
    std::string_view used_in;  // the rule holding it
  };
  uint32_t add_rule(std::string name);
  Elem as_element(const Sequence& unit, std::string_view owner);
  void count_elements(size_t n);
  void factor_alternatives();
  void check_left_recursion() const;
  void tick(size_t n = 1) const {
    if (budget_) budget_->tick(n);
  }

  Where where_;
  CompileBudget* budget_;
  std::vector<Rule> rules_;
  // Transparent, so a reference looks its name up without building a string.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> by_name_;
  std::vector<CharSet> charsets_;
  size_t elements_ = 0;
};

}  // namespace anelm::grammar
