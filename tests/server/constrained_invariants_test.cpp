// Property test of constrained output (issue 29, "Must show" 3): ~1,000 seeded random JSON schemas
// and tool lists (nested objects, arrays, enums, integer ranges above 2^53, patterns, anyOf/oneOf),
// with random stop strings and max_tokens, sent through the real HTTP server, template (Qwen2.5's
// Hermes tool calls), grammar compiler and grammar matcher, to a "model" that draws random tokens
// among those the grammar allows (FakeScript::sample_under_constraint, a byte vocabulary). Every
// answer must satisfy:
//   finish_reason "tool_calls" => every call names an offered tool and its arguments parse and
//                                 validate against that tool's parameters;
//   finish_reason "stop" with a json_schema => the content validates;
//   tool_choice required => "tool_calls" or "length", never a reply without a call;
//   a non-streamed answer never reports a call that does not validate, whatever the finish;
//   tool-call markup never appears in content (nor, after a cut, a piece of its opening marker).
// JSON validity is checked by an independent validator, python3-jsonschema
// (validate_json_instances.py), against the whole schema, number bounds included. Requests refused
// with a 400 (a keyword the grammar compiler does not support) are counted and printed, not failed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>

#include "tests/support/shared_data.h"
#include "test_server.h"

namespace anelm::testing {
namespace {

using json = nlohmann::ordered_json;

const char* kTemplate = "chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja";
constexpr int kCases = 1000;

// ---- random schemas -------------------------------------------------------------------------------

class SchemaGen {
 public:
  explicit SchemaGen(uint64_t seed) : rng_(seed) {}
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool coin(int percent) { return pick(100) < percent; }

  json any(int depth) {
    static const char* kinds[] = {"object", "array", "string", "integer", "number", "boolean",
                                  "null",   "enum",  "const",  "anyOf",   "oneOf",  "string", "integer"};
    for (;;) {
      const std::string k = kinds[pick(13)];
      const bool nested = k == "object" || k == "array" || k == "anyOf" || k == "oneOf";
      if (nested && depth >= 3) continue;
      if (k == "enum") return enumeration();
      if (k == "const") return json{{"const", value()}};
      if (k == "anyOf" || k == "oneOf") return alternatives(k, depth);
      return typed(k, depth);
    }
  }

  json object(int depth) {
    static const char* names[] = {"a", "b", "city", "n", "x_1", "tags", "é", "Name"};
    json props = json::object();
    json required = json::array();
    const int n = pick(5);
    std::vector<int> order = {0, 1, 2, 3, 4, 5, 6, 7};
    std::shuffle(order.begin(), order.end(), rng_);
    for (int i = 0; i < n; ++i) {
      props[names[order[i]]] = any(depth + 1);
      if (coin(60)) required.push_back(names[order[i]]);
    }
    json o = {{"type", "object"}, {"properties", props}};
    if (!required.empty()) o["required"] = required;
    if (coin(50)) o["additionalProperties"] = false;
    return o;
  }

 private:
  json typed(const std::string& t, int depth) {
    if (t == "object") return object(depth);
    if (t == "array") {
      json a = {{"type", "array"}, {"items", any(depth + 1)}};
      if (coin(50)) {
        const int lo = pick(3);
        a["minItems"] = lo;
        if (coin(70)) a["maxItems"] = lo + pick(3);
      }
      return a;
    }
    if (t == "string") {
      json s = {{"type", "string"}};
      switch (pick(4)) {
        case 0: {
          const int lo = pick(3);
          s["minLength"] = lo;
          s["maxLength"] = lo + pick(5);
          break;
        }
        case 1: {
          static const char* patterns[] = {"^[a-z]{1,4}$", "^[0-9]{2}-[0-9]{2}$", "^(ab|cd)+$", "^x[0-9]*$"};
          s["pattern"] = patterns[pick(4)];
          break;
        }
        default:
          break;
      }
      return s;
    }
    if (t == "integer") {
      json i = {{"type", "integer"}};
      switch (pick(5)) {
        case 0: {
          const int64_t lo = pick(101) - 50;
          i["minimum"] = lo;
          i["maximum"] = lo + pick(40);
          break;
        }
        case 1: {  // above 2^53, where a double cannot tell neighbours apart
          const int64_t lo = (int64_t{1} << 53) + pick(1000);
          i["minimum"] = lo;
          i["maximum"] = lo + pick(3);
          break;
        }
        case 2: {
          const int64_t hi = -(int64_t{1} << 53) - pick(1000);
          i["maximum"] = hi;
          if (coin(50)) i["minimum"] = hi - pick(5);
          break;
        }
        case 3:
          i["minimum"] = pick(10);
          break;
        default:
          break;
      }
      return i;
    }
    if (t == "number") {
      json n = {{"type", "number"}};
      if (coin(30)) n["minimum"] = -2, n["maximum"] = 3;
      return n;
    }
    return json{{"type", t}};  // boolean, null
  }

  json value() {
    static const json pool = json::parse(R"(["a", "b c", "é", "", 1, -7, 2.5, true, false, null, 9007199254740993])");
    return pool[static_cast<size_t>(pick(static_cast<int>(pool.size())))];
  }

  json enumeration() {
    json e = json::array();
    const int n = 1 + pick(4);
    for (int i = 0; i < n; ++i) {
      const json v = value();
      if (std::find(e.begin(), e.end(), v) == e.end()) e.push_back(v);
    }
    return json{{"enum", e}};
  }

  // Branches of distinct types, so that oneOf's "exactly one" is decidable by the type alone.
  json alternatives(const std::string& key, int depth) {
    std::vector<std::string> types = {"string", "integer", "boolean", "null", "object", "array"};
    std::shuffle(types.begin(), types.end(), rng_);
    json branches = json::array();
    const int n = 2 + pick(2);
    for (int i = 0; i < n; ++i) branches.push_back(typed(types[static_cast<size_t>(i)], depth + 1));
    return json{{key, branches}};
  }

  std::mt19937_64 rng_;
};

// ---- one case -------------------------------------------------------------------------------------

enum class Mode { kJsonSchema, kToolsRequired, kToolsNamed, kToolsAuto };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kJsonSchema: return "json_schema";
    case Mode::kToolsRequired: return "tools required";
    case Mode::kToolsNamed: return "tools named";
    case Mode::kToolsAuto: return "tools auto";
  }
  return "";
}

struct Case {
  Mode mode;
  bool stream;
  bool strict = false;  // json_schema: response_format.json_schema.strict
  std::string prefix;  // forced start of the reply
  json request;
  json schema;                        // json_schema mode
  std::map<std::string, json> tools;  // name -> parameters
};

Case make_case(int index) {
  SchemaGen g(0x5eed0000u + static_cast<uint64_t>(index));
  Case c;
  c.mode = static_cast<Mode>(g.pick(4));
  c.stream = g.coin(40);
  json req = {{"messages", json::array({{{"role", "user"}, {"content", "case " + std::to_string(index)}}})},
              {"seed", index}};
  switch (g.pick(3)) {
    case 0: req["max_tokens"] = 1 + g.pick(20); break;
    case 1: req["max_tokens"] = 1 + g.pick(120); break;
    default: req["max_tokens"] = 1 + g.pick(400); break;
  }
  static const char* stops[] = {"\"", ",", "}", "]", ":", "a", "1", "<", "\n", "</tool_call>", "<tool",
                                "_call", "{\"", "true", "Sure", "city", "\": "};
  json stop = json::array();
  for (int k = g.pick(4); k > 0; --k) stop.push_back(stops[g.pick(17)]);
  if (!stop.empty()) req["stop"] = stop;
  if (c.mode == Mode::kJsonSchema) {
    c.schema = g.coin(70) ? g.object(0) : g.any(0);
    c.strict = g.coin(50);
    req["response_format"] = {{"type", "json_schema"},
                              {"json_schema", {{"name", "out"}, {"schema", c.schema}, {"strict", c.strict}}}};
  } else {
    json tools = json::array();
    const int n = 1 + g.pick(3);
    for (int i = 0; i < n; ++i) {
      const std::string name = "tool_" + std::to_string(i);
      c.tools[name] = g.object(0);
      tools.push_back({{"type", "function"}, {"function", {{"name", name}, {"parameters", c.tools[name]}}}});
    }
    req["tools"] = tools;
    if (c.mode == Mode::kToolsRequired) req["tool_choice"] = "required";
    if (c.mode == Mode::kToolsNamed) {
      const std::string name = "tool_" + std::to_string(g.pick(n));
      req["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
      for (auto it = c.tools.begin(); it != c.tools.end();) it = it->first == name ? std::next(it) : c.tools.erase(it);
    }
    if (c.mode == Mode::kToolsAuto) {
      req["tool_choice"] = "auto";
      if (g.coin(70)) c.prefix = g.coin(50) ? "Sure.\n<tool_call>\n" : "<tool_call>";
    }
  }
  req["stream"] = c.stream;
  c.request = std::move(req);
  return c;
}

// ---- one answer -----------------------------------------------------------------------------------

struct Answer {
  int status = 0;
  std::string error;
  std::string content, finish;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

Answer ask(const TestServer& s, const Case& c) {
  Answer a;
  auto r = s.post("/v1/chat/completions", c.request);
  if (!r) return a;
  a.status = r->status;
  if (r->status != 200) {
    const auto b = nlohmann::json::parse(r->body, nullptr, false);
    a.error = b.is_object() && b.contains("error") ? b["error"].value("message", r->body) : r->body;
    return a;
  }
  if (!c.stream) {
    const auto b = nlohmann::json::parse(r->body);
    const auto& m = b["choices"][0]["message"];
    if (m["content"].is_string()) a.content = m["content"];
    if (m.contains("tool_calls"))
      for (const auto& tc : m["tool_calls"]) a.calls.emplace_back(tc["function"]["name"], tc["function"]["arguments"]);
    a.finish = b["choices"][0]["finish_reason"];
    return a;
  }
  for (const std::string& p : sse_payloads(r->body)) {
    if (p == "[DONE]") break;
    const auto ch = nlohmann::json::parse(p);
    if (ch.contains("error")) {
      a.status = 500;
      a.error = ch["error"].dump();
      return a;
    }
    for (const auto& choice : ch["choices"]) {
      const auto& d = choice["delta"];
      if (d.contains("content") && d["content"].is_string()) a.content += d["content"].get<std::string>();
      if (d.contains("tool_calls"))
        for (const auto& tc : d["tool_calls"]) {
          const size_t i = tc["index"];
          if (a.calls.size() <= i) a.calls.resize(i + 1);
          if (tc["function"].contains("name")) a.calls[i].first = tc["function"]["name"];
          if (tc["function"].contains("arguments")) a.calls[i].second += tc["function"]["arguments"].get<std::string>();
        }
      if (!choice["finish_reason"].is_null()) a.finish = choice["finish_reason"];
    }
  }
  return a;
}

// Markup in content: a whole marker, or (after a cut) the start of the opening marker at its end.
bool markup_in(const std::string& content, bool cut) {
  if (content.find("<tool_call>") != std::string::npos || content.find("</tool_call>") != std::string::npos)
    return true;
  if (!cut) return false;
  const std::string open = "<tool_call>";
  for (size_t k = 2; k <= std::min(content.size(), open.size()); ++k)
    if (content.compare(content.size() - k, k, open, 0, k) == 0) return true;
  return false;
}

// Runs the independent validator over (schema, text) pairs; one verdict per pair, or nullopt when
// the validator is not available.
std::optional<std::vector<std::string>> validate(const std::vector<std::pair<json, std::string>>& items) {
  const std::string in = ::testing::TempDir() + "constrained_invariants_in.jsonl";
  const std::string out = ::testing::TempDir() + "constrained_invariants_out.txt";
  {
    std::ofstream f(in);
    for (const auto& [schema, text] : items) f << json{{"schema", schema}, {"text", text}}.dump() << "\n";
  }
  const std::string cmd = "python3 " + std::string(ANELM_SOURCE_DIR) + "/tests/server/validate_json_instances.py < " +
                          in + " > " + out;
  const int rc = std::system(cmd.c_str());
  if (rc != 0) return std::nullopt;
  std::vector<std::string> verdicts;
  std::ifstream f(out);
  for (std::string line; std::getline(f, line);) verdicts.push_back(line);
  return verdicts;
}

TEST(ConstrainedInvariants, RandomSchemasToolsStopsAndLimits) {
  if (!shared_model(kTemplate)) GTEST_SKIP() << "shared chat templates not found";
  FakeScript script;
  script.sample_under_constraint = true;
  script.ctx = 32768;
  server::ServerOptions o = test_options();
  o.chat_template = shared_model(kTemplate)->string();
  TestServer s(script, o);

  std::vector<std::string> violations;
  auto violate = [&](int index, const Case& c, const Answer& a, const std::string& what) {
    violations.push_back("case " + std::to_string(index) + " (" + mode_name(c.mode) + (c.stream ? ", streamed" : "") +
                         ", finish " + a.finish + "): " + what + "\n  request: " + c.request.dump().substr(0, 600) +
                         "\n  content: " + a.content.substr(0, 300));
  };
  // JSON to validate: schema, text, and what a failure means.
  std::vector<std::pair<json, std::string>> checks;
  std::vector<std::string> check_labels;
  std::map<std::string, int> finishes, refused;
  int answered = 0;
  for (int i = 0; i < kCases; ++i) {
    Case c = make_case(i);
    const json& enforced = c.schema;
    s.engine().script().reply = c.prefix;
    const Answer a = ask(s, c);
    if (a.status == 400) {
      std::string why = a.error.substr(0, 90);
      for (const char* kw : {"pattern", "oneOf", "minimum", "maximum", "minLength", "maxLength", "minItems",
                             "maxItems", "enum", "const", "anyOf", "number"})
        if (a.error.find(kw) != std::string::npos) {
          why = kw;
          break;
        }
      refused[why]++;
      continue;
    }
    if (a.status != 200) {
      violate(i, c, a, "status " + std::to_string(a.status) + ": " + a.error);
      continue;
    }
    ++answered;
    finishes[std::string(mode_name(c.mode)) + " -> " + a.finish]++;
    const bool cut = a.finish == "length";
    if (c.mode != Mode::kJsonSchema && markup_in(a.content, cut)) violate(i, c, a, "tool-call markup in content");
    if (c.mode == Mode::kJsonSchema) {
      if (a.finish == "tool_calls" || !a.calls.empty()) violate(i, c, a, "tool calls without tools");
      if (a.finish == "stop") {
        checks.emplace_back(enforced, a.content);
        check_labels.push_back("case " + std::to_string(i) + ": json_schema content with finish stop: " +
                               a.content.substr(0, 300) + "\n  schema: " + c.schema.dump().substr(0, 400));
      }
      continue;
    }
    if ((c.mode == Mode::kToolsRequired || c.mode == Mode::kToolsNamed) && a.finish != "tool_calls" && a.finish != "length")
      violate(i, c, a, "a forced tool call ended without a call");
    if (a.finish == "tool_calls" && a.calls.empty()) violate(i, c, a, "tool_calls without calls");
    // Calls to validate: all of them when the finish says tool_calls; when not streamed, every
    // reported call whatever the finish (a stream may have sent the start of a call a cut ended).
    if (a.finish == "tool_calls" || !c.stream) {
      for (const auto& [name, args] : a.calls) {
        auto t = c.tools.find(name);
        if (t == c.tools.end()) {
          violate(i, c, a, "a call to '" + name + "', not an offered tool");
          continue;
        }
        checks.emplace_back(t->second, args);
        check_labels.push_back("case " + std::to_string(i) + " (" + mode_name(c.mode) + (c.stream ? ", streamed" : "") +
                               ", finish " + a.finish + "): arguments of " + name + ": " + args.substr(0, 300) +
                               "\n  schema: " + t->second.dump().substr(0, 400));
      }
    }
  }

  const auto verdicts = validate(checks);
  if (!verdicts) GTEST_SKIP() << "the JSON Schema validator (python3-jsonschema) is not available";
  ASSERT_EQ(verdicts->size(), checks.size());
  int invalid = 0;
  for (size_t k = 0; k < checks.size(); ++k)
    if ((*verdicts)[k] != "ok") {
      ++invalid;
      violations.push_back(check_labels[k] + "\n  validator: " + (*verdicts)[k]);
    }

  int n_refused = 0;
  for (const auto& [why, n] : refused) n_refused += n;
  std::printf("[ constrained invariants ] %d cases: %d answered, %d refused with a 400, %zu JSON instances validated (%d invalid)\n",
              kCases, answered, n_refused, checks.size(), invalid);
  for (const auto& [why, n] : refused) std::printf("  refused (400) %4d  %s\n", n, why.c_str());
  for (const auto& [f, n] : finishes) std::printf("  finish %5d  %s\n", n, f.c_str());
  EXPECT_TRUE(violations.empty()) << violations.size() << " violations; the first ones:";
  for (size_t k = 0; k < violations.size() && k < 15; ++k) ADD_FAILURE() << violations[k];
}

}  // namespace
}  // namespace anelm::testing
