// POST /completion and /infill: llama-server's own completion API (editor plugins: llama.vim,
// llama.vscode), run through the same generation as /v1/completions.
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "server/api_error.h"
#include "server/chat_generation.h"
#include "server/fim_prompt.h"
#include "server/handlers.h"
#include "server/http_policy.h"
#include "server/llamacpp_api.h"

namespace anelm::server {

namespace {

using json = nlohmann::ordered_json;

constexpr size_t kMaxBiasedTokens = 4096;

// llama.cpp's tokenize_mixed: strings tokenized, ids kept (each checked against the vocabulary).
// `bos`: the model's BOS first when it wants one and the prompt starts with text.
std::vector<int> tokenize_mixed(const tok::Tokenizer& tk, const json& v, bool parse_special, bool bos,
                                const char* param) {
  std::vector<int> ids;
  if (v.is_null()) return ids;
  const json items = v.is_array() ? v : json::array({v});
  for (const json& e : items) {
    if (e.is_string()) {
      const std::vector<int> t = tk.encode(e.get_ref<const std::string&>(), parse_special);
      ids.insert(ids.end(), t.begin(), t.end());
      continue;
    }
    const int64_t id = e.get<int64_t>();
    if (id >= tk.vocab_size())
      throw invalid_field(param, std::string(param) + ": token id " + std::to_string(id) + " is out of range (vocab size " +
                                     std::to_string(tk.vocab_size()) + ")");
    ids.push_back(static_cast<int>(id));
  }
  const auto& vd = tk.vocab();
  if (bos && vd.add_bos && vd.bos_id >= 0 && !items.empty() && items[0].is_string() && (ids.empty() || ids[0] != vd.bos_id))
    ids.insert(ids.begin(), vd.bos_id);
  return ids;
}

// llama.cpp's logit_bias: [[token, bias], ...] or {"token": bias}; a token is an id or a text (each
// of its tokens biased), a bias a number or false (never sampled).
std::vector<std::pair<int, float>> resolve_logit_bias(const tok::Tokenizer& tk, const json& lb) {
  std::vector<std::pair<int, float>> out;
  auto add = [&](const json& token, const json& bias, const std::string& where) {
    float b;
    if (bias.is_boolean() && !bias.get<bool>()) b = -std::numeric_limits<float>::infinity();
    else if (bias.is_number() && std::isfinite(bias.get<double>())) b = bias.get<float>();
    else throw invalid_field(where, where + ": a bias is a number or false");
    std::vector<int> ids;
    if (token.is_number_integer() && token.get<int64_t>() >= 0 && token.get<int64_t>() < tk.vocab_size())
      ids.push_back(token.get<int>());
    else if (token.is_string()) ids = tk.encode(token.get_ref<const std::string&>(), false);
    else throw invalid_field(where, where + ": a token is an id in the vocabulary or a text");
    for (int id : ids) out.emplace_back(id, std::max(b, -100.0f));  // -100: never sampled
    if (out.size() > kMaxBiasedTokens)  // each is applied at every token
      throw invalid_field("logit_bias", "logit_bias covers more than " + std::to_string(kMaxBiasedTokens) + " tokens");
  };
  if (lb.is_object()) {
    for (const auto& [key, bias] : lb.items()) {
      bool digits = !key.empty() && key.size() <= 9;
      for (char c : key) digits = digits && c >= '0' && c <= '9';
      add(digits ? json(std::stoi(key)) : json(key), bias, "logit_bias." + key);
    }
    return out;
  }
  for (size_t i = 0; i < lb.size(); ++i) {
    const std::string where = "logit_bias[" + std::to_string(i) + "]";
    if (!lb[i].is_array() || lb[i].size() != 2) throw invalid_field(where, where + " must be a [token, bias] pair");
    add(lb[i][0], lb[i][1], where);
  }
  return out;
}

// Runs one or several prompts (one result per prompt and n_cmpl, as llama.cpp answers them).
HttpResponse run_llamacpp(ServerContext& ctx, const HttpRequest& req, LlamaCppRequest r, std::vector<std::vector<int>> prompts) {
  const tok::Tokenizer& tk = ctx.tokenizer();
  if (r.infill_sampler) {
    if (!ctx.model().infill_vocab)
      throw invalid_field("samplers", "samplers: 'infill' needs a model whose vocabulary has fill-in-the-middle tokens");
    r.gen.sampling.infill = ctx.model().infill_vocab;
  }
  if (!r.logit_bias.is_null())
    for (const auto& [id, bias] : resolve_logit_bias(tk, r.logit_bias)) r.gen.sampling.logit_bias.emplace_back(id, bias);
  if (r.ignore_eos)  // the ends are never sampled, and nothing stops at them
    for (int id : tk.vocab().eog_ids) r.gen.sampling.logit_bias.emplace_back(id, -100.0f);
  LlamaCppMeta meta;
  for (const std::vector<int>& p : prompts) meta.prompts.push_back(tk.decode(p, /*skip_special=*/false));
  PreparedGeneration g = prepare_text_generation(ctx, r.gen, std::move(prompts), -1, "prompt", req);
  if (r.ignore_eos) g.request.extra_stop_ids.clear();
  g.line_limits = r.limits;
  meta.model = served_model_id(ctx);
  meta.n = g.n;
  meta.response_fields = std::move(r.response_fields);
  meta.generation_settings = llamacpp_generation_settings(r, g.request.sampling, g.request.max_tokens.value_or(-1));
  meta.return_tokens = r.return_tokens;
  meta.probs = r.gen.logprobs;
  return run_generation(ctx, std::move(g), make_llamacpp_serializer(std::move(meta)));
}

}  // namespace

HttpResponse handle_llamacpp_completion(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  LlamaCppRequest r = parse_llamacpp_request(req.body, ctx.model().sampling, /*infill=*/false);
  std::vector<std::vector<int>> prompts;
  for (size_t i = 0; i < r.prompts.size(); ++i) {
    const std::string name = r.prompts.size() > 1 ? "prompt[" + std::to_string(i) + "]" : "prompt";
    prompts.push_back(tokenize_mixed(ctx.tokenizer(), r.prompts[i], /*parse_special=*/true, /*bos=*/true, name.c_str()));
  }
  return run_llamacpp(ctx, req, std::move(r), std::move(prompts));
}

HttpResponse handle_infill(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  LlamaCppRequest r = parse_llamacpp_request(req.body, ctx.model().sampling, /*infill=*/true);
  const tok::Tokenizer& tk = ctx.tokenizer();
  // As llama.cpp: the code as plain text (a marker written in it stays text), the line's start with
  // special tokens parsed.
  InfillInput in;
  in.prefix = tokenize_mixed(tk, r.input_prefix, false, false, "input_prefix");
  in.suffix = tokenize_mixed(tk, r.input_suffix, false, false, "input_suffix");
  in.prompt = tokenize_mixed(tk, r.prompt, true, false, "prompt");
  in.extra = std::move(r.input_extra);
  std::vector<int> prompt = infill_prompt(tk, in, ctx.n_ctx(), r.gen.max_tokens.value_or(0));
  spdlog::debug("infill prompt ({} tokens): {}", prompt.size(), log_escape(tk.decode(prompt, false), 1 << 16));
  return run_llamacpp(ctx, req, std::move(r), {std::move(prompt)});
}

// GET /props: what llama-server's clients read before their first request (its web UI, SillyTavern
// and other front ends: the context size, the slots, the defaults a request that sets nothing gets,
// the chat template). Only the fields that mean something here; no POST (llama-server refuses it
// too unless started with --props).
HttpResponse handle_props(ServerContext& ctx, const HttpRequest& /*req*/) {
  require_ready(ctx);
  const LlamaCppRequest defaults = parse_llamacpp_request(R"({"prompt": ""})", ctx.model().sampling, false);
  const tok::Tokenizer& tk = ctx.tokenizer();
  auto token = [&](int id) { return id >= 0 ? tk.token_bytes(id) : std::string(); };
  const json props = {
      {"default_generation_settings",
       {{"n_ctx", ctx.n_ctx()}, {"params", llamacpp_generation_settings(defaults, defaults.gen.sampling, -1)}}},
      {"total_slots", ctx.worker().parallel()},
      {"model_alias", served_model_id(ctx)},
      {"model_path", ctx.options().model},
      {"modalities", {{"vision", false}, {"audio", false}}},
      {"chat_template", ctx.model().chat->source()},
      {"bos_token", token(tk.vocab().bos_id)},
      {"eos_token", token(tk.vocab().eos_id)},
      {"build_info", "anelm"},
      {"endpoint_slots", false},
      {"endpoint_props", false},
      {"endpoint_metrics", true},
      {"is_sleeping", false}};
  HttpResponse res;
  res.body = props.dump();
  return res;
}

}  // namespace anelm::server
