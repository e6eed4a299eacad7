// Drives one generation from the HTTP side: admission, event collection, text assembly, output.
#include "server/generation.h"

#include <chrono>

#include "server/api_error.h"
#include "server/sse.h"

namespace anelm::server {

using Clock = std::chrono::steady_clock;

// ---- text -------------------------------------------------------------------------------------

TextAssembler::TextAssembler(const tok::Tokenizer& tokenizer, const std::vector<int>& context,
                             std::vector<std::string> stops)
    : decoder_(tokenizer, context, /*skip_special=*/true), stop_(std::move(stops)) {}

std::string TextAssembler::push(int id) {
  if (stop_.stopped()) return {};
  return stop_.push(decoder_.push(id));
}

std::string TextAssembler::finish() {
  if (stop_.stopped()) return {};
  std::string out = stop_.push(decoder_.flush());
  return out + stop_.flush();
}

const char* openai_finish_reason(engine::FinishReason r, bool stopped) {
  if (stopped) return "stop";
  return r == engine::FinishReason::kStop ? "stop" : "length";
}

namespace {

// The output state of one request, shared by the streaming and the non-streaming paths.
struct OutputState {
  OutputState(const tok::Tokenizer& t, const PreparedGeneration& g)
      : tok(t), text(t, g.request.prompt, g.stop), want_lp(g.request.top_logprobs > 0 || g.want_logprobs),
        offset(static_cast<int>(g.echo_text.size())) {}

  std::string on_token(const engine::TokenStep& step) {
    if (text.stopped()) return {};
    ++tokens_used;
    if (want_lp) {
      TokenLogprob lp{tok.token_bytes(step.id), step.logprob, {}, offset};
      for (const auto& [id, p] : step.top) lp.top.emplace_back(tok.token_bytes(id), p);
      lps.push_back(std::move(lp));
    }
    std::string delta = text.push(step.id);
    offset += static_cast<int>(delta.size());
    return delta;
  }
  std::span<const TokenLogprob> new_logprobs() {
    std::span<const TokenLogprob> s(lps.data() + lp_sent, lps.size() - lp_sent);
    lp_sent = lps.size();
    return s;
  }
  UsageInfo usage(const engine::GenerateResult& r) const {
    UsageInfo u;
    u.prompt_tokens = r.prompt_tokens;
    u.completion_tokens = text.stopped() ? tokens_used : static_cast<int>(r.ids.size());
    u.cached_tokens = r.cached_tokens;
    u.prompt_ms = r.prefill_ms;
    u.predicted_ms = r.decode_ms;
    return u;
  }

  const tok::Tokenizer& tok;
  TextAssembler text;
  bool want_lp;
  int offset;
  int tokens_used = 0;
  std::vector<TokenLogprob> lps;
  size_t lp_sent = 0;
};

ApiError event_error(const GenerationEvent& ev) {
  return to_api_error(std::make_exception_ptr(Error(ev.error_kind, ev.error)));
}

bool cancelled_by_server(const engine::GenerateResult& r, const OutputState& st) {
  return !st.text.stopped() && (r.finish == engine::FinishReason::kCancelled ||
                                r.finish == engine::FinishReason::kAborted);
}

std::shared_ptr<EventChannel> submit(ServerContext& ctx, PreparedGeneration& gen) {
  auto ch = std::make_shared<EventChannel>();
  switch (ctx.worker().try_submit(Job{gen.request, ch})) {
    case EngineWorker::Admit::kAccepted: return ch;
    case EngineWorker::Admit::kQueueFull:
      ctx.metrics().queue_rejections++;
      throw queue_full(ctx.options().retry_after_s);
    case EngineWorker::Admit::kStopped: break;
  }
  throw unavailable("the server is shutting down", ctx.options().retry_after_s);
}

// ---- non-streaming ----------------------------------------------------------------------------

HttpResponse collect(ServerContext& ctx, const PreparedGeneration& gen, EventChannel& ch,
                     const ResponseSerializer& ser) {
  OutputState st(ctx.tokenizer(), gen);
  std::string text = gen.echo_text;
  std::vector<GenerationEvent> evs;
  auto last_check = std::chrono::steady_clock::now();
  for (;;) {
    evs.clear();
    ch.wait_pop(evs, std::chrono::milliseconds(50));
    const auto now = std::chrono::steady_clock::now();
    if (gen.client_gone && now - last_check >= std::chrono::milliseconds(50)) {
      last_check = now;
      if (gen.client_gone()) {
        ch.cancel();  // the client hung up: free the engine within a token
        throw ApiError(499, "invalid_request_error", "the client closed the connection");
      }
    }
    for (const GenerationEvent& ev : evs) {
      if (ev.kind == GenerationEvent::Kind::kToken) {
        text += st.on_token(ev.step);
        if (st.text.stopped()) ch.cancel();  // stop string: free the engine now
        continue;
      }
      if (ev.kind == GenerationEvent::Kind::kError) throw event_error(ev);
      if (cancelled_by_server(ev.result, st))
        throw unavailable("the request was cancelled: the server is shutting down",
                          ctx.options().retry_after_s);
      text += st.text.finish();
      HttpResponse res;
      res.body = ser.body(text, openai_finish_reason(ev.result.finish, st.text.stopped()),
                          st.usage(ev.result), st.lps);
      return res;
    }
  }
}

// ---- streaming --------------------------------------------------------------------------------

struct StreamJob {
  PreparedGeneration gen;
  std::shared_ptr<EventChannel> channel;
  std::unique_ptr<ResponseSerializer> ser;
  int ping_s = 15;
};

// Ends the stream after the final event; returns nothing (the caller returns afterwards).
void finish_stream(StreamJob& job, OutputState& st, const GenerationEvent& ev, StreamSink& sink) {
  if (ev.kind == GenerationEvent::Kind::kError) {
    sink.write(sse_error(event_error(ev)));
    return;
  }
  if (cancelled_by_server(ev.result, st)) {
    sink.write(sse_error(unavailable("the request was cancelled: the server is shutting down", 1)));
    return;
  }
  std::string rest = st.text.finish();
  if (!rest.empty() && !sink.write(sse_data(job.ser->delta_chunk(rest, st.new_logprobs())))) return;
  const char* reason = openai_finish_reason(ev.result.finish, st.text.stopped());
  if (!sink.write(sse_data(job.ser->finish_chunk(reason)))) return;
  if (job.gen.include_usage && !sink.write(sse_data(job.ser->usage_chunk(st.usage(ev.result))))) return;
  sink.write(sse_done());
}

void stream_events(ServerContext& ctx, StreamJob& job, StreamSink& sink) {
  EventChannel& ch = *job.channel;
  OutputState st(ctx.tokenizer(), job.gen);
  auto send = [&](const std::string& payload) { return sink.write(sse_data(payload)); };
  bool ok = true;
  if (auto first = job.ser->start_chunk()) ok = send(*first);
  if (ok && !job.gen.echo_text.empty()) ok = send(job.ser->delta_chunk(job.gen.echo_text, {}));
  auto last_write = Clock::now();
  std::vector<GenerationEvent> evs;
  while (ok) {
    evs.clear();
    bool got = ch.wait_pop(evs, std::chrono::milliseconds(50));
    if (!sink.is_writable()) break;  // the client went away (also during prefill)
    if (!got) {
      if (Clock::now() - last_write > std::chrono::seconds(job.ping_s)) {
        ok = sink.write(sse_comment("ping"));
        last_write = Clock::now();
      }
      continue;
    }
    for (const GenerationEvent& ev : evs) {
      if (ev.kind != GenerationEvent::Kind::kToken) return finish_stream(job, st, ev, sink);
      std::string delta = st.on_token(ev.step);
      if (st.text.stopped()) ch.cancel();
      if (delta.empty()) continue;
      if (!(ok = send(job.ser->delta_chunk(delta, st.new_logprobs())))) break;
      last_write = Clock::now();
    }
  }
  ch.cancel();  // client gone: the worker stops this job within a token
}

}  // namespace

HttpResponse run_generation(ServerContext& ctx, PreparedGeneration gen,
                            std::unique_ptr<ResponseSerializer> serializer) {
  if (gen.request.prompt.empty()) throw invalid_field("prompt", "the prompt is empty after tokenization");
  ctx.model().engine->validate(gen.request);  // before queueing: a bad request costs no engine time
  auto channel = submit(ctx, gen);
  if (!gen.stream) return collect(ctx, gen, *channel, *serializer);
  auto job = std::make_shared<StreamJob>(StreamJob{std::move(gen), channel, std::move(serializer),
                                                   ctx.options().sse_ping_s});
  HttpResponse res;
  res.content_type = "text/event-stream";
  res.headers.emplace_back("Cache-Control", "no-cache");
  res.stream = [&ctx, job](StreamSink& sink) { stream_events(ctx, *job, sink); };
  return res;
}

}  // namespace anelm::server
