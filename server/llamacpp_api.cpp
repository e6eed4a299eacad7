// llama-server's /completion and /infill requests: its fields into the shared generation fields.
#include "server/llamacpp_api.h"

#include <algorithm>
#include <limits>

#include <spdlog/spdlog.h>

#include "server/api_error.h"
#include "server/json_body.h"
#include "server/json_fields.h"

namespace anelm::server {

using json = nlohmann::ordered_json;

namespace {

constexpr int kMaxRequestDepth = 64;
constexpr int kMaxTokensCap = 1 << 20;
constexpr int kMaxProbs = 64;  // the engine's top_logprobs bound
constexpr size_t kMaxStops = 16;
constexpr int kMaxChoices = 16;
constexpr size_t kMaxChunks = 256;        // input_extra entries
constexpr size_t kMaxResponseFields = 64;
constexpr size_t kMaxPromptItems = 1 << 20;
constexpr size_t kMaxPrompts = 16;  // /completion prompts per request (and prompts x n_cmpl: 64)

// llama.cpp's chain when a request names none (common_params_sampling::samplers).
const std::vector<std::string> kDefaultSamplers = {"penalties", "dry", "top_n_sigma", "top_k", "typ_p",
                                                   "top_p", "min_p", "xtc", "temperature"};

// Fields with no meaning here: accepted, logged at debug level. t_max_prompt_ms and n_keep are
// no-ops in llama.cpp too (unimplemented there; no context shifting here).
constexpr const char* kIgnored[] = {
    "id_slot", "cache_prompt", "t_max_prompt_ms", "n_keep", "n_discard", "n_cache_reuse", "timings_per_token",
    "return_progress", "verbose", "min_keep", "post_sampling_probs", "penalize_nl", "model", "sse_ping_interval",
    "backend_sampling", "xtc_threshold", "mirostat_tau", "mirostat_eta", "dynatemp_exponent", "dry_base",
    "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers", "adaptive_target", "adaptive_decay",
    "grammar_triggers", "stream_options"};

// Fields read below.
constexpr const char* kRead[] = {
    "prompt", "input_prefix", "input_suffix", "input_extra", "n_predict", "max_tokens", "max_completion_tokens",
    "temperature", "top_k", "top_p", "min_p", "typical_p", "top_n_sigma", "xtc_probability", "dynatemp_range",
    "mirostat", "dry_multiplier", "repeat_penalty", "repeat_last_n", "presence_penalty", "frequency_penalty",
    "seed", "stop", "stream", "n_cmpl", "n", "grammar", "json_schema", "logit_bias", "ignore_eos", "n_probs",
    "samplers", "lora", "grammar_lazy", "preserved_tokens", "return_tokens", "n_indent", "t_max_predict_ms", "response_fields"};

bool in(const auto& names, const std::string& key) {
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return key == n; });
}

// A sampler that only the default "off" value of its parameter lets through.
void require_off(const json& j, const char* key, double off, const std::string& what) {
  if (auto v = get_number(j, key, -1e9, 1e9); v && *v != off)
    throw invalid_field(key, std::string(key) + " (" + what + ") is not supported by this server; leave it at " +
                                 (off == 0 ? "0" : off == 1 ? "1" : std::to_string(off)));
}

// A prompt in llama.cpp's forms: a string, or an array of token ids and strings.
json prompt_value(const json& v, const std::string& key) {
  if (v.is_string()) return v;
  const std::string what = key + " must be a string, or an array of token ids and strings";
  if (!v.is_array() || v.size() > kMaxPromptItems) throw invalid_field(key, what);
  for (const json& e : v)
    if (!e.is_string() && !(e.is_number_integer() && e.get<int64_t>() >= 0 && e.get<int64_t>() <= std::numeric_limits<int>::max()))
      throw invalid_field(key, what);
  return v;
}

// Several prompts, as llama.cpp reads them: an array without token ids whose items are strings or
// arrays (["a", "b"], [[1, 2], "c"]); one result per prompt.
bool several_prompts(const json& v) {
  if (!v.is_array() || v.empty()) return false;
  bool arrays = false;
  for (const json& e : v) {
    if (e.is_array()) arrays = true;
    else if (!e.is_string()) return false;
  }
  return arrays || v.size() > 1;
}

// samplers: names (or llama.cpp's one-letter form, "kpmt"). A sampler left out does not run; the
// ones that run must come in the order this server applies them (penalties, top_k, top_p, min_p,
// infill), with the temperature before all the filters it changes (top_p, min_p, infill) or after.
std::vector<std::string> parse_samplers(const json& j) {
  const json* v = field(j, "samplers");
  if (!v) return kDefaultSamplers;
  static const std::vector<std::pair<std::string, std::string>> kAliases = {
      {"top-k", "top_k"}, {"top-p", "top_p"}, {"nucleus", "top_p"}, {"min-p", "min_p"}, {"temp", "temperature"},
      {"typical-p", "typ_p"}, {"typical", "typ_p"}, {"typ-p", "typ_p"}, {"typ", "typ_p"},
      {"top-n-sigma", "top_n_sigma"}, {"adaptive-p", "adaptive_p"}};
  static const std::string kLetters = "dkpsymxtie";
  static const std::vector<std::string> kByLetter = {"dry", "top_k", "top_p", "top_n_sigma", "typ_p",
                                                     "min_p", "xtc", "temperature", "infill", "penalties"};
  std::vector<std::string> names;
  if (v->is_string() && v->get_ref<const std::string&>().size() <= 32) {
    for (char c : v->get<std::string>()) {
      const size_t at = kLetters.find(c);
      if (at == std::string::npos) throw invalid_field("samplers", std::string("samplers: unknown sampler letter '") + c + "'");
      names.push_back(kByLetter[at]);
    }
  } else if (v->is_array() && v->size() <= 32) {
    for (const json& n : *v) {
      if (!n.is_string()) throw invalid_field("samplers", "samplers must be an array of sampler names");
      std::string name = n.get<std::string>();
      for (const auto& [alt, canonical] : kAliases)
        if (name == alt) name = canonical;
      names.push_back(name);
    }
  } else {
    throw invalid_field("samplers", "samplers must be an array of at most 32 sampler names, or a string of at most 32 letters");
  }
  static const std::vector<std::string> kOrder = {"penalties", "top_k", "top_p", "min_p", "infill"};
  int last = -1;
  for (const std::string& n : names) {
    if (n == "temperature" || n == "dry" || n == "top_n_sigma" || n == "typ_p" || n == "xtc") continue;
    const auto at = std::find(kOrder.begin(), kOrder.end(), n);
    if (at == kOrder.end())
      throw invalid_field("samplers", "samplers: '" + n + "' is not supported by this server (supported: penalties, "
                                      "top_k, top_p, min_p, temperature, infill; dry, top_n_sigma, typ_p, xtc "
                                      "while their parameters are off)");
    if (at - kOrder.begin() <= last)
      throw invalid_field("samplers", "samplers: this server applies penalties, top_k, top_p, min_p and infill in "
                                      "that order; '" + n + "' comes too late");
    last = static_cast<int>(at - kOrder.begin());
  }
  return names;
}

// Applies the sampler chain: a sampler not in it does not run.
void apply_samplers(const std::vector<std::string>& names, engine::SamplingParams& s, bool& infill) {
  const auto pos = [&](const char* n) {
    const auto at = std::find(names.begin(), names.end(), n);
    return at == names.end() ? -1 : static_cast<int>(at - names.begin());
  };
  if (pos("penalties") < 0) {
    s.repetition_penalty = 1.0f;
    s.presence_penalty = s.frequency_penalty = 0.0f;
  }
  if (pos("top_k") < 0) s.top_k = 0;
  if (pos("top_p") < 0) s.top_p = 1.0f;
  if (pos("min_p") < 0) s.min_p = 0.0f;
  infill = pos("infill") >= 0;
  const int t = pos("temperature");
  if (t < 0) {
    s.temperature = 1.0f;  // not applied
    return;
  }
  // The filters the temperature changes (top_k picks the same tokens either way).
  int first = -1, last = -1;
  for (const char* f : {"top_p", "min_p", "infill"}) {
    const int p = pos(f);
    if (p < 0 || !(f == std::string("infill") ? infill : f == std::string("top_p") ? s.top_p < 1.0f : s.min_p > 0.0f)) continue;
    first = first < 0 ? p : std::min(first, p);
    last = std::max(last, p);
  }
  if (first >= 0 && t > first && t < last)
    throw invalid_field("samplers", "samplers: the temperature must come before or after all of top_p, min_p and "
                                    "infill here, not between them");
  s.temperature_last = first >= 0 && t > last;
}

std::vector<InfillInput::Chunk> parse_extra(const json& j) {
  std::vector<InfillInput::Chunk> out;
  const json* v = field(j, "input_extra");
  if (!v) return out;
  if (!v->is_array() || v->size() > kMaxChunks)
    throw invalid_field("input_extra", "input_extra must be an array of at most " + std::to_string(kMaxChunks) +
                                           " {\"filename\": string, \"text\": string}");
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string where = "input_extra[" + std::to_string(i) + "]";
    if (!(*v)[i].is_object()) throw invalid_field(where, where + " must be an object");
    InfillInput::Chunk c{get_string((*v)[i], "filename", where, false), get_string((*v)[i], "text", where, true)};
    if (!field((*v)[i], "filename")) c.filename = "tmp";  // llama.cpp's default
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

LlamaCppRequest parse_llamacpp_request(std::string_view body, const engine::SamplingParams& defaults, bool infill) {
  const json j = parse_json_body(body, kMaxRequestDepth);
  LlamaCppRequest r;
  for (const auto& [key, value] : j.items()) {
    if (in(kRead, key) || value.is_null()) continue;
    if (!in(kIgnored, key) && key.rfind("speculative.", 0) != 0)
      spdlog::debug("request field '{}' ignored (unknown to this server)", key);
    else
      spdlog::debug("request field '{}' ignored (no meaning for this server)", key);
  }
  if (infill) {
    const json* pre = field(j, "input_prefix");
    const json* suf = field(j, "input_suffix");
    if (!pre) throw invalid_field("input_prefix", "input_prefix is required");
    if (!suf) throw invalid_field("input_suffix", "input_suffix is required");
    r.input_prefix = prompt_value(*pre, "input_prefix");
    r.input_suffix = prompt_value(*suf, "input_suffix");
    r.input_extra = parse_extra(j);
    if (const json* p = field(j, "prompt")) {
      if (!p->is_string()) throw invalid_field("prompt", "prompt must be a string");
      r.prompt = *p;
    }
  } else {
    const json* p = field(j, "prompt");
    if (!p) throw invalid_field("prompt", "prompt is required");
    if (several_prompts(*p)) {
      if (p->size() > kMaxPrompts) throw invalid_field("prompt", "at most " + std::to_string(kMaxPrompts) + " prompts per request");
      for (size_t i = 0; i < p->size(); ++i) r.prompts.push_back(prompt_value((*p)[i], "prompt[" + std::to_string(i) + "]"));
    } else {
      r.prompts.push_back(prompt_value(*p, "prompt"));
    }
  }

  GenerationFields& g = r.gen;
  engine::SamplingParams& s = g.sampling;
  s = defaults;
  for (const char* key : {"n_predict", "max_tokens", "max_completion_tokens"})
    if (auto v = get_int(j, key, -1, kMaxTokensCap); v && !g.max_tokens && *v >= 0) g.max_tokens = static_cast<int>(*v);
  if (auto v = get_number(j, "temperature", -100.0, 100.0)) s.temperature = *v;  // <= 0: greedy
  if (auto v = get_int(j, "top_k", std::numeric_limits<int>::min(), 1 << 30)) s.top_k = static_cast<int>(std::max<int64_t>(*v, 0));
  if (auto v = get_number(j, "top_p", 0.0, 1.0)) s.top_p = *v;
  if (auto v = get_number(j, "min_p", 0.0, 1.0)) s.min_p = *v;
  if (auto v = get_number(j, "repeat_penalty", 0.0, 100.0)) s.repetition_penalty = *v == 0.0f ? 1.0f : *v;
  if (auto v = get_int(j, "repeat_last_n", -1, 1 << 30)) s.penalty_last_n = static_cast<int>(*v);
  if (auto v = get_number(j, "presence_penalty", -100.0, 100.0)) s.presence_penalty = *v;
  if (auto v = get_number(j, "frequency_penalty", -100.0, 100.0)) s.frequency_penalty = *v;
  require_off(j, "typical_p", 1.0, "locally typical sampling");
  require_off(j, "xtc_probability", 0.0, "the XTC sampler");
  require_off(j, "dynatemp_range", 0.0, "dynamic temperature");
  require_off(j, "mirostat", 0.0, "Mirostat sampling");
  require_off(j, "dry_multiplier", 0.0, "the DRY sampler");
  // n_probs: llama.cpp's probabilities of the model (softmax of the raw logits), the chosen token's and
  // the n most likely; with post_sampling_probs it reports the sampler chain's instead, not done here.
  if (auto v = get_int(j, "n_probs", 0, kMaxProbs); v && *v > 0) {
    if (get_bool(j, "post_sampling_probs", false))
      throw invalid_field("post_sampling_probs", "post_sampling_probs is not supported by this server: n_probs "
                                                 "reports the model's probabilities before sampling");
    g.logprobs = true;
    g.top_logprobs = static_cast<int>(*v);
  }
  if (auto v = get_number(j, "top_n_sigma", -1e9, 1e9); v && *v > 0)
    throw invalid_field("top_n_sigma", "top_n_sigma is not supported by this server; leave it at -1");
  if (const json* l = field(j, "lora"); l && !(l->is_array() && l->empty()))
    throw invalid_field("lora", "lora adapters are not supported by this server");
  if (get_bool(j, "grammar_lazy", false))  // its triggers mean nothing without it
    throw invalid_field("grammar_lazy", "grammar_lazy is not supported by this server: the grammar applies from the first token");
  if (const json* p = field(j, "preserved_tokens"); p && !(p->is_array() && p->empty()))
    throw invalid_field("preserved_tokens", "preserved_tokens is not supported by this server");
  // seed: -1 (and llama.cpp's 0xFFFFFFFF default) mean "pick one".
  if (auto v = get_int(j, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
      v && *v != -1 && *v != 0xFFFFFFFFll) {
    s.seed = static_cast<uint64_t>(*v);
    g.seed_given = true;
  }
  r.samplers = parse_samplers(j);
  apply_samplers(r.samplers, s, r.infill_sampler);
  g.stop = parse_stop(j, kMaxStops);
  g.stream = get_bool(j, "stream", false);
  g.n = static_cast<int>(get_int(j, "n_cmpl", 1, kMaxChoices).value_or(get_int(j, "n", 1, kMaxChoices).value_or(1)));
  if (r.prompts.size() * static_cast<size_t>(g.n) > 4 * kMaxPrompts)
    throw invalid_field("n_cmpl", "prompts x n_cmpl is limited to " + std::to_string(4 * kMaxPrompts) + " results");
  g.grammar = parse_grammar(j);
  if (const json* js = field(j, "json_schema")) {
    if (!js->is_object() && !js->is_boolean()) throw invalid_field("json_schema", "json_schema must be a JSON Schema object");
    if (!g.grammar.empty()) throw invalid_field("json_schema", "json_schema and grammar cannot be combined");
    g.response_format.kind = ResponseFormat::Kind::kJsonSchema;
    g.response_format.schema = *js;
  }
  if (const json* lb = field(j, "logit_bias")) {
    if (!lb->is_array() && !lb->is_object())
      throw invalid_field("logit_bias", "logit_bias must be an array of [token, bias] pairs or an object");
    if (lb->size() > 1024) throw invalid_field("logit_bias", "logit_bias is limited to 1024 entries");
    r.logit_bias = *lb;
  }
  r.ignore_eos = get_bool(j, "ignore_eos", false);
  r.return_tokens = get_bool(j, "return_tokens", false);
  r.limits.n_indent = static_cast<int>(get_int(j, "n_indent", 0, 1 << 20).value_or(0));
  r.limits.t_max_predict_ms = static_cast<int>(std::max<int64_t>(get_int(j, "t_max_predict_ms", -1, 1ll << 30).value_or(0), 0));
  if (const json* rf = field(j, "response_fields")) {
    if (!rf->is_array() || rf->size() > kMaxResponseFields)
      throw invalid_field("response_fields", "response_fields must be an array of at most 64 paths");
    for (const json& f : *rf) {
      if (!f.is_string()) throw invalid_field("response_fields", "response_fields must be an array of strings");
      r.response_fields.push_back(f.get<std::string>());
    }
  }
  return r;
}

json llamacpp_generation_settings(const LlamaCppRequest& r, const engine::SamplingParams& s, int n_predict) {
  return {{"n_predict", n_predict},
          {"seed", s.seed},
          {"temperature", s.temperature},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"repeat_last_n", s.penalty_last_n},
          {"repeat_penalty", s.repetition_penalty},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"stop", r.gen.stop},
          {"n_indent", r.limits.n_indent},
          {"t_max_predict_ms", r.limits.t_max_predict_ms},
          {"ignore_eos", r.ignore_eos},
          {"n_probs", r.gen.top_logprobs},
          {"stream", r.gen.stream},
          {"samplers", r.samplers}};
}

}  // namespace anelm::server
