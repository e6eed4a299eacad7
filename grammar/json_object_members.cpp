// Two layouts of one language. The plain member chain (llama.cpp's converter writes the same) keeps
// one live parse stack per member that may come next; above kBucketedFrom members the bucketed
// layout keeps about 2 sqrt(n).
#include "grammar/json_object_members.h"

#include <algorithm>
#include <cmath>

namespace anelm::grammar {
namespace {

// Objects of more than this many declared members are written in buckets.
constexpr size_t kBucketedFrom = 64;
const std::string kSep = "ws \",\" ws ";

std::string then(const std::string& rule) { return rule.empty() ? std::string() : " " + rule; }

std::string object_rule(const std::string& first, size_t n_required, const std::string& hint, const DefineRule& define) {
  if (first.empty()) return define(hint, "\"{\" ws \"}\"");
  return define(hint, "\"{\" ws " + (n_required ? first + " ws" : "( " + first + " ws )?") + " \"}\"");
}

// The plain chain. rest[i]: members i.. after at least one member was written (each starts with a
// comma); first[i]: a non-empty run of members i.. with nothing written before.
std::string chain(const std::vector<ObjectMember>& m, const std::string& extra_rest, const std::string& extra_first,
                  const std::string& hint, const DefineRule& define, const std::function<void()>& tick) {
  const size_t n = m.size();
  std::vector<std::string> rest(n + 1), first(n + 1);
  rest[n] = extra_rest;
  first[n] = extra_first;
  for (size_t i = n; i-- > 0;) {
    tick();
    const std::string after = then(rest[i + 1]);
    const std::string sep = kSep + m[i].rule;
    rest[i] = define(hint + "-rest", (m[i].required ? sep : "( " + sep + " )?") + after);
    const std::string with = m[i].rule + after;
    first[i] = define(hint + "-first", m[i].required || first[i + 1].empty() ? with : with + " | " + first[i + 1]);
  }
  return first[0];
}

// The same language for many members. In the plain chain every member that may come next is a live
// parse stack of its own, so after `{` or a member of a 2,000-property object the matcher advanced
// ~2,000 stacks per byte (31% of a decode step in masks). Here the members are cut into buckets of
// about sqrt(n): a bucket is entered through one rule whose alternatives begin with their key bytes
// (the grammar builder merges them into one trie), and buckets are chained. The live stacks are the
// rest of the current bucket plus one per later bucket.
std::string buckets(const std::vector<ObjectMember>& m, const std::string& extra_rest, const std::string& extra_first,
                    const std::string& hint, const DefineRule& define, const std::function<void()>& tick) {
  const size_t n = m.size();
  const size_t g = std::max<size_t>(16, static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(n)))));
  const size_t q = (n + g - 1) / g;
  // rest_b[c]: members of buckets c.. after something was written; first_b[c]: a non-empty run of
  // them with nothing written before; required_from[c]: bucket c or a later one has a required member.
  std::vector<std::string> rest_b(q + 1), first_b(q + 1);
  std::vector<bool> required_from(q + 1, false);
  rest_b[q] = extra_rest;
  first_b[q] = extra_first;
  for (size_t c = q; c-- > 0;) {
    const size_t lo = c * g, hi = std::min(n, lo + g);
    bool bucket_required = false;
    for (size_t i = lo; i < hi; ++i) bucket_required = bucket_required || m[i].required;
    required_from[c] = bucket_required || required_from[c + 1];
    // Inside the bucket: in[i - lo] = members i.. of the bucket, then the later buckets.
    std::vector<std::string> in(hi - lo + 1);
    in[hi - lo] = rest_b[c + 1];
    for (size_t i = hi; i-- > lo + 1;) {
      tick();
      in[i - lo] = define(hint + "-rest", (m[i].required ? kSep + m[i].rule : "( " + kSep + m[i].rule + " )?") + then(in[i + 1 - lo]));
    }
    // Entering the bucket at member j skips the ones before it: none of them may be required.
    std::string enter;
    for (size_t j = lo; j < hi; ++j) {
      enter += (enter.empty() ? "" : " | ") + m[j].body + then(in[j + 1 - lo]);
      if (m[j].required) break;
    }
    enter = define(hint + "-enter", enter);
    first_b[c] = bucket_required || first_b[c + 1].empty() ? enter : define(hint + "-first", enter + " | " + first_b[c + 1]);
    rest_b[c] = define(hint + "-rest", required_from[c] ? kSep + first_b[c] : "( " + kSep + first_b[c] + " )?");
  }
  return first_b[0];
}

}  // namespace

std::string object_members_gbnf(const std::vector<ObjectMember>& members, const std::string& extra_kv,
                                const std::string& hint, const DefineRule& define, const std::function<void()>& tick) {
  std::string extra_rest, extra_first;
  if (!extra_kv.empty()) {
    extra_rest = define(hint + "-rest", "( " + kSep + extra_kv + " )*");
    extra_first = define(hint + "-first", extra_kv + " " + extra_rest);
  }
  const size_t n_required = static_cast<size_t>(
      std::count_if(members.begin(), members.end(), [](const ObjectMember& m) { return m.required; }));
  const std::string first = members.size() > kBucketedFrom
                                ? buckets(members, extra_rest, extra_first, hint, define, tick)
                                : chain(members, extra_rest, extra_first, hint, define, tick);
  return object_rule(first, n_required, hint, define);
}

}  // namespace anelm::grammar
