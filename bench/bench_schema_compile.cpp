// Schema -> grammar compile time vs size: objects of 1k-16k properties, enums of 1k-50k values,
// anyOf of 1k-16k object branches. Each figure is the minimum of --rounds runs. "cpu_ms" is the
// grammar path (schema -> GBNF text -> parsed grammar -> the matcher's first state);
// "request_cpu_ms" is the whole path of a chat request carrying the schema as
// response_format.json_schema: body text -> parse_chat_request -> output_constraint_for (cache
// cleared each run). Prints one JSON document; "cpu_ms_per_1k" staying flat across sizes is what
// linear means.
//
// usage: bench_schema_compile [--rounds 3]
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "server/api_request.h"
#include "server/output_constraint.h"

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace anelm;

// operator[] on an ordered_json object scans its keys (O(n^2) to build n); appending is O(1).
void append_member(json& object, std::string key, json value) {
  auto& members = static_cast<std::vector<std::pair<const std::string, json>>&>(object.get_ref<json::object_t&>());
  members.emplace_back(std::move(key), std::move(value));
}

json object_schema(int n) {
  json props = json::object(), required = json::array();
  for (int i = 0; i < n; ++i) {
    const std::string key = "property_" + std::to_string(i);
    append_member(props, key, i % 3 == 0   ? json{{"type", "string"}, {"description", "a text field"}}
                              : i % 3 == 1 ? json{{"type", "integer"}, {"minimum", 0}, {"maximum", 1000 + i}}
                                           : json{{"enum", json::array({"red", "green", "blue"})}});
    if (i % 4 == 0) required.push_back(key);
  }
  return {{"type", "object"}, {"properties", props}, {"required", required}, {"additionalProperties", false}};
}

json enum_schema(int n) {
  json e = json::array();
  for (int i = 0; i < n; ++i) e.push_back("value-" + std::to_string(i));
  return {{"enum", e}};
}

json any_of_schema(int n) {
  json branches = json::array();
  for (int i = 0; i < n; ++i)
    branches.push_back({{"type", "object"},
                        {"properties", {{"kind", {{"const", "k" + std::to_string(i)}}}, {"v", {{"type", "integer"}}}}},
                        {"required", json::array({"kind", "v"})}});
  return {{"anyOf", branches}};
}

std::shared_ptr<const grammar::Vocab> tiny_vocab() {
  std::vector<std::string> bytes(257);
  for (int i = 0; i < 256; ++i) bytes[static_cast<size_t>(i)] = std::string(1, static_cast<char>(i));
  std::vector<bool> usable(257, true);
  usable[256] = false;
  return std::make_shared<const grammar::Vocab>(bytes, usable, std::vector<int>{256});
}

struct Run {
  double ms = 1e30, cpu_ms = 1e30;  // wall and process CPU time (the machine may be shared)
  double request_cpu_ms = 1e30;
  size_t gbnf_bytes = 0, body_bytes = 0;
};

double cpu_ms_since(std::clock_t c0) { return 1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC; }

// The request path, from the body text a client sends.
double request_cpu_ms(const std::string& body) {
  server::clear_constraint_cache();
  const std::clock_t c0 = std::clock();
  const server::ChatRequest req = server::parse_chat_request(body);
  const server::OutputConstraintSpec spec = server::output_constraint_for(req.gen, server::ChatShape{nullptr, &req});
  if (!spec.grammar) throw std::runtime_error("no grammar compiled");
  return cpu_ms_since(c0);
}

Run compile(const json& schema, int rounds) {
  static const auto vocab = tiny_vocab();
  Run best;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    const std::clock_t c0 = std::clock();
    grammar::SchemaConverter c;
    c.add_rule("root", c.add_schema("schema", schema));
    const std::string text = c.gbnf();
    auto g = grammar::parse_gbnf(text, "root", grammar::GbnfOptions{grammar::kMaxSchemaGrammarBytes, nullptr});
    grammar::Matcher m(g, vocab);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    best.ms = std::min(best.ms, ms);
    best.cpu_ms = std::min(best.cpu_ms, cpu_ms_since(c0));
    best.gbnf_bytes = text.size();
  }
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "fill it in"}}})},
                     {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "s"}, {"schema", schema}}}}}};
  const std::string text = body.dump();
  best.body_bytes = text.size();
  for (int r = 0; r < rounds; ++r) best.request_cpu_ms = std::min(best.request_cpu_ms, request_cpu_ms(text));
  return best;
}

json series(const char* name, json (*make)(int), std::initializer_list<int> sizes, int rounds) {
  json rows = json::array();
  double first_per_1k = 0;
  for (int n : sizes) {
    const json schema = make(n);
    const Run r = compile(schema, rounds);
    const double per_1k = r.cpu_ms / (n / 1000.0);
    if (rows.empty()) first_per_1k = per_1k;
    rows.push_back({{"n", n}, {"schema_bytes", schema.dump().size()}, {"gbnf_bytes", r.gbnf_bytes}, {"wall_ms", r.ms},
                    {"cpu_ms", r.cpu_ms}, {"cpu_ms_per_1k", per_1k}, {"per_1k_vs_smallest", per_1k / first_per_1k},
                    {"body_bytes", r.body_bytes}, {"request_cpu_ms", r.request_cpu_ms},
                    {"request_cpu_ms_per_1k", r.request_cpu_ms / (n / 1000.0)}});
  }
  return {{"series", name}, {"rows", rows}};
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options options("bench_schema_compile", "JSON schema -> grammar compile time vs size");
  options.add_options()("rounds", "runs per size (minimum kept)", cxxopts::value<int>()->default_value("3"))(
      "series", "only this series (object_properties, enum_values, anyOf_objects)", cxxopts::value<std::string>()->default_value(""));
  const auto args = options.parse(argc, argv);
  const int rounds = args["rounds"].as<int>();
  compile(object_schema(500), 1);  // warm-up
#ifdef ANELM_MIMALLOC
  const char* allocator = "mimalloc";
#else
  const char* allocator = "glibc";
#endif
  json out = {{"bench", "schema_compile"}, {"rounds", rounds}, {"allocator", allocator}, {"target", "linear (cpu_ms_per_1k flat); 16k properties < 500 ms (request_cpu_ms)"}};
  const std::string only = args["series"].as<std::string>();
  out["results"] = json::array();
  auto run = [&](const char* name, json (*make)(int), std::initializer_list<int> sizes) {
    if (only.empty() || only == name) out["results"].push_back(series(name, make, sizes, rounds));
  };
  run("object_properties", object_schema, {1000, 2000, 4000, 8000, 16000});
  run("enum_values", enum_schema, {1000, 5000, 10000, 25000, 50000});
  run("anyOf_objects", any_of_schema, {1000, 2000, 4000, 8000, 16000});
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
