// Fixed JSON rules, GBNF quoting, and SchemaConverter's rule bookkeeping.
#include "grammar/json_primitives.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "grammar/utf8.h"

namespace anelm::grammar {
namespace {

struct Primitive {
  const char* name;
  const char* body;
  std::vector<const char*> uses;
};

// Whitespace between JSON tokens is bounded (one newline, then at most 20 blanks of indentation),
// so a weak model cannot spend its whole budget emitting blanks. Numbers have bounded digits for
// the same reason.
const std::vector<Primitive>& primitives() {
  static const std::vector<Primitive> kAll = {
      {"ws", R"(( " " | "\n" [ \t]{0,20} )?)", {}},
      {"json-char", R"([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ))", {}},
      {"json-string", R"("\"" json-char* "\"")", {"json-char"}},
      {"json-integer", R"("-"? ( "0" | [1-9] [0-9]{0,15} ))", {}},
      {"json-number", R"(json-integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?)", {"json-integer"}},
      {"json-boolean", R"("true" | "false")", {}},
      {"json-null", R"("null")", {}},
      {"json-member", R"(json-string ws ":" ws json-value)", {"json-string", "ws", "json-value"}},
      {"json-object", R"("{" ws ( json-member ( ws "," ws json-member )* ws )? "}")", {"json-member", "ws"}},
      {"json-array", R"("[" ws ( json-value ( ws "," ws json-value )* ws )? "]")", {"json-value", "ws"}},
      {"json-value", R"(json-object | json-array | json-string | json-number | json-boolean | json-null)",
       {"json-object", "json-array", "json-string", "json-number", "json-boolean", "json-null"}},
      // Only real calendar days (the day count of each month; 29 February is left out, since a
      // grammar cannot tell leap years cheaply) and no leap second: every text is a valid RFC 3339
      // date / time, as validators check them.
      {"json-date",
       R"([0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ))",
       {}},
      {"json-time",
       R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( [zZ] | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
       {}},
      {"json-date-time", R"(json-date [tT] json-time)", {"json-date", "json-time"}},
      {"json-uuid", R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})", {}},
      // Not in llama.cpp: conservative forms (a subset of RFC 5321 / RFC 3986 texts that validators
      // accept), with no characters JSON would need to escape.
      {"json-email", R"([a-zA-Z0-9_+-]{1,64} ( "." [a-zA-Z0-9_+-]{1,64} ){0,8} "@" [a-zA-Z0-9] [a-zA-Z0-9-]{0,62} ( "." [a-zA-Z0-9] [a-zA-Z0-9-]{0,62} ){1,8})", {}},
      {"json-uri", R"([a-zA-Z] [a-zA-Z0-9+.-]{0,31} ":" [a-zA-Z0-9._~!$&'()*+,;=:@/?#%-]{1,2000})", {}},
  };
  return kAll;
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    out += ok ? c : '-';
  }
  return out.empty() ? "schema" : out;
}

}  // namespace

std::string need_primitive(SchemaConverter& out, const std::string& name) {
  if (out.has_rule(name)) return name;
  for (const auto& p : primitives()) {
    if (name != p.name) continue;
    out.ensure_rule(p.name, p.body);  // first, so recursive uses see it present
    for (const char* u : p.uses) need_primitive(out, u);
    return name;
  }
  throw Error("no JSON primitive rule named '" + name + "'");
}

std::string SchemaConverter::fresh_name(const std::string& base) {
  const std::string clean = sanitize(base);
  std::string name = clean;
  if (index_.count(name)) {
    // Suffixes are taken in order per base, so this loop only skips names that a different base
    // produced (e.g. base "a-2" against "a" + "-2"): amortised O(1).
    int& next = next_suffix_[clean];
    if (next < 2) next = 2;
    do name = clean + "-" + std::to_string(next++);
    while (index_.count(name));
  }
  index_[name] = rules_.size();  // reserved now, body filled by add_rule
  rules_.emplace_back(name, "");
  count_bytes(name.size() + 6);
  return name;
}

void SchemaConverter::count_bytes(size_t n) {
  bytes_ += n;
  if (budget_) budget_->tick(1 + n / 64);
  if (bytes_ > max_bytes_) {
    throw Error("grammar too large: the schemas generate more than " + std::to_string(max_bytes_) +
                " bytes of grammar");
  }
}

bool SchemaConverter::has_rule(const std::string& name) const { return index_.count(name) != 0; }

void SchemaConverter::ensure_rule(const std::string& name, const std::string& body) {
  if (!has_rule(name)) add_rule(name, body);
}

void SchemaConverter::add_rule(const std::string& name, const std::string& body) {
  count_bytes(body.size());
  auto it = index_.find(name);
  if (it != index_.end()) {
    rules_[it->second].second = body;
    return;
  }
  index_[name] = rules_.size();
  rules_.emplace_back(name, body);
}

std::string SchemaConverter::gbnf() const {
  std::string s;
  s.reserve(bytes_ + rules_.size() * 8);
  for (const auto& [name, body] : rules_) s += name + " ::= " + body + "\n";
  return s;
}

std::string gbnf_literal(std::string_view text) {
  std::string s = "\"";
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      size_t start = i;
      if (decode_utf8(text, i) < 0) throw Error("gbnf_literal: text is not valid UTF-8");
      s.append(text.substr(start, i - start));
      continue;
    }
    ++i;
    if (c == '"') s += "\\\"";
    else if (c == '\\') s += "\\\\";
    else if (c == '\n') s += "\\n";
    else if (c == '\r') s += "\\r";
    else if (c == '\t') s += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      s += buf;
    } else {
      s += static_cast<char>(c);
    }
  }
  return s + "\"";
}

std::string json_object_gbnf() {
  SchemaConverter c;
  c.add_rule("root", "json-object");
  need_primitive(c, "json-object");
  return c.gbnf();
}

}  // namespace anelm::grammar
