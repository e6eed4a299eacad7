// The forced-call grammar of the Qwen XML syntax (add_xml_call_rules): what it accepts is what the
// templates render and what parse_message reads back as the same call.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "chat/chat_format.h"
#include "chat/xml_call_grammar.h"
#include "grammar/grammar.h"

namespace anelm::chat {
namespace {

using json = nlohmann::ordered_json;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    "required": ["city"]}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "number"}, "flags": {"type": "object",
      "properties": {"fast": {"type": "boolean"}}, "required": ["fast"]}}, "required": ["a", "b"]}}},
  {"type": "function", "function": {"name": "anything"}}
])");

std::shared_ptr<const grammar::Vocab> byte_vocab() {
  std::vector<std::string> bytes(257);
  std::vector<bool> usable(257, true);
  for (int i = 0; i < 256; ++i) bytes[static_cast<std::size_t>(i)] = std::string(1, static_cast<char>(i));
  usable[256] = false;
  return std::make_shared<const grammar::Vocab>(bytes, usable, std::vector<int>{256});
}

class XmlGrammar {
 public:
  XmlGrammar(const std::string& only, bool parallel, const json& tools = kTools) {
    grammar::SchemaConverter conv;
    grammar::SchemaOptions o;
    o.strict = false;
    conv.add_rule("root", add_xml_call_rules(conv, tools, only, parallel, o));
    gbnf_ = conv.gbnf();
    relaxed_ = conv.relaxed();
    g_ = grammar::parse_gbnf(gbnf_);
  }
  bool accepts(const std::string& text) const {
    grammar::Matcher m(g_, vocab_);
    return m.accept_bytes(text) && m.can_end();
  }
  const std::string& gbnf() const { return gbnf_; }
  const std::vector<std::string>& relaxed() const { return relaxed_; }

 private:
  std::string gbnf_;
  std::vector<std::string> relaxed_;
  std::shared_ptr<const grammar::Grammar> g_;
  std::shared_ptr<const grammar::Vocab> vocab_ = byte_vocab();
};

std::string call(const std::string& name, const std::vector<std::pair<std::string, std::string>>& params) {
  std::string s = "<tool_call>\n<function=" + name + ">\n";
  for (const auto& [k, v] : params) s += "<parameter=" + k + ">\n" + v + "\n</parameter>\n";
  return s + "</function>\n</tool_call>";
}

// parse_message reads an accepted text back as calls with these JSON arguments.
void expect_parses_to(const std::string& text, const std::vector<std::pair<std::string, json>>& calls) {
  ChatFormat f;
  f.tools = ToolSyntax::kQwenXml;
  ParseOptions o;
  o.id_seed = 1;
  o.tools = std::make_shared<const json>(kTools);
  const ParsedMessage m = parse_message(text, f, o);
  EXPECT_EQ(m.content, "") << text;
  ASSERT_EQ(m.tool_calls.size(), calls.size()) << text;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(m.tool_calls[i].name, calls[i].first);
    EXPECT_EQ(json::parse(m.tool_calls[i].arguments), calls[i].second) << m.tool_calls[i].arguments;
  }
}

TEST(QwenXmlGrammar, AcceptsTheRenderedCallsAndTheyParseBack) {
  const XmlGrammar g("", false);
  for (const auto& [text, args] : std::vector<std::pair<std::string, json>>{
           {call("get_weather", {{"city", "Paris"}}), json{{"city", "Paris"}}},
           {call("get_weather", {{"city", "Rio\nde </param <</ Janeiro </parameter"}, {"unit", "c"}}),
            json{{"city", "Rio\nde </param <</ Janeiro </parameter"}, {"unit", "c"}}},
           {call("add", {{"a", "3"}, {"b", "-4.5"}, {"flags", "{\"fast\": true}"}}),
            json{{"a", 3}, {"b", -4.5}, {"flags", {{"fast", true}}}}},
       }) {
    EXPECT_TRUE(g.accepts(text)) << text << "\n" << g.gbnf();
    const std::size_t at = text.find('=') + 1;
    const std::string name = text.substr(at, text.find('>', at) - at);
    expect_parses_to(text, {{name, args}});
  }
  EXPECT_TRUE(g.accepts(call("anything", {{"x", "1"}, {"long name", "free <b>text</b>"}})));
  EXPECT_TRUE(g.accepts(call("anything", {})));
}

TEST(QwenXmlGrammar, RefusesWhatTheSchemaOrTheParserWouldNot) {
  const XmlGrammar g("", false);
  for (const std::string& text : {
           call("get_weather", {}),                                         // city is required
           call("get_weather", {{"unit", "c"}, {"city", "Paris"}}),         // schema order
           call("get_weather", {{"city", "Paris"}, {"country", "FR"}}),     // unknown parameter
           call("get_weather", {{"city", "a</parameter>b"}}),               // would end the value early
           call("add", {{"a", "three"}, {"b", "1"}}),                       // not an integer
           call("add", {{"a", "1"}, {"b", "2"}, {"flags", "{\"slow\": 1}"}}),  // object schema
           call("nope", {}),                                                // unknown tool
           call("get_weather", {{"city", "Rome"}}) + "\n" + call("get_weather", {{"city", "Oslo"}}),
           std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
       }) {
    EXPECT_FALSE(g.accepts(text)) << text;
  }
}

// http-api.md: a call's arguments are valid against `parameters`, so a string parameter's enum,
// const and minLength / maxLength (characters, as for JSON strings) hold for the raw XML value too.
TEST(QwenXmlGrammar, StringEnumConstAndLengthsAreEnforced) {
  const XmlGrammar g("", false);
  EXPECT_TRUE(g.accepts(call("get_weather", {{"city", "Oslo"}, {"unit", "f"}})));
  for (const char* bad : {"x", "cc", "", "c "})
    EXPECT_FALSE(g.accepts(call("get_weather", {{"city", "Oslo"}, {"unit", bad}}))) << "unit enum: '" << bad << "'";

  const json tools = json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
    "properties": {"mode": {"type": "string", "const": "fast"}, "code": {"type": "string", "maxLength": 3},
      "name": {"type": "string", "minLength": 2}, "tag": {"type": "string", "minLength": 1, "maxLength": 2},
      "re": {"type": "string", "pattern": "^[a-z]+$"}, "odd": {"enum": ["a</parameter>b", "ok"]},
      "code2": {"type": "string", "maxLength": 3}}}}}])");
  const XmlGrammar b("", false, tools);
  auto one = [&](const std::string& param, const std::string& value) { return b.accepts(call("f", {{param, value}})); };
  EXPECT_TRUE(one("mode", "fast"));
  EXPECT_FALSE(one("mode", "slow"));
  EXPECT_FALSE(one("mode", "fas"));
  for (const char* ok : {"", "abc", "\xC3\xA9\xC3\xA9\xC3\xA9", "a<b", "<<"})  // "ééé": 3 characters, 6 bytes
    EXPECT_TRUE(one("code", ok)) << "maxLength 3: '" << ok << "'\n" << b.gbnf();
  for (const char* bad : {"abcd", "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", "a</"})
    EXPECT_FALSE(one("code", bad)) << "maxLength 3: '" << bad << "'";
  EXPECT_TRUE(one("code2", "abc")) << "a second maxLength 3 shares the first one's rules";
  EXPECT_FALSE(one("code2", "abcd"));
  EXPECT_FALSE(one("name", "a")) << "minLength 2";
  EXPECT_TRUE(one("name", "ab"));
  EXPECT_TRUE(one("name", "a long name with <b>tags</b> after the bound"));
  EXPECT_FALSE(one("name", "ab</parameter>c"));
  EXPECT_FALSE(one("tag", ""));
  EXPECT_TRUE(one("tag", "x"));
  EXPECT_FALSE(one("tag", "xyz"));
  EXPECT_TRUE(one("odd", "ok"));
  EXPECT_FALSE(one("odd", "a")) << "the unwritable member is dropped, the others still bound the value";
  // A pattern is not enforced on raw text (the JSON grammar's pattern form is a quoted JSON string):
  // free text, and the relaxation is noted.
  EXPECT_TRUE(one("re", "ABC 1"));
  bool noted = false;
  for (const std::string& n : b.relaxed()) noted = noted || n.find("properties.re/pattern") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(QwenXmlGrammar, ParallelAndNamedChoice) {
  const std::string two = call("get_weather", {{"city", "Rome"}}) + "\n" + call("add", {{"a", "3"}, {"b", "4"}});
  EXPECT_TRUE(XmlGrammar("", true).accepts(two));
  expect_parses_to(two, {{"get_weather", json{{"city", "Rome"}}}, {"add", json{{"a", 3}, {"b", 4}}}});
  const XmlGrammar named("add", false);
  EXPECT_TRUE(named.accepts(call("add", {{"a", "3"}, {"b", "4"}})));
  EXPECT_FALSE(named.accepts(call("get_weather", {{"city", "Rome"}})));
  grammar::SchemaConverter conv;
  EXPECT_THROW(add_xml_call_rules(conv, kTools, "missing", false, grammar::SchemaOptions{}), std::invalid_argument);
  EXPECT_THROW(add_xml_call_rules(conv, json::array(), "", false, grammar::SchemaOptions{}), std::invalid_argument);
}

TEST(QwenXmlGrammar, ShapeTriggersOnTheToolCallMarker) {
  const ToolCallShape s = tool_call_shape(ToolSyntax::kQwenXml);
  EXPECT_TRUE(s.xml_parameters);
  EXPECT_EQ(s.trigger, "<tool_call>");
  EXPECT_TRUE(s.supports_parallel);
}

}  // namespace
}  // namespace anelm::chat
