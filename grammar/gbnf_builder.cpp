// Rule collection, repetition expansion, checks and lowering for parsed GBNF.
#include "grammar/gbnf_builder.h"

#include <functional>

namespace anelm::grammar {

uint32_t GrammarBuilder::add_rule(std::string name) {
  if (rules_.size() >= kMaxRules) throw Error("grammar too large: more than " + std::to_string(kMaxRules) + " rules");
  rules_.push_back(Rule{std::move(name), {}, false, {}});
  return static_cast<uint32_t>(rules_.size() - 1);
}

uint32_t GrammarBuilder::named_rule(const std::string& name, const std::string& where) {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  uint32_t id = add_rule(name);
  rules_[id].first_use = where;
  by_name_[name] = id;
  return id;
}

void GrammarBuilder::count_elements(size_t n) {
  elements_ += n;
  if (elements_ > kMaxElements) {
    throw Error("grammar too large: more than " + std::to_string(kMaxElements) + " elements after expanding repetitions");
  }
}

void GrammarBuilder::define(uint32_t rule, std::vector<Sequence> alts, const std::string& where) {
  Rule& r = rules_[rule];
  if (r.defined) throw Error("rule '" + r.name + "' defined twice (" + where + ")");
  for (const auto& a : alts) count_elements(a.size() + 1);
  r.alts = std::move(alts);
  r.defined = true;
}

uint32_t GrammarBuilder::generated_rule(const std::string& owner, const char* what, std::vector<Sequence> alts) {
  // The '/' cannot appear in a GBNF name, so generated rules never collide with written ones.
  uint32_t id = add_rule(owner + "/" + what + std::to_string(rules_.size()));
  for (const auto& a : alts) count_elements(a.size() + 1);
  rules_[id].alts = std::move(alts);
  rules_[id].defined = true;
  return id;
}

uint32_t GrammarBuilder::add_charset(CharSet set) {
  charsets_.push_back(std::move(set));
  return static_cast<uint32_t>(charsets_.size() - 1);
}

Elem GrammarBuilder::as_element(const Sequence& unit, const std::string& owner) {
  if (unit.size() == 1) return unit[0];
  return Elem{ElemKind::Ref, generated_rule(owner, "group", {unit})};
}

Sequence GrammarBuilder::repeat(const Sequence& unit, int min, int max, const std::string& owner) {
  Elem x = as_element(unit, owner);
  count_elements(static_cast<size_t>(min));
  Sequence out(static_cast<size_t>(min), x);
  if (max < 0) {
    // x* as a right-recursive rule; the tail call keeps the matcher's stack flat.
    uint32_t star = add_rule(owner + "/star" + std::to_string(rules_.size()));
    rules_[star].alts = {{x, Elem{ElemKind::Ref, star}}, {}};
    rules_[star].defined = true;
    count_elements(3);
    out.push_back(Elem{ElemKind::Ref, star});
  } else if (max > min) {
    // Up to k more: opt_k ::= x opt_{k-1} | "" — one rule per optional copy, so linear in k.
    uint32_t prev = generated_rule(owner, "opt", {{x}, {}});
    for (int k = 2; k <= max - min; ++k) {
      prev = generated_rule(owner, "opt", {{x, Elem{ElemKind::Ref, prev}}, {}});
    }
    out.push_back(Elem{ElemKind::Ref, prev});
  }
  return out;
}

void GrammarBuilder::check_left_recursion() const {
  // A rule may reach itself without consuming a byte when it sits, after only nullable elements,
  // at the start of its own expansion. The matcher would loop forever on such a rule.
  std::vector<bool> nullable(rules_.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules_.size(); ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : rules_[r].alts) {
        bool all = true;
        for (const auto& e : alt) all = all && e.kind == ElemKind::Ref && nullable[e.value];
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<uint32_t>> corner(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r) {
    for (const auto& alt : rules_[r].alts) {
      for (const auto& e : alt) {
        if (e.kind != ElemKind::Ref) break;
        corner[r].push_back(e.value);
        if (!nullable[e.value]) break;
      }
    }
  }
  // Iterative depth-first search (deep rule chains must not overflow the C++ stack).
  std::vector<uint8_t> color(rules_.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<uint32_t, size_t>> path;
  for (uint32_t start = 0; start < rules_.size(); ++start) {
    if (color[start]) continue;
    path.push_back({start, 0});
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i == corner[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      uint32_t s = corner[r][i++];
      if (color[s] == 1) {
        std::string cycle;
        bool on = false;
        for (auto& p : path) {
          on = on || p.first == s;
          if (on) cycle += "'" + rules_[p.first].name + "' -> ";
        }
        throw Error("left recursion (a rule can reach itself without consuming input): " + cycle + "'" + rules_[s].name + "'");
      }
      if (color[s] == 0) {
        color[s] = 1;
        path.push_back({s, 0});
      }
    }
  }
}

std::shared_ptr<Grammar> GrammarBuilder::finish(const std::string& root) {
  for (const auto& r : rules_) {
    if (!r.defined) throw Error("undefined rule '" + r.name + "' (" + r.first_use + ")");
  }
  auto it = by_name_.find(root);
  if (it == by_name_.end()) throw Error("grammar has no rule '" + root + "' to start from");
  check_left_recursion();

  auto g = std::make_shared<Grammar>();
  g->root = it->second;
  g->charsets = std::move(charsets_);
  g->elems.reserve(elements_);
  for (const auto& r : rules_) {
    g->rule_alts.push_back(static_cast<uint32_t>(g->alt_starts.size()));
    g->rule_names.push_back(r.name);
    for (const auto& alt : r.alts) {
      g->alt_starts.push_back(static_cast<uint32_t>(g->elems.size()));
      g->elems.insert(g->elems.end(), alt.begin(), alt.end());
      g->elems.push_back(Elem{ElemKind::End, 0});
    }
  }
  g->rule_alts.push_back(static_cast<uint32_t>(g->alt_starts.size()));
  return g;
}

}  // namespace anelm::grammar
