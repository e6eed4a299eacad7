// Ollama's API over the chat, text and embedding flows: /api/chat, /api/generate, /api/embed,
// /api/embeddings, and the model listings /api/tags, /api/ps, /api/show, /api/version, /api/pull.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "engine/model_config.h"
#include "server/api_error.h"
#include "server/chat_generation.h"
#include "server/fim_prompt.h"
#include "server/generation.h"
#include "server/handlers.h"
#include "server/json_fields.h"
#include "server/json_body.h"
#include "server/ollama_api.h"

namespace anelm::server {

namespace {

using json = nlohmann::ordered_json;

// Every failure on these routes in the API's own error shape, with the same HTTP status.
template <typename Fn>
HttpResponse with_ollama_errors(const HttpRequest& req, Fn&& fn) {
  return with_error_body(req, ollama_error_body, std::forward<Fn>(fn));
}

HttpResponse json_response(const json& j) {
  HttpResponse r;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

// Ollama names are model:tag; the served id gets Ollama's default tag when it has none. Requests
// may name any model: the one loaded model answers, as on the OpenAI routes.
std::string ollama_name(ServerContext& ctx) {
  std::string id = served_model_id(ctx);
  const size_t slash = id.rfind('/');
  if (id.find(':', slash == std::string::npos ? 0 : slash) == std::string::npos) id += ":latest";
  return id;
}

std::string rfc3339(int64_t unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json details(ServerContext& ctx) {
  const ModelFileInfo& f = ctx.model().file;
  const std::string family = engine::arch_name(ctx.model().engine->config().arch);
  return {{"parent_model", ""}, {"format", f.format}, {"family", family}, {"families", json::array({family})},
          {"parameter_size", f.n_params > 0 ? human_parameter_count(f.n_params) : ""},
          {"quantization_level", f.quantization}};
}

json model_entry(ServerContext& ctx) {
  const ModelFileInfo& f = ctx.model().file;
  const std::string name = ollama_name(ctx);
  return {{"name", name}, {"model", name}, {"modified_at", rfc3339(f.modified_unix)}, {"size", f.size_bytes},
          {"digest", f.digest}, {"details", details(ctx)}};
}

json load_answer(ServerContext& ctx, bool chat) {
  json j = {{"model", ollama_name(ctx)}, {"created_at", ollama_timestamp()}};
  if (chat) j["message"] = {{"role", "assistant"}, {"content", ""}};
  else j["response"] = "";
  j["done"] = true;
  j["done_reason"] = "load";  // the model is loaded for as long as the server runs
  return j;
}

// Ollama keeps a conversation that outgrew the context by dropping its oldest turns (system
// messages and the last message stay), where the OpenAI routes refuse it; its clients (chat front
// ends that resend the whole history) rely on that. The fewest turns are dropped: a binary search
// over how many, each probe one render; the kept part starts at a user turn.
// Called once the whole conversation was refused as too long; false when nothing can be dropped.
bool fit_conversation(ServerContext& ctx, ChatRequest& r) {
  const nlohmann::ordered_json all = std::move(r.messages);  // each probe renders r with a cut of it
  std::vector<size_t> turns;  // indices of the droppable messages, oldest first
  for (size_t i = 0; i + 1 < all.size(); ++i)
    if (all[i].value("role", "") != "system") turns.push_back(i);
  auto without_first = [&](size_t k) {  // the conversation without the first k droppable messages
    nlohmann::ordered_json kept = nlohmann::ordered_json::array();
    for (size_t i = 0, t = 0; i < all.size(); ++i) {
      if (t < k && t < turns.size() && turns[t] == i) { ++t; continue; }
      kept.push_back(all[i]);
    }
    return kept;
  };
  auto fits = [&](size_t k) {
    r.messages = without_first(k);
    return static_cast<int64_t>(tokenize_chat_prompt(ctx, r).ids.size()) < ctx.n_ctx();
  };
  if (turns.empty()) {
    r.messages = all;
    return false;
  }
  size_t lo = 1, hi = turns.size();  // the answer is in [lo, hi]; hi may still not fit
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) hi = mid;
    else lo = mid + 1;
  }
  // Start at a user turn: no tool results without their call, no reply first (templates that
  // check the roles alternate refuse that).
  while (lo < turns.size() && all[turns[lo]].value("role", "") != "user") ++lo;
  spdlog::info("ollama chat: the {} oldest messages dropped to fit the context of {} tokens", lo, ctx.n_ctx());
  r.messages = without_first(lo);
  return true;
}

// `think` asked of a model whose template cannot think is a 400, as Ollama answers it (its
// capabilities, /api/show, leave out "thinking" then): the answer would not be what was asked.
void require_thinking(ServerContext& ctx, const nlohmann::ordered_json& kwargs) {
  const auto it = kwargs.find("enable_thinking");
  if (it != kwargs.end() && it->is_boolean() && it->get<bool>() &&
      ctx.model().chat->format().reasoning == chat::ReasoningSyntax::kNone) {
    throw invalid_field("think", "\"" + ollama_name(ctx) + "\" does not support thinking");
  }
}

HttpResponse chat(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  OllamaChatRequest r = parse_ollama_chat_request(req.body, ctx.model().sampling);
  if (r.load_only) return json_response(load_answer(ctx, true));
  require_thinking(ctx, r.chat.template_kwargs);
  PreparedGeneration g;
  try {
    g = prepare_chat_generation(ctx, r.chat, req);
  } catch (const ApiError& e) {
    if (e.code() != "context_length_exceeded" || !fit_conversation(ctx, r.chat)) throw;
    g = prepare_chat_generation(ctx, r.chat, req);
  }
  OllamaMeta meta;
  meta.model = ollama_name(ctx);
  meta.logprobs = g.want_logprobs;
  return run_generation(ctx, std::move(g), make_ollama_serializer(std::move(meta)));
}

// An earlier answer's `context` goes before the new prompt, as Ollama puts its text there (one BOS,
// the context's). The answer may then take what the context leaves.
void prepend_context(ServerContext& ctx, PreparedGeneration& g, const std::vector<int>& context) {
  const tok::Tokenizer& tk = ctx.tokenizer();
  for (size_t i = 0; i < context.size(); ++i)
    if (context[i] >= tk.vocab_size())
      throw invalid_field("context[" + std::to_string(i) + "]", "context[" + std::to_string(i) + "]: token id " +
                                                                 std::to_string(context[i]) + " is out of range (vocab size " +
                                                                 std::to_string(tk.vocab_size()) + ")");
  std::vector<int>& p = g.request.prompt;
  const int bos = tk.vocab().bos_id;
  if (bos >= 0 && !p.empty() && p[0] == bos && !context.empty()) p.erase(p.begin());
  p.insert(p.begin(), context.begin(), context.end());
  const int64_t room = static_cast<int64_t>(ctx.n_ctx()) - static_cast<int64_t>(p.size());
  if (room < 1)
    throw ApiError(400, "invalid_request_error",
                   "prompt is too long (" + std::to_string(p.size()) + " tokens with the context > " +
                       std::to_string(ctx.n_ctx() - 1) + " maximum)",
                   "context", "context_length_exceeded");
  if (g.request.max_tokens && *g.request.max_tokens > room) g.request.max_tokens = static_cast<int>(room);
}

HttpResponse generate(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  OllamaGenerateRequest r = parse_ollama_generate_request(req.body, ctx.model().sampling);
  if (r.load_only()) return json_response(load_answer(ctx, false));
  require_thinking(ctx, r.template_kwargs);
  const tok::Tokenizer& tk = ctx.tokenizer();
  OllamaMeta meta;
  meta.model = ollama_name(ctx);
  meta.chat = false;
  PreparedGeneration g;
  if (!r.suffix.empty()) {  // fill-in-the-middle: code, so special-token text stays text
    g = prepare_text_generation(ctx, r.gen, fim_prompt(tk, tk.encode(r.prompt, false), r.suffix), -1, "prompt", req);
  } else if (r.raw) {  // the prompt as the client wrote it, markup included
    std::vector<int> ids = tk.encode(r.prompt, /*parse_special=*/true);
    maybe_add_bos(tk, ids);
    g = prepare_text_generation(ctx, r.gen, std::move(ids), -1, "prompt", req);
  } else {  // a user turn (under `system`) through the model's chat template
    ChatRequest c;
    c.gen = r.gen;
    if (!r.system.empty()) c.messages.push_back({{"role", "system"}, {"content", r.system}});
    c.messages.push_back({{"role", "user"}, {"content", r.prompt}});
    c.template_kwargs = r.template_kwargs;
    g = prepare_chat_generation(ctx, c, req);
    prepend_context(ctx, g, r.context);
    meta.return_context = true;
    meta.context = g.request.prompt;
  }
  meta.logprobs = g.want_logprobs;
  return run_generation(ctx, std::move(g), make_ollama_serializer(std::move(meta)));
}

HttpResponse embed(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  const auto arrived = std::chrono::steady_clock::now();
  OllamaEmbedRequest r = parse_ollama_embed_request(req.body, req.path == "/api/embeddings");
  if (r.inputs.count() == 0) return json_response({{"model", ollama_name(ctx)}, {"embeddings", json::array()}});
  // /api/embed's vectors are unit length (as OpenAI's); the legacy route returns them as pooled.
  const EmbeddingsOutput out = compute_embeddings(ctx, req, r.inputs, r.truncate, /*normalize=*/!r.legacy);
  const auto row = [&](size_t i) {
    const float* v = out.vectors.data() + i * static_cast<size_t>(out.dims);
    return json(std::vector<float>(v, v + out.dims));
  };
  if (r.legacy) return json_response({{"embedding", row(0)}});
  json vectors = json::array();
  for (size_t i = 0; i < r.inputs.count(); ++i) vectors.push_back(row(i));
  const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - arrived);
  return json_response({{"model", ollama_name(ctx)}, {"embeddings", std::move(vectors)}, {"total_duration", took.count()},
                        {"load_duration", 0}, {"prompt_eval_count", out.prompt_tokens}});
}

// Ollama's "parameters" text: one "name value" line per default, and the context size (clients
// size their prompts from num_ctx).
std::string parameters_text(ServerContext& ctx) {
  const engine::SamplingParams& s = ctx.model().sampling;
  char buf[256];
  std::snprintf(buf, sizeof buf, "num_ctx %d\ntemperature %g\ntop_k %d\ntop_p %g\nmin_p %g\nrepeat_penalty %g", ctx.n_ctx(),
                s.temperature, s.top_k, s.top_p, s.min_p, s.repetition_penalty);
  return buf;
}

json capabilities(ServerContext& ctx) {
  json caps = json::array({"completion", "tools"});  // tools: the template's syntax, or the generic one
  if (ctx.model().chat->format().reasoning != chat::ReasoningSyntax::kNone) caps.push_back("thinking");
  if (ctx.model().infill_vocab) caps.push_back("insert");
  const engine::Pooling pooling = ctx.model().engine->config().pooling;
  if (pooling != engine::Pooling::kRank && (pooling != engine::Pooling::kNone || ctx.options().embeddings))
    caps.push_back("embedding");
  return caps;
}

HttpResponse show(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  const json body = parse_json_body(req.body, 16);
  for (const char* key : {"model", "name"})
    if (const json* m = field(body, key); m && !m->is_string()) throw invalid_field(key, std::string(key) + " must be a string");
  const engine::ModelConfig& c = ctx.model().engine->config();
  const std::string arch = engine::arch_name(c.arch);
  const ModelFileInfo& f = ctx.model().file;
  json info = {{"general.architecture", arch}, {"general.parameter_count", f.n_params}, {"general.name", c.name},
               // The served context (--ctx), not the trained one: what a client may fill.
               {arch + ".context_length", ctx.n_ctx()}, {arch + ".embedding_length", c.d_model},
               {arch + ".block_count", c.n_layers}, {arch + ".feed_forward_length", c.d_ff},
               {arch + ".attention.head_count", c.n_heads}, {arch + ".attention.head_count_kv", c.n_kv_heads},
               {arch + ".vocab_size", c.vocab_size}};
  return json_response({{"modelfile", "# served by anelm\nFROM " + ctx.options().model + "\n"},
                        {"parameters", parameters_text(ctx)},
                        {"template", ctx.model().chat->source()},
                        {"details", details(ctx)},
                        {"model_info", std::move(info)},
                        {"capabilities", capabilities(ctx)},
                        {"modified_at", rfc3339(f.modified_unix)}});
}

}  // namespace

HttpResponse handle_ollama_chat(ServerContext& ctx, const HttpRequest& req) {
  return with_ollama_errors(req, [&] { return chat(ctx, req); });
}

HttpResponse handle_ollama_generate(ServerContext& ctx, const HttpRequest& req) {
  return with_ollama_errors(req, [&] { return generate(ctx, req); });
}

HttpResponse handle_ollama_embed(ServerContext& ctx, const HttpRequest& req) {
  return with_ollama_errors(req, [&] { return embed(ctx, req); });
}

HttpResponse handle_ollama_show(ServerContext& ctx, const HttpRequest& req) {
  return with_ollama_errors(req, [&] { return show(ctx, req); });
}

HttpResponse handle_ollama_tags(ServerContext& ctx, const HttpRequest& req) {
  return with_ollama_errors(req, [&] {
    require_ready(ctx);
    return json_response({{"models", json::array({model_entry(ctx)})}});
  });
}

HttpResponse handle_ollama_ps(ServerContext& ctx, const HttpRequest& req) {
  return with_ollama_errors(req, [&] {
    require_ready(ctx);
    json m = model_entry(ctx);
    m.erase("modified_at");
    const engine::BackendStats& s = ctx.backend_stats();
    m["size"] = s.weight_bytes + s.kv_bytes;    // resident: weights and every slot's cache
    m["expires_at"] = "2318-01-01T00:00:00Z";   // loaded for as long as the server runs
    m["size_vram"] = 0;
    m["context_length"] = ctx.n_ctx();
    return json_response({{"models", json::array({std::move(m)})}});
  });
}

HttpResponse handle_ollama_version(ServerContext&, const HttpRequest& req) {
  return with_ollama_errors(req, [&] { return json_response({{"version", kOllamaApiVersion}}); });
}

// The served model is present: a pull of it (or of any name: requests may name any model) is done.
// One NDJSON line whether streamed or not: clients that stream the pull (codex --oss) read lines.
HttpResponse handle_ollama_pull(ServerContext& ctx, const HttpRequest& req) {
  return with_ollama_errors(req, [&] {
    require_ready(ctx);
    HttpResponse r = json_response({{"status", "success"}});
    r.body += "\n";
    return r;
  });
}

HttpResponse handle_ollama_unsupported(ServerContext&, const HttpRequest& req) {
  return with_ollama_errors(req, [&]() -> HttpResponse {
    throw ApiError(501, "not_supported_error",
                   req.path + " is not supported: this server serves the one model it was started with (--model)");
  });
}

}  // namespace anelm::server
