// The GBNF of forced kQwenXml calls (xml_call_grammar.h).
#include "chat/xml_call_grammar.h"

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
// a tail call for the matcher (its stack stays flat). Returns the rule of state 0.
std::string add_free_text_rules(grammar::SchemaConverter& conv) {
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
  return state(0);
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
std::string parameters_rule(grammar::SchemaConverter& conv, const json& fn, const std::string& text,
                            const grammar::SchemaOptions& options, std::size_t tool_index) {
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
    if (types != 0 && !(types & detail::kXmlString)) {
      grammar::SchemaOptions o = options;
      o.where = "tools[" + std::to_string(tool_index) + "].function.parameters.properties." + it.key();
      value = conv.add_schema(fn["name"].get<std::string>() + "-" + it.key(), it.value(), o);
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
  std::string text;  // the free-text rule, added on first use
  if (tools.is_array()) {
    for (std::size_t i = 0; i < tools.size(); ++i) {
      const json* fn = function_of(tools[i]);
      if (!fn) continue;
      const std::string name = (*fn)["name"].get<std::string>();
      if (!only_name.empty() && name != only_name) continue;
      if (text.empty()) text = add_free_text_rules(conv);
      const std::string rule = conv.fresh_name("xml-fn-" + name);
      conv.add_rule(rule, gbnf_literal("<function=" + name + ">\n") + " " +
                              parameters_rule(conv, *fn, text, options, i) + " " + gbnf_literal("</function>\n"));
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
