// The GBNF of forced kQwenXml calls (xml_call_grammar.h).
#include "chat/xml_call_grammar.h"

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "chat/xml_args.h"
#include "grammar/grammar.h"

namespace anelm::chat {
namespace {

using json = nlohmann::ordered_json;
using grammar::gbnf_literal;

constexpr std::string_view kValueClose = "</parameter>";

// Free text that does not contain "</parameter>" (the parser ends a value at its first one): the
// states of a matcher of that marker, one rule per number of marker bytes just seen. '<' occurs
// only at the marker's start, so a mismatch falls back to state 0, or 1 on '<'. Right recursion is
// a tail call for the matcher (its stack stays flat). Returns the rules of the states: [0] is the
// value, [1] the rest of a value whose last byte was '<'.
std::vector<std::string> add_free_text_rules(grammar::SchemaConverter& conv) {
  std::vector<std::string> names;
  for (std::size_t k = 0; k < kValueClose.size(); ++k) names.push_back(conv.fresh_name("xml-text-" + std::to_string(k)));
  auto state = [&](std::size_t k) { return names[k]; };
  for (std::size_t k = 0; k < kValueClose.size(); ++k) {
    std::string body;
    if (k == 0) {
      body = "[^<] " + state(0) + " | \"<\" " + state(1);
    } else {
      const char next = kValueClose[k];  // '/', 'p', ... '>': the next marker byte, refused at the end
      if (k + 1 < kValueClose.size()) body = gbnf_literal(std::string_view(&next, 1)) + " " + state(k + 1) + " | ";
      body += "\"<\" " + state(1) + " | [^<" + std::string(1, next) + "] " + state(0);
    }
    conv.add_rule(state(k), body + " | \"\"");
  }
  return names;
}

// A count keyword (minLength, maxLength) as the JSON-schema grammar reads it: a non-negative
// integer up to kMaxRepetition, else dropped with a note.
std::optional<std::size_t> count(grammar::SchemaConverter& conv, const json& schema, const char* key,
                                 const std::string& where) {
  auto it = schema.find(key);
  if (it == schema.end()) return std::nullopt;
  const json& v = *it;
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0) ||
      v.get<uint64_t>() > static_cast<uint64_t>(grammar::kMaxRepetition)) {
    conv.note_relaxed(where + "/" + key + ": must be a non-negative integer up to " +
                      std::to_string(grammar::kMaxRepetition) + " (not enforced)");
    return std::nullopt;
  }
  return static_cast<std::size_t>(v.get<uint64_t>());
}

// Raw text of lo..hi characters (code points, as minLength/maxLength count a JSON string's), no
// upper bound without hi. Counting and the "</parameter>" exclusion do not combine into one
// repeated unit, so the positions are unrolled, two states each (last character '<' or not), and
// the bounded part may not contain "</" at all (a simple, stricter exclusion); past it, without
// hi, the value goes on as free text. Rules: 2 * (max(lo, hi) + 1).
std::string add_bounded_text_rules(grammar::SchemaConverter& conv, std::size_t lo, std::optional<std::size_t> hi,
                                   const std::vector<std::string>& free) {
  const std::size_t n = hi ? *hi : lo;
  std::vector<std::string> plain(n + 1), after_lt(n + 1);
  for (std::size_t k = 0; k <= n; ++k) {
    plain[k] = conv.fresh_name("xml-len");
    after_lt[k] = conv.fresh_name("xml-len-lt");
  }
  for (std::size_t k = 0; k <= n; ++k) {
    if (k == n && !hi) {
      conv.add_rule(plain[k], free[0]);
      conv.add_rule(after_lt[k], free[1]);
      continue;
    }
    std::string a, b;
    if (k < n) {
      const std::string next = " " + plain[k + 1] + " | \"<\" " + after_lt[k + 1];
      a = "[^<]" + next;
      b = "[^</]" + next;
    }
    if (k >= lo) {
      a += a.empty() ? "\"\"" : " | \"\"";
      b += b.empty() ? "\"\"" : " | \"\"";
    }
    conv.add_rule(plain[k], a);
    conv.add_rule(after_lt[k], b);
  }
  return plain[0];
}

// The raw value of a string-only parameter: exactly one of its enum / const strings, or text of
// minLength..maxLength characters; "" when the schema bounds neither (free text). `pattern` and
// `format` are not enforced on raw text (noted).
// The rules of each (minLength, maxLength) pair already added in this grammar, shared by the
// parameters that repeat it (a tool list with maxLength 10000 on many parameters would otherwise
// cross kMaxRules).
using BoundedRules = std::map<std::pair<std::size_t, std::size_t>, std::string>;  // (lo, hi or SIZE_MAX)

std::string string_value_rule(grammar::SchemaConverter& conv, const json& schema, const std::vector<std::string>& free,
                              const std::string& where, BoundedRules& bounded) {
  if (!schema.is_object()) return "";
  std::vector<json> values;
  bool listed = false;
  if (auto c = schema.find("const"); c != schema.end()) {
    values.push_back(*c);
    listed = true;
  } else if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    values.assign(e->begin(), e->end());
    listed = true;
  }
  if (listed) {
    std::string alts;
    for (const json& v : values) {
      if (!v.is_string()) continue;  // a non-string member is never a string-only parameter's value
      const std::string& text = v.get_ref<const std::string&>();
      if (text.find(kValueClose) != std::string::npos) continue;  // the parser would cut it short
      alts += (alts.empty() ? "" : " | ") + gbnf_literal(text);
    }
    if (!alts.empty()) return "( " + alts + " )";
    conv.note_relaxed(where + ": no enum/const string can be written as a raw value (not enforced)");
  }
  for (const char* k : {"pattern", "format"})
    if (schema.contains(k)) conv.note_relaxed(where + "/" + k + ": not enforced on a raw XML parameter value");
  const auto lo = count(conv, schema, "minLength", where), hi = count(conv, schema, "maxLength", where);
  if (!lo && !hi) return "";
  if (lo && hi && *lo > *hi) {
    conv.note_relaxed(where + ": 'minLength' above 'maxLength' (not enforced)");
    return "";
  }
  std::string& rule = bounded[{lo.value_or(0), hi.value_or(SIZE_MAX)}];
  if (rule.empty()) rule = add_bounded_text_rules(conv, lo.value_or(0), hi, free);
  return rule;
}

const json* function_of(const json& tool) {
  if (!tool.is_object()) return nullptr;
  auto it = tool.find("function");
  const json* fn = (it != tool.end() && it->is_object()) ? &*it : &tool;
  auto name = fn->find("name");
  return name != fn->end() && name->is_string() ? fn : nullptr;
}

bool is_required(const json& parameters, const std::string& name) {
  auto req = parameters.find("required");
  if (req == parameters.end() || !req->is_array()) return false;
  for (const json& r : *req)
    if (r.is_string() && r.get_ref<const std::string&>() == name) return true;
  return false;
}

// The parameters of one function, as a GBNF sequence.
std::string parameters_rule(grammar::SchemaConverter& conv, const json& fn, const std::vector<std::string>& free,
                            const grammar::SchemaOptions& options, std::size_t tool_index, BoundedRules& bounded) {
  const std::string& text = free[0];
  const std::string close = gbnf_literal("\n" + std::string(kValueClose) + "\n");
  auto params = fn.find("parameters");
  const json* props = nullptr;
  if (params != fn.end() && params->is_object()) {
    auto p = params->find("properties");
    if (p != params->end() && p->is_object() && !p->empty()) props = &*p;
  }
  if (!props) return "( \"<parameter=\" [^<>\\r\\n]+ \">\\n\" " + text + " " + close + " )*";
  std::string seq;
  for (auto it = props->begin(); it != props->end(); ++it) {
    const unsigned types = detail::xml_schema_types(it.value());
    std::string value = text;
    const std::string where = "tools[" + std::to_string(tool_index) + "].function.parameters.properties." + it.key();
    if (types != 0 && !(types & detail::kXmlString)) {
      grammar::SchemaOptions o = options;
      o.where = where;
      value = conv.add_schema(fn["name"].get<std::string>() + "-" + it.key(), it.value(), o);
    } else if (detail::xml_string_only(types)) {
      const std::string limited = string_value_rule(conv, it.value(), free, where, bounded);
      if (!limited.empty()) value = limited;
    }
    std::string element = gbnf_literal("<parameter=" + it.key() + ">\n") + " " + value + " " + close;
    if (!is_required(*params, it.key())) element = "( " + element + " )?";
    seq += (seq.empty() ? "" : " ") + element;
  }
  return seq;
}

}  // namespace

std::string add_xml_call_rules(grammar::SchemaConverter& conv, const json& tools, const std::string& only_name,
                               bool parallel, const grammar::SchemaOptions& options) {
  std::string alternatives;
  std::vector<std::string> text;  // the free-text rules, added on first use
  BoundedRules bounded;
  if (tools.is_array()) {
    for (std::size_t i = 0; i < tools.size(); ++i) {
      const json* fn = function_of(tools[i]);
      if (!fn) continue;
      const std::string name = (*fn)["name"].get<std::string>();
      if (!only_name.empty() && name != only_name) continue;
      if (text.empty()) text = add_free_text_rules(conv);
      const std::string rule = conv.fresh_name("xml-fn-" + name);
      conv.add_rule(rule, gbnf_literal("<function=" + name + ">\n") + " " +
                              parameters_rule(conv, *fn, text, options, i, bounded) + " " + gbnf_literal("</function>\n"));
      alternatives += (alternatives.empty() ? "" : " | ") + rule;
    }
  }
  if (alternatives.empty()) {
    throw std::invalid_argument(only_name.empty() ? "no function tools to call"
                                                  : "tool_choice names an unknown function: " + only_name);
  }
  const std::string call = conv.fresh_name("xml-call");
  conv.add_rule(call, "\"<tool_call>\\n\" ( " + alternatives + " ) \"</tool_call>\"");
  if (!parallel) return call;
  const std::string calls = conv.fresh_name("xml-calls");
  conv.add_rule(calls, call + " ( \"\\n\" " + call + " )*");
  return calls;
}

}  // namespace anelm::chat
