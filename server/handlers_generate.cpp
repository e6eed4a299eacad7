// POST /v1/completions and /v1/chat/completions: validate, template, tokenize, then run_generation.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/chat_generation.h"
#include "server/chat_output.h"
#include "server/fim_prompt.h"
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


// The tokens a prompt leaves for the answer. A prompt that leaves none is a 400 with code
// context_length_exceeded and a message in the shape agents parse ("prompt is too long (N tokens >
// M ...)": Claude Code reads N and M from it, Codex reads the code).
int room_after_prompt(ServerContext& ctx, size_t n_prompt, const char* param) {
  const int n_ctx = ctx.n_ctx();
  const int64_t most = static_cast<int64_t>(n_ctx) - 1;  // one token of answer at least
  if (static_cast<int64_t>(n_prompt) > most)
    throw ApiError(400, "invalid_request_error",
                   "prompt is too long (" + std::to_string(n_prompt) + " tokens > " + std::to_string(most) +
                       " maximum): the context holds " + std::to_string(n_ctx) +
                       " tokens including at least one of output",
                   param, "context_length_exceeded");
  return n_ctx - static_cast<int>(n_prompt);
}

// Every logit_bias id must be in the vocabulary (the sampler would skip it silently).
void check_logit_bias(ServerContext& ctx, const engine::SamplingParams& s) {
  const int vocab = ctx.tokenizer().vocab_size();
  for (const auto& [id, bias] : s.logit_bias)
    if (id >= vocab)
      throw invalid_field("logit_bias." + std::to_string(id), "logit_bias: token id " + std::to_string(id) +
                                                                 " is out of range (vocab size " + std::to_string(vocab) + ")");
}

// Fills the engine request from the shared OpenAI fields. `default_max` < 0: up to the context end.
// `prompt_param` names the prompt's field in errors.
PreparedGeneration prepare(ServerContext& ctx, const GenerationFields& f, std::vector<int> prompt,
                           int default_max, const char* prompt_param = "messages") {
  PreparedGeneration g;
  const int room = room_after_prompt(ctx, prompt.size(), prompt_param);
  g.request.prompt = std::move(prompt);
  // An endpoint default is trimmed to the room left. So is an explicit value larger than the room
  // (agents ask for 32k-128k whatever the context; llama-server clamps too): the answer then ends
  // at the context end with finish_reason "length", and a header says what was used.
  if (f.max_tokens) {
    g.request.max_tokens = std::min(*f.max_tokens, room);
    if (*f.max_tokens > room) {
      g.headers.emplace_back("X-Anelm-Max-Tokens-Clamped", std::to_string(room));
      spdlog::debug("max_tokens {} clamped to {}, the room the prompt leaves in the context", *f.max_tokens, room);
    }
  } else if (default_max >= 0) {
    g.request.max_tokens = std::clamp(room, 1, default_max);
  } else {
    g.request.max_tokens = std::nullopt;
  }
  check_logit_bias(ctx, f.sampling);
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

// OpenAI's system_fingerprint: "fp_anelm_" + a hash of what decides the output for a given request
// and seed (the served model, its vocabulary and the context size), so it is stable for the process.
std::string system_fingerprint(ServerContext& ctx) {
  const std::string what = served_model_id(ctx) + "|" + std::to_string(ctx.tokenizer().vocab_size()) + "|" +
                           std::to_string(ctx.n_ctx()) + "|" + ctx.model().chat->origin();
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : what) h = (h ^ c) * 1099511628211ull;
  char buf[32];
  std::snprintf(buf, sizeof buf, "fp_anelm_%012llx", static_cast<unsigned long long>(h >> 16));
  return buf;
}

ResponseMeta meta_for(ServerContext& ctx, const char* prefix, const PreparedGeneration& g) {
  ResponseMeta m{make_response_id(prefix), unix_now(), served_model_id(ctx), g.include_usage, g.want_logprobs};
  m.system_fingerprint = system_fingerprint(ctx);
  return m;
}

// One /v1/completions prompt as token ids. With `system` (an anelm extension: qwen_ane's request
// shape) the prompt is a user turn under that system prompt, through the model's chat template;
// with `suffix` it is the text before the insertion point of a fill-in-the-middle prompt.
std::vector<int> completion_prompt(ServerContext& ctx, const CompletionRequest& r, const CompletionPrompt& p,
                                   const std::string& where) {
  const tok::Tokenizer& tk = ctx.tokenizer();
  for (int id : p.ids)
    if (id >= tk.vocab_size())
      throw invalid_field(where, "token id " + std::to_string(id) + " is out of range (vocab size " +
                                     std::to_string(tk.vocab_size()) + ")");
  if (!r.suffix.empty())  // code, not markup: special-token text in it stays text, as in llama.cpp's /infill
    return fim_prompt(tk, p.is_ids ? p.ids : tk.encode(p.text, /*parse_special=*/false), r.suffix);
  if (p.is_ids) return p.ids;
  std::string text = p.text;
  if (r.system) {
    const nlohmann::ordered_json messages = {{{"role", "system"}, {"content", *r.system}},
                                             {{"role", "user"}, {"content", p.text}}};
    text = ctx.model().chat->render(messages, nlohmann::ordered_json::array(), true, nlohmann::ordered_json::object());
    spdlog::debug("completion prompt with system ({} bytes): {}", text.size(), log_escape(text, 1 << 16));
  }
  std::vector<int> ids = tk.encode(text, /*parse_special=*/true);
  maybe_add_bos(tk, ids);
  return ids;
}

// response_format / grammar / tools -> the per-choice grammar constraint.
void constrain(ServerContext& ctx, PreparedGeneration& g, const GenerationFields& f, const ChatShape& chat) {
  const OutputConstraintSpec spec = output_constraint_for(f, chat, g.client_gone);  // a hang-up stops compiling
  g.make_constraint = constraint_factory(spec, ctx.model().constraint_vocab, chat.format, chat.starts_in_reasoning);
  // Stop strings never cut what the grammar constrains (see StopScope); a client's own GBNF keeps them.
  if (spec.grammar && f.grammar.empty())
    g.stop_scope = spec.trigger.empty() ? StopScope::kNowhere : StopScope::kOutsideToolCalls;
  if (spec.grammar) spdlog::debug("output grammar{}:\n{}", spec.trigger.empty() ? "" : " (after " + spec.trigger + ")", spec.gbnf);
}

// The rendered prompt of a chat request, logged at debug level so that users can see what was built.
std::string render_chat(ServerContext& ctx, const ChatRequest& r) {
  std::string prompt = ctx.model().chat->render_request(r);
  spdlog::debug("chat prompt ({} bytes): {}", prompt.size(), log_escape(prompt, 1 << 16));
  return prompt;
}

}  // namespace

HttpResponse handle_completions(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  CompletionRequest r = parse_completion_request(req.body, ctx.model().sampling);
  const tok::Tokenizer& tk = ctx.tokenizer();
  // Several prompts: one job per prompt and choice (choice index = prompt * n + i, as OpenAI). The
  // limits are computed for the longest prompt, so that every prompt's request is valid.
  std::vector<std::vector<int>> prompts;
  for (size_t i = 0; i < r.prompts.size(); ++i)
    prompts.push_back(completion_prompt(ctx, r, r.prompts[i], r.prompts.size() > 1 ? "prompt[" + std::to_string(i) + "]" : "prompt"));
  PreparedGeneration g = prepare_text_generation(ctx, r.gen, std::move(prompts), ctx.options().default_max_tokens, "prompt", req);
  auto echo_of = [&](const CompletionPrompt& p) { return p.is_ids ? tk.decode(p.ids, true) : p.text; };
  if (r.echo) g.echo_text = echo_of(r.prompts[0]);
  if (!g.prompts.empty())
    for (const CompletionPrompt& p : r.prompts) g.echo_texts.push_back(r.echo ? echo_of(p) : std::string());
  ResponseMeta meta = meta_for(ctx, "cmpl-", g);
  return run_generation(ctx, std::move(g), make_completion_serializer(std::move(meta)));
}

void maybe_add_bos(const tok::Tokenizer& tk, std::vector<int>& ids) {
  const auto& v = tk.vocab();
  if (v.add_bos && v.bos_id >= 0 && (ids.empty() || ids[0] != v.bos_id)) ids.insert(ids.begin(), v.bos_id);
}

PreparedGeneration prepare_text_generation(ServerContext& ctx, const GenerationFields& f, std::vector<int> prompt,
                                           int default_max, const char* prompt_param, const HttpRequest& req) {
  PreparedGeneration g = prepare(ctx, f, std::move(prompt), default_max, prompt_param);
  g.client_gone = req.client_gone;
  constrain(ctx, g, f, ChatShape{});
  g.log = req.log;
  return g;
}

// Several prompts: one job per prompt and choice (choice index = prompt * n + i). The limits are
// computed for the longest prompt, so that every prompt's request is valid.
PreparedGeneration prepare_text_generation(ServerContext& ctx, const GenerationFields& f,
                                           std::vector<std::vector<int>> prompts, int default_max,
                                           const char* prompt_param, const HttpRequest& req) {
  size_t longest = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string name = prompts.size() > 1 ? std::string(prompt_param) + "[" + std::to_string(i) + "]" : prompt_param;
    if (prompts[i].empty()) throw invalid_field(name, name + " is empty after tokenization");
    if (prompts[i].size() > prompts[longest].size()) longest = i;
  }
  PreparedGeneration g = prepare_text_generation(ctx, f, prompts[longest], default_max, prompt_param, req);
  g.request.prompt = prompts[0];
  if (prompts.size() > 1) g.prompts = std::move(prompts);
  return g;
}

ChatPromptTokens tokenize_chat_prompt(ServerContext& ctx, const ChatRequest& r) {
  const tok::Tokenizer& tk = ctx.tokenizer();
  ChatPromptTokens p{render_chat(ctx, r), {}};
  p.ids = tk.encode(p.text, /*parse_special=*/true);
  maybe_add_bos(tk, p.ids);
  return p;
}

PreparedGeneration prepare_chat_generation(ServerContext& ctx, const ChatRequest& r, const HttpRequest& req) {
  ChatPromptTokens tokens = tokenize_chat_prompt(ctx, r);
  const std::string& prompt = tokens.text;
  PreparedGeneration g = prepare(ctx, r.gen, std::move(tokens.ids), -1);
  const chat::ChatFormat& format = ctx.model().chat->format();
  const ChatShape shape{&format, &r, chat::prompt_opens_reasoning(prompt, format),
                        prompt_closes_reasoning(prompt, format)};
  g.client_gone = req.client_gone;
  constrain(ctx, g, r.gen, shape);
  chat::ParseOptions po;
  po.parse_tools = !r.tools.empty() && r.tool_choice.kind != ToolChoice::Kind::kNone;
  po.starts_in_reasoning = shape.starts_in_reasoning;
  po.parse_reasoning = format.reasoning != chat::ReasoningSyntax::kNone;
  // Qwen XML arguments are bare text: the tools' schemas say which values are numbers, objects, ...
  if (po.parse_tools && format.tools == chat::ToolSyntax::kQwenXml)
    po.tools = std::make_shared<const nlohmann::ordered_json>(r.tools);
  // id_seed stays 0: call ids are fresh on every request and choice even with a seed (an agent
  // loop with a fixed seed must not see the same id on every turn).
  g.make_parser = [prompt_owner = ctx.model().chat, po]() { return make_chat_output_parser(prompt_owner->format(), po); };
  // The markers the parser reads stay text (tool-call markers only when tools are parsed: without
  // them a control <|python_tag|> stays hidden, as llama-server does).
  chat::ChatFormat parsed = format;
  if (!po.parse_tools) parsed.tools = chat::ToolSyntax::kNone;
  g.keep_special = preserved_token_ids(ctx.tokenizer(), parsed, &ctx.model().preserved_tokens);
  g.client_gone = req.client_gone;
  g.log = req.log;
  return g;
}

HttpResponse handle_chat_completions(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  const ChatRequest r = parse_chat_request(req.body, ctx.model().sampling);
  PreparedGeneration g = prepare_chat_generation(ctx, r, req);
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
