// POST /v1/completions and /v1/chat/completions: validate, template, tokenize, then run_generation.
#include <algorithm>
#include <chrono>
#include <random>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/chat_output.h"
#include "server/generation.h"
#include "server/handlers.h"
#include "server/http_policy.h"
#include "server/output_constraint.h"

namespace anelm::server {

namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

uint64_t fresh_seed() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

// BOS when the model wants one and the text did not already start with it.
void maybe_add_bos(const tok::Tokenizer& tk, std::vector<int>& ids) {
  const auto& v = tk.vocab();
  if (v.add_bos && v.bos_id >= 0 && (ids.empty() || ids[0] != v.bos_id)) ids.insert(ids.begin(), v.bos_id);
}

// Fills the engine request from the shared OpenAI fields. `default_max` < 0: up to the context end.
PreparedGeneration prepare(ServerContext& ctx, const GenerationFields& f, std::vector<int> prompt,
                           int default_max) {
  PreparedGeneration g;
  const int room = ctx.n_ctx() - static_cast<int>(prompt.size());
  g.request.prompt = std::move(prompt);
  // An endpoint default is trimmed to the room left; an explicit value is the client's, checked as
  // it is by the engine.
  if (f.max_tokens) g.request.max_tokens = f.max_tokens;
  else if (default_max >= 0) g.request.max_tokens = std::clamp(room, 1, default_max);
  else g.request.max_tokens = std::nullopt;
  g.request.sampling = f.sampling;
  if (!f.seed_given) g.request.sampling.seed = fresh_seed();
  g.request.top_logprobs = f.top_logprobs;
  g.request.extra_stop_ids = ctx.tokenizer().vocab().eog_ids;
  g.n = f.n;
  g.stop = f.stop;
  g.stream = f.stream;
  g.include_usage = f.stream && f.include_usage;
  g.want_logprobs = f.logprobs;
  return g;
}

ResponseMeta meta_for(ServerContext& ctx, const char* prefix, const PreparedGeneration& g) {
  return ResponseMeta{make_response_id(prefix), unix_now(), served_model_id(ctx), g.include_usage,
                      g.want_logprobs};
}

std::vector<int> completion_prompt(const tok::Tokenizer& tk, const CompletionRequest& r) {
  if (!r.prompt_is_ids) {
    std::vector<int> ids = tk.encode(r.prompt_text, /*parse_special=*/true);
    maybe_add_bos(tk, ids);
    return ids;
  }
  for (int id : r.prompt_ids)
    if (id >= tk.vocab_size())
      throw invalid_field("prompt", "token id " + std::to_string(id) + " is out of range (vocab size " +
                                        std::to_string(tk.vocab_size()) + ")");
  return r.prompt_ids;
}

// response_format / grammar / tools -> the per-choice grammar constraint.
void constrain(ServerContext& ctx, PreparedGeneration& g, const GenerationFields& f, const ChatShape& chat) {
  const OutputConstraintSpec spec = output_constraint_for(f, chat);
  g.make_constraint = constraint_factory(spec, ctx.model().constraint_vocab, chat.format, chat.starts_in_reasoning);
  if (spec.grammar) spdlog::debug("output grammar{}:\n{}", spec.trigger.empty() ? "" : " (after " + spec.trigger + ")", spec.gbnf);
}

// The rendered prompt of a chat request, logged at debug level so that users can see what was built.
std::string render_chat(ServerContext& ctx, const ChatRequest& r) {
  std::string prompt = ctx.model().chat->render(r.messages, r.tools, /*add_generation_prompt=*/true, r.template_kwargs);
  spdlog::debug("chat prompt ({} bytes): {}", prompt.size(), log_escape(prompt, 1 << 16));
  return prompt;
}

}  // namespace

HttpResponse handle_completions(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  CompletionRequest r = parse_completion_request(req.body, ctx.model().sampling);
  const tok::Tokenizer& tk = ctx.tokenizer();
  PreparedGeneration g = prepare(ctx, r.gen, completion_prompt(tk, r), ctx.options().default_max_tokens);
  constrain(ctx, g, r.gen, ChatShape{});
  g.client_gone = req.client_gone;
  g.log = req.log;
  if (r.echo) g.echo_text = r.prompt_is_ids ? tk.decode(r.prompt_ids, true) : r.prompt_text;
  ResponseMeta meta = meta_for(ctx, "cmpl-", g);
  return run_generation(ctx, std::move(g), make_completion_serializer(std::move(meta)));
}

HttpResponse handle_chat_completions(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  ChatRequest r = parse_chat_request(req.body, ctx.model().sampling);
  const tok::Tokenizer& tk = ctx.tokenizer();
  const std::string prompt = render_chat(ctx, r);
  std::vector<int> ids = tk.encode(prompt, /*parse_special=*/true);
  maybe_add_bos(tk, ids);
  PreparedGeneration g = prepare(ctx, r.gen, std::move(ids), -1);
  const chat::ChatFormat& format = ctx.model().chat->format();
  const ChatShape shape{&format, &r, chat::prompt_opens_reasoning(prompt, format)};
  constrain(ctx, g, r.gen, shape);
  chat::ParseOptions po;
  po.parse_tools = !r.tools.empty() && r.tool_choice.kind != ToolChoice::Kind::kNone;
  po.starts_in_reasoning = shape.starts_in_reasoning;
  po.parse_reasoning = format.reasoning != chat::ReasoningSyntax::kNone;
  po.id_seed = r.gen.seed_given ? r.gen.sampling.seed : 0;
  g.make_parser = [prompt_owner = ctx.model().chat, po]() { return make_chat_output_parser(prompt_owner->format(), po); };
  g.client_gone = req.client_gone;
  g.log = req.log;
  ResponseMeta meta = meta_for(ctx, "chatcmpl-", g);
  return run_generation(ctx, std::move(g), make_chat_serializer(std::move(meta)));
}

}  // namespace anelm::server

namespace anelm::server {

// POST /apply-template (llama-server): the prompt a chat request renders to, without generating.
HttpResponse handle_apply_template(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  const ChatRequest r = parse_chat_request(req.body, ctx.model().sampling);
  HttpResponse res;
  res.body = nlohmann::ordered_json{{"prompt", render_chat(ctx, r)}}.dump(-1, 0x20, false, nlohmann::json::error_handler_t::replace);
  return res;
}

}  // namespace anelm::server
