// Internal: the member-order grammar of a JSON Schema object, once its members' rules exist.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace anelm::grammar {

struct ObjectMember {
  std::string key;
  std::string rule;  // the member's rule: `"key" ws ":" ws value`
  bool required = false;
  std::string body;  // that rule's text, for inlining where alternatives should share key bytes
};

// Adds a rule named from `hint` with `body`, returns its name (SchemaConverter::fresh_name).
using DefineRule = std::function<std::string(const std::string& hint, const std::string& body)>;

// The rule for the whole object "{ ... }": the members in declaration order, each at most once, the
// required ones present, then any number of `extra_kv` members (empty: none allowed). `tick` charges
// the compile budget once per member.
std::string object_members_gbnf(const std::vector<ObjectMember>& members, const std::string& extra_kv,
                                const std::string& hint, const DefineRule& define, const std::function<void()>& tick);

}  // namespace anelm::grammar
