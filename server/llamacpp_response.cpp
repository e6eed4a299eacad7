// llama-server's /completion and /infill results (field names and order as its server writes them).
#include <algorithm>
#include <cmath>
#include <limits>

#include "server/llamacpp_api.h"
#include "server/logprobs_json.h"
#include "server/sse.h"
#include "tokenizer/stream_decoder.h"

namespace anelm::server {

using json = nlohmann::ordered_json;

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// llama.cpp's json_get_nested_values: each "a/b" path that exists, as a top-level key.
json pick_fields(const std::vector<std::string>& paths, const json& j) {
  json out = json::object();
  for (const std::string& path : paths) {
    const json* at = &j;
    size_t from = 0;
    for (;;) {
      const size_t slash = path.find('/', from);
      const std::string key = path.substr(from, slash == std::string::npos ? std::string::npos : slash - from);
      at = at->is_object() && at->contains(key) ? &(*at)[key] : nullptr;
      if (!at || slash == std::string::npos) break;
      from = slash + 1;
    }
    if (at) out[path] = *at;
  }
  return out;
}

json timings(const ChoiceOutput::Stats& st) {
  const int prompt_n = st.prompt_tokens - st.cached_tokens;
  const auto per = [](double ms, int n) { return n > 0 ? ms / n : 0.0; };
  const auto rate = [](double ms, int n) { return ms > 0 ? n * 1000.0 / ms : 0.0; };
  return {{"cache_n", st.cached_tokens},
          {"prompt_n", prompt_n},
          {"prompt_ms", st.prompt_ms},
          {"prompt_per_token_ms", per(st.prompt_ms, prompt_n)},
          {"prompt_per_second", rate(st.prompt_ms, prompt_n)},
          {"predicted_n", st.completion_tokens},
          {"predicted_ms", st.predicted_ms},
          {"predicted_per_token_ms", per(st.predicted_ms, st.completion_tokens)},
          {"predicted_per_second", rate(st.predicted_ms, st.completion_tokens)}};
}

// llama.cpp's completion_probabilities: per token its id, text (cut to whole UTF-8 characters),
// bytes, log-probability and the n most likely tokens' in the same form.
json prob_entry(int id, const std::string& bytes, float logprob) {
  std::string rest = bytes;
  const std::string text = tok::take_complete_utf8(rest);  // a split character's bytes: in `bytes` only
  return {{"id", id}, {"token", text}, {"bytes", bytes_array(bytes)},
          {"logprob", std::isfinite(logprob) ? logprob : std::numeric_limits<float>::lowest()}};
}

json probabilities(std::span<const TokenLogprob> lps) {
  json out = json::array();
  for (const TokenLogprob& lp : lps) {
    json e = prob_entry(lp.id, lp.token, lp.logprob);
    json top = json::array();
    for (size_t k = 0; k < lp.top.size() && k < lp.top_ids.size(); ++k)
      top.push_back(prob_entry(lp.top_ids[k], lp.top[k].first, lp.top[k].second));
    e["top_logprobs"] = std::move(top);
    out.push_back(std::move(e));
  }
  return out;
}

// llama.cpp's stop_type: a stop string is "word", an end-of-generation token "eos", a limit "limit".
const char* stop_type(const ChoiceOutput& o) {
  if (o.finish_reason != "stop") return "limit";
  return o.stop_sequence.empty() ? "eos" : "word";
}

class LlamaCppSerializer : public ResponseSerializer {
 public:
  explicit LlamaCppSerializer(LlamaCppMeta meta) : meta_(std::move(meta)) {}

  std::string choice_start(int) override { return {}; }
  std::string delta(int index, const OutputDelta& d, std::span<const TokenLogprob> lps) override {
    if (d.content.empty()) return {};
    json j = {{"index", index}, {"content", d.content}, {"tokens", json::array()}, {"stop", false}, {"id_slot", -1}};
    if (meta_.probs && !lps.empty()) j["completion_probabilities"] = probabilities(lps);
    return sse_data(dump(j));
  }
  std::string choice_end(int index, const ChoiceOutput& out) override {
    return sse_data(dump(result(index, out, /*streamed=*/true)));
  }
  std::string stream_end(const UsageInfo&) override { return {}; }  // no [DONE]: llama.cpp sends none here
  std::string body(std::span<const ChoiceOutput> choices, const UsageInfo&) override {
    if (choices.size() == 1) return dump(result(0, choices[0], false));
    json all = json::array();
    for (size_t i = 0; i < choices.size(); ++i) all.push_back(result(static_cast<int>(i), choices[i], false));
    return dump(all);
  }

 private:
  json result(int index, const ChoiceOutput& o, bool streamed) const {
    json j = {{"index", index},
              {"content", streamed ? std::string() : o.content},
              {"tokens", meta_.return_tokens ? json(o.token_ids) : json::array()},
              {"id_slot", 0},
              {"stop", true},
              {"model", meta_.model},
              {"tokens_predicted", o.stats.completion_tokens},
              {"tokens_evaluated", o.stats.prompt_tokens},
              {"generation_settings", meta_.generation_settings},
              {"prompt", meta_.prompts.empty() ? std::string() : meta_.prompts[std::min(static_cast<size_t>(index / std::max(meta_.n, 1)), meta_.prompts.size() - 1)]},
              {"has_new_line", o.content.find('\n') != std::string::npos},
              {"truncated", false},
              {"stop_type", stop_type(o)},
              {"stopping_word", o.stop_sequence},
              {"tokens_cached", o.stats.prompt_tokens + o.stats.completion_tokens},
              {"timings", timings(o.stats)}};
    if (meta_.probs && !streamed) j["completion_probabilities"] = probabilities(o.logprobs);
    return meta_.response_fields.empty() ? j : pick_fields(meta_.response_fields, j);
  }

  LlamaCppMeta meta_;
};

}  // namespace

std::unique_ptr<ResponseSerializer> make_llamacpp_serializer(LlamaCppMeta meta) {
  return std::make_unique<LlamaCppSerializer>(std::move(meta));
}

}  // namespace anelm::server
