// Rule collection, repetition expansion, checks, alternative merging and lowering for parsed GBNF.
#include "grammar/gbnf_builder.h"

#include <algorithm>

namespace anelm::grammar {

uint32_t GrammarBuilder::add_rule(std::string name) {
  if (rules_.size() >= kMaxRules) throw Error("grammar too large: more than " + std::to_string(kMaxRules) + " rules");
  tick();
  rules_.push_back(Rule{std::move(name), {}, false, 0, {}});
  return static_cast<uint32_t>(rules_.size() - 1);
}

uint32_t GrammarBuilder::named_rule(std::string_view name, size_t offset, std::string_view in_rule) {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  uint32_t id = add_rule(std::string(name));
  rules_[id].first_use = offset;
  rules_[id].used_in = in_rule;
  by_name_.emplace(std::string(name), id);
  return id;
}

void GrammarBuilder::count_elements(size_t n) {
  elements_ += n;
  tick(n);
  if (elements_ > kMaxElements) {
    throw Error("grammar too large: more than " + std::to_string(kMaxElements) + " elements after expanding repetitions");
  }
}

void GrammarBuilder::define(uint32_t rule, std::vector<Sequence> alts, size_t offset) {
  Rule& r = rules_[rule];
  if (r.defined) throw Error("rule '" + r.name + "' defined twice (" + where_(offset, r.name) + ")");
  for (const auto& a : alts) count_elements(a.size() + 1);
  r.alts = std::move(alts);
  r.defined = true;
}

uint32_t GrammarBuilder::generated_rule(std::string_view owner, const char* what, std::vector<Sequence> alts) {
  // The '/' cannot appear in a GBNF name, so generated rules never collide with written ones.
  uint32_t id = add_rule(std::string(owner) + "/" + what + std::to_string(rules_.size()));
  for (const auto& a : alts) count_elements(a.size() + 1);
  rules_[id].alts = std::move(alts);
  rules_[id].defined = true;
  return id;
}

uint32_t GrammarBuilder::add_charset(CharSet set) {
  tick();
  charsets_.push_back(std::move(set));
  return static_cast<uint32_t>(charsets_.size() - 1);
}

Elem GrammarBuilder::as_element(const Sequence& unit, std::string_view owner) {
  if (unit.size() == 1) return unit[0];
  return Elem{ElemKind::Ref, generated_rule(owner, "group", {unit})};
}

Sequence GrammarBuilder::repeat(const Sequence& unit, int min, int max, std::string_view owner) {
  Elem x = as_element(unit, owner);
  count_elements(static_cast<size_t>(min));
  Sequence out(static_cast<size_t>(min), x);
  if (max < 0) {
    // x* as a right-recursive rule; the tail call keeps the matcher's stack flat.
    uint32_t star = add_rule(std::string(owner) + "/star" + std::to_string(rules_.size()));
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

void GrammarBuilder::factor_alternatives() {
  // Alternatives of one rule that begin with the same bytes share those bytes and continue in a new
  // rule holding their tails: "abc" | "abd" | "x" becomes "ab" t | "x" with t ::= "c" | "d". An
  // enum of 50,000 literals then costs the matcher one live parse stack per distinct next byte,
  // not one per literal. New rules are appended, so the loop visits them too; every element is
  // looked at a bounded number of times per trie level it belongs to (total: linear).
  std::vector<uint32_t> order;
  std::vector<uint8_t> grouped;
  for (size_t r = 0; r < rules_.size(); ++r) {
    if (rules_[r].alts.size() < 2) continue;
    std::vector<Sequence> alts = std::move(rules_[r].alts);
    tick(alts.size());
    order.clear();
    for (uint32_t i = 0; i < alts.size(); ++i)
      if (!alts[i].empty() && alts[i][0].kind == ElemKind::Byte) order.push_back(i);
    if (order.size() < 2) {
      rules_[r].alts = std::move(alts);
      continue;
    }
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return alts[a][0].value < alts[b][0].value; });
    grouped.assign(alts.size(), 0);
    std::vector<Sequence> out;
    for (size_t a = 0; a < order.size();) {
      size_t b = a + 1;
      while (b < order.size() && alts[order[b]][0].value == alts[order[a]][0].value) ++b;
      if (b - a >= 2) {
        const Sequence& lead = alts[order[a]];
        size_t k = 1;
        for (bool same = true; same && k < lead.size() && lead[k].kind == ElemKind::Byte; k += same) {
          for (size_t j = a + 1; j < b && same; ++j) {
            const Sequence& s = alts[order[j]];
            same = k < s.size() && s[k].kind == ElemKind::Byte && s[k].value == lead[k].value;
          }
        }
        tick((b - a) * k);
        Sequence head(lead.begin(), lead.begin() + static_cast<std::ptrdiff_t>(k));
        std::vector<Sequence> tails;
        tails.reserve(b - a);
        for (size_t j = a; j < b; ++j) {
          Sequence& s = alts[order[j]];
          tails.emplace_back(s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
          grouped[order[j]] = 1;
        }
        const uint32_t sub = add_rule(rules_[r].name + "/trie" + std::to_string(rules_.size()));
        rules_[sub].alts = std::move(tails);
        rules_[sub].defined = true;
        head.push_back(Elem{ElemKind::Ref, sub});
        out.push_back(std::move(head));
      }
      a = b;
    }
    for (uint32_t i = 0; i < alts.size(); ++i)
      if (!grouped[i]) out.push_back(std::move(alts[i]));
    rules_[r].alts = std::move(out);
  }
}

void GrammarBuilder::check_left_recursion() const {
  // A rule may reach itself without consuming a byte when it sits, after only nullable elements,
  // at the start of its own expansion. The matcher would loop forever on such a rule.
  // Nullable rules by a worklist (linear; a fixpoint loop over all rules is quadratic on chains).
  // Graphs are kept as flat edge lists (CSR): a vector per rule cost more than the search.
  const size_t n = rules_.size();
  std::vector<bool> nullable(n, false);
  std::vector<uint32_t> pending, alt_rule, queue;
  std::vector<std::pair<uint32_t, uint32_t>> uses;  // (referenced rule, refs-only alternative)
  for (uint32_t r = 0; r < n; ++r) {
    tick(rules_[r].alts.size());
    for (const auto& alt : rules_[r].alts) {
      const bool refs_only = std::all_of(alt.begin(), alt.end(), [](const Elem& e) { return e.kind == ElemKind::Ref; });
      if (!refs_only) continue;
      if (alt.empty()) {
        if (!nullable[r]) nullable[r] = true, queue.push_back(r);
        continue;
      }
      const auto id = static_cast<uint32_t>(pending.size());
      pending.push_back(static_cast<uint32_t>(alt.size()));
      alt_rule.push_back(r);
      for (const auto& e : alt) uses.emplace_back(e.value, id);
    }
  }
  const auto by_rule = [n](std::vector<std::pair<uint32_t, uint32_t>>& edges, std::vector<uint32_t>& start,
                           std::vector<uint32_t>& to) {
    start.assign(n + 1, 0);
    for (const auto& e : edges) ++start[e.first + 1];
    for (size_t i = 0; i < n; ++i) start[i + 1] += start[i];
    to.resize(edges.size());
    std::vector<uint32_t> at(start.begin(), start.end() - 1);
    for (const auto& e : edges) to[at[e.first]++] = e.second;
  };
  std::vector<uint32_t> user_start, users;
  by_rule(uses, user_start, users);
  while (!queue.empty()) {
    const uint32_t v = queue.back();
    queue.pop_back();
    for (uint32_t k = user_start[v]; k < user_start[v + 1]; ++k) {
      const uint32_t id = users[k];
      if (--pending[id] == 0 && !nullable[alt_rule[id]]) {
        nullable[alt_rule[id]] = true;
        queue.push_back(alt_rule[id]);
      }
    }
  }
  std::vector<std::pair<uint32_t, uint32_t>> corners;  // (rule, a rule at its left corner)
  for (uint32_t r = 0; r < n; ++r) {
    for (const auto& alt : rules_[r].alts) {
      for (const auto& e : alt) {
        if (e.kind != ElemKind::Ref) break;
        corners.emplace_back(r, e.value);
        if (!nullable[e.value]) break;
      }
    }
  }
  std::vector<uint32_t> corner_start, corner;
  by_rule(corners, corner_start, corner);
  // Iterative depth-first search (deep rule chains must not overflow the C++ stack).
  std::vector<uint8_t> color(rules_.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<uint32_t, size_t>> path;
  for (uint32_t start = 0; start < rules_.size(); ++start) {
    if (color[start]) continue;
    path.push_back({start, 0});
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i == corner_start[r + 1] - corner_start[r]) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      uint32_t s = corner[corner_start[r] + i++];
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
    if (!r.defined) throw Error("undefined rule '" + r.name + "' (" + where_(r.first_use, r.used_in) + ")");
  }
  auto it = by_name_.find(root);
  if (it == by_name_.end()) throw Error("grammar has no rule '" + root + "' to start from");
  check_left_recursion();
  factor_alternatives();

  auto g = std::make_shared<Grammar>();
  g->root = it->second;
  g->charsets = std::move(charsets_);
  g->elems.reserve(elements_ + rules_.size());
  for (auto& r : rules_) {
    tick(r.alts.size());
    g->rule_alts.push_back(static_cast<uint32_t>(g->alt_starts.size()));
    g->rule_names.push_back(std::move(r.name));
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
