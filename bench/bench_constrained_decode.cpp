// Decode speed with and without a JSON-schema constraint on the same model and prompt, and the
// share of decode time spent in the constraint (allows + mask + accept), for several schemas (a
// small document, a 5,000-value enum, 2,000 optional properties, a pattern). One JSON document.
//
// usage: bench_constrained_decode --model PATH [--gen-tokens 64] [--rounds 3] [--threads 2]
// A random-weight model is the worst case: its sampled token is refused far more often than a
// trained model's, so the whole-vocabulary mask runs on most steps.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "server/api_request.h"
#include "server/chat_prompt.h"
#include "server/model_bundle.h"
#include "server/output_constraint.h"

namespace {

using namespace anelm;
using Clock = std::chrono::steady_clock;

// Times the wrapped constraint's calls.
class Timed final : public engine::TokenConstraint {
  template <class F>
  auto time(F f) {
    const auto t0 = Clock::now();
    auto r = f();
    ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return r;
  }

 public:
  explicit Timed(std::shared_ptr<engine::TokenConstraint> inner) : inner_(std::move(inner)) {}
  bool allows(int id) override { return time([&] { return inner_->allows(id); }); }
  int mask(std::span<float> logits) override {
    ++masks;
    return time([&] { return inner_->mask(logits); });
  }
  void accept(int id) override {
    time([&] {
      inner_->accept(id);
      return 0;
    });
  }
  double ms = 0;
  int masks = 0;

 private:
  std::shared_ptr<engine::TokenConstraint> inner_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options options("bench_constrained_decode", "decode tok/s with and without a JSON schema");
  options.add_options()("model", "GGUF or HF directory", cxxopts::value<std::string>())(
      "gen-tokens", "tokens per run", cxxopts::value<int>()->default_value("64"))(
      "rounds", "interleaved rounds", cxxopts::value<int>()->default_value("3"))(
      "threads", "compute threads", cxxopts::value<int>()->default_value("2"));
  const auto args = options.parse(argc, argv);
  if (!args.count("model")) {
    std::fputs(options.help().c_str(), stderr);
    return 2;
  }
  engine::EngineOptions eo;
  eo.model_path = args["model"].as<std::string>();
  eo.threads = args["threads"].as<int>();
  eo.ctx = 1024;
  server::ModelBundle b = server::load_model_bundle(eo);
  const auto prompt_builder = server::ChatPrompt::for_model(b.tokenizer->vocab(), "");
  // Schemas: the original cities document, and the shapes issue 29 found killing the matcher.
  auto response_format = [](const nlohmann::ordered_json& schema) {
    return nlohmann::ordered_json{{"type", "json_schema"}, {"json_schema", {{"name", "s"}, {"schema", schema}}}};
  };
  std::vector<std::pair<std::string, nlohmann::ordered_json>> schemas;
  schemas.emplace_back("cities", nlohmann::ordered_json::parse(R"({
      "type": "object", "properties": {"cities": {"type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "object",
        "properties": {"name": {"type": "string", "maxLength": 24}, "population": {"type": "integer", "minimum": 0},
                       "capital": {"type": "boolean"}}, "required": ["name", "population", "capital"],
        "additionalProperties": false}}}, "required": ["cities"], "additionalProperties": false})"));
  {
    nlohmann::ordered_json e = nlohmann::ordered_json::array();
    for (int i = 0; i < 5000; ++i) e.push_back("value-" + std::to_string(i));
    schemas.emplace_back("enum_5000", nlohmann::ordered_json{{"type", "object"}, {"properties", {{"v", {{"enum", e}}}}}, {"required", {"v"}}});
    nlohmann::ordered_json props = nlohmann::ordered_json::object();
    for (int i = 0; i < 2000; ++i) props["p" + std::to_string(i)] = {{"type", "integer"}};
    schemas.emplace_back("object_2000_optional", nlohmann::ordered_json{{"type", "object"}, {"properties", props}});
    schemas.emplace_back("pattern", nlohmann::ordered_json::parse(
        R"({"type":"object","properties":{"id":{"type":"string","pattern":"^[A-Z]{3}-\\d{4}$"},"note":{"type":"string"}},"required":["id","note"]})"));
  }
  nlohmann::ordered_json body = nlohmann::ordered_json::parse(R"({"model": "m",
    "messages": [{"role": "user", "content": "List three cities with their population as JSON."}]})");
  const auto t_vocab = Clock::now();
  const auto vocab = server::ConstraintVocab::build(*b.tokenizer);
  const double vocab_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_vocab).count();
  const int gen = args["gen-tokens"].as<int>();
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  double worst_share = 0;
  for (const auto& [name, schema] : schemas) {
    body["response_format"] = response_format(schema);
    const server::ChatRequest req = server::parse_chat_request(body.dump());
    std::vector<int> prompt = b.tokenizer->encode(prompt_builder->render(req.messages, req.tools, true, req.template_kwargs), true);
    const auto t_compile = Clock::now();
    const auto spec = server::output_constraint_for(req.gen, server::ChatShape{&prompt_builder->format(), &req, false});
    const double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_compile).count();
    const auto factory = server::constraint_factory(spec, vocab, &prompt_builder->format(), false);
    std::vector<double> free_tps, schema_tps, share, masks_per_token, step_ms, constraint_ms_per_token;
    int schema_tokens = 0;
    for (int round = 0; round <= args["rounds"].as<int>(); ++round) {  // round 0 warms up
      engine::GenerateRequest r;
      r.prompt = prompt;
      r.max_tokens = gen;
      r.sampling.temperature = 0;
      r.ignore_eos = true;
      const engine::GenerateResult f = b.engine->generate(r, {});
      auto timed = std::make_shared<Timed>(factory());
      r.constraint = timed;
      r.ignore_eos = false;
      r.extra_stop_ids = b.tokenizer->vocab().eog_ids;
      const engine::GenerateResult s = b.engine->generate(r, {});
      if (round == 0) continue;
      free_tps.push_back(f.decode_tok_s);
      schema_tps.push_back(s.decode_tok_s);
      share.push_back(s.decode_ms > 0 ? timed->ms / s.decode_ms : 0);
      masks_per_token.push_back(s.ids.empty() ? 0 : static_cast<double>(timed->masks) / s.ids.size());
      step_ms.push_back(s.ids.empty() ? 0 : s.decode_ms / s.ids.size());
      constraint_ms_per_token.push_back(s.ids.empty() ? 0 : timed->ms / s.ids.size());
      schema_tokens = static_cast<int>(s.ids.size());
    }
    worst_share = std::max(worst_share, median(share));
    results.push_back({{"schema", name},
                       {"compile_ms", compile_ms},
                       {"schema_tokens_last_round", schema_tokens},
                       {"decode_tok_s_free", median(free_tps)},
                       {"decode_tok_s_schema", median(schema_tps)},
                       {"step_ms_schema", median(step_ms)},
                       {"constraint_ms_per_token", median(constraint_ms_per_token)},
                       {"constraint_share_of_decode", median(share)},
                       {"mask_calls_per_token", median(masks_per_token)}});
  }
  const nlohmann::ordered_json out = {
      {"bench", "constrained_decode"},
      {"model", eo.model_path},
      {"vocab", b.tokenizer->vocab_size()},
      {"threads", eo.threads},
      {"gen_tokens", gen},
      {"vocab_trie_build_ms", vocab_ms},
      {"results", results},
      {"worst_constraint_share_of_decode", worst_share},
      {"target", "constraint_share_of_decode < 0.05 (allows + mask + accept, per decode step)"},
  };
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
