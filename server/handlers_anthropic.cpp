// POST /v1/messages and /v1/messages/count_tokens: the Anthropic Messages API over the chat flow.
#include <spdlog/spdlog.h>

#include "server/anthropic_api.h"
#include "server/api_error.h"
#include "server/chat_generation.h"
#include "server/generation.h"
#include "server/handlers.h"

namespace anelm::server {

namespace {

// Every failure on these routes in the API's own error shape, with the same HTTP status.
template <typename Fn>
HttpResponse with_anthropic_errors(const HttpRequest& req, Fn&& fn) {
  return with_error_body(req, anthropic_error_body, std::forward<Fn>(fn));
}

// Runs `step` on the conversation as sent (system turns at their place); a template that refuses
// a system turn after the start gets them merged into the first message instead.
template <typename Step>
auto with_system_fallback(MessagesRequest& m, Step&& step) {
  try {
    return step(m.chat);
  } catch (const ApiError& e) {
    if (!m.system_in_place || e.status() != 400 || e.param() != "messages" || !e.code().empty()) throw;
    spdlog::debug("chat template refused a system turn inside the conversation ({}): merged into the first", e.what());
    m.chat.messages = merge_system_messages(m.chat.messages);
    m.system_in_place = false;
    return step(m.chat);
  }
}

HttpResponse messages(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  MessagesRequest m = parse_messages_request(req.body, ctx.model().sampling);
  // The chat flow also refuses a prompt over the context ("prompt is too long (N tokens > M ...)",
  // which claude parses) and clamps max_tokens to the room left (claude asks for 32000, then 128000).
  PreparedGeneration g = with_system_fallback(m, [&](const ChatRequest& r) { return prepare_chat_generation(ctx, r, req); });
  MessagesMeta meta{make_response_id("msg_"), served_model_id(ctx), static_cast<int>(g.request.prompt.size())};
  return run_generation(ctx, std::move(g), make_messages_serializer(std::move(meta)));
}

HttpResponse count_tokens(ServerContext& ctx, const HttpRequest& req) {
  require_ready(ctx);
  MessagesRequest m = parse_messages_request(req.body, ctx.model().sampling);
  const ChatPromptTokens p = with_system_fallback(m, [&](const ChatRequest& r) { return tokenize_chat_prompt(ctx, r); });
  HttpResponse res;
  res.body = nlohmann::json{{"input_tokens", p.ids.size()}}.dump();
  return res;
}

}  // namespace

HttpResponse handle_messages(ServerContext& ctx, const HttpRequest& req) {
  return with_anthropic_errors(req, [&] { return messages(ctx, req); });
}

HttpResponse handle_count_tokens(ServerContext& ctx, const HttpRequest& req) {
  return with_anthropic_errors(req, [&] { return count_tokens(ctx, req); });
}

}  // namespace anelm::server
